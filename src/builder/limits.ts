/** Named bounds of the Builder and of model-driven steps (docs/builder.md lists them). */

/** Repair iterations after the first attempt, each a fresh agent (the spec's 3). */
export const MAX_REPAIR_ITERATIONS = 3;
/** Attempts in plain `code_exec` once the repairs are exhausted (an authoring aid; nothing saved). */
export const CODE_EXEC_FALLBACK_ATTEMPTS = 1;
/** Rounds (model calls) of one Builder agent. */
export const AGENT_MAX_ROUNDS = 20;
/** Tool executions of one Builder agent. */
export const AGENT_MAX_TOOL_CALLS = 60;
/** Tokens of one Builder agent (input + output). */
export const AGENT_MAX_TOKENS = 400_000;
/** Wall time of one Builder agent, in milliseconds. */
export const AGENT_TIMEOUT_MS = 15 * 60 * 1000;
/** Rounds of one sub-agent called by an orchestrator's `call_sub_agent`. */
export const SUB_AGENT_MAX_ROUNDS = 10;
/** Wall time of one sub-agent, in milliseconds. */
export const SUB_AGENT_TIMEOUT_MS = 5 * 60 * 1000;
/** Characters of the last output kept at the head and at the tail in repair feedback. */
export const FEEDBACK_OUTPUT_HEAD_CHARS = 2000;
export const FEEDBACK_OUTPUT_TAIL_CHARS = 2000;
/** Largest file the Builder's file tools read or write, in bytes. */
export const TOOL_FILE_MAX_BYTES = 512 * 1024;
/** Lines `read_file` returns at most. */
export const TOOL_READ_MAX_LINES = 2000;
/** Characters of the shared skill notes (`learnings/_global/SKILL.md`) put into a prompt. */
export const SKILL_NOTES_MAX_CHARS = 8000;
/** Characters one `append_skill_note` call may add. */
export const SKILL_NOTE_MAX_CHARS = 2000;
/** Time limit of one tool call to the bridge from a model tool, in milliseconds. */
export const BRIDGE_CALL_TIMEOUT_MS = 60_000;
/** Largest file of `code/` the save-back keeps (main.py included), in bytes; a larger one refuses the save. */
export const SAVE_FILE_MAX_BYTES = 1024 * 1024;
/** Files of `code/` the save-back keeps at most (main.py included); more refuse the save. */
export const SAVE_MAX_FILES = 64;
/** Bytes of all the files the save-back keeps together; more refuse the save. */
export const SAVE_TOTAL_MAX_BYTES = 4 * 1024 * 1024;
/** Entries of `code/` a snapshot looks at (saved or not); a folder with more refuses the save. */
export const SAVE_SCAN_MAX_ENTRIES = 4096;
