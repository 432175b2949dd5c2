/** Named limits of the runner (DESIGN.md principle 3: bounded everything). */

/** Default rounds of a task (`max_rounds`). */
export const DEFAULT_MAX_ROUNDS = 5;
/** Upper bound accepted for `max_rounds`. */
export const MAX_ROUNDS_LIMIT = 50;
/** Model calls inside one round (one `runToolLoop`). */
export const ROUND_MAX_MODEL_CALLS = 12;
/** Tool executions inside one round. */
export const ROUND_MAX_TOOL_CALLS = 30;
/** Tokens inside one round. */
export const ROUND_MAX_TOKENS = 400_000;
/** Tokens over the whole task (the budget stop). */
export const TASK_MAX_TOKENS = 1_500_000;
/** Wall time of one round's tool loop. */
export const ROUND_TIMEOUT_MS = 10 * 60 * 1000;
/** Default time limit of one DoD run (`definition_of_done.timeout_seconds`). */
export const DEFAULT_DOD_TIMEOUT_SECONDS = 300;
/** Largest accepted DoD time limit. */
export const MAX_DOD_TIMEOUT_SECONDS = 3600;
/** Capture cap of a DoD run and of `run_command` (head + tail kept). */
export const COMMAND_CAPTURE_BYTES = 256 * 1024;
/** Time limit of one `run_command`. */
export const TOOL_COMMAND_TIMEOUT_MS = 120_000;
/** Time limit of one git call made by the runner itself. */
export const GIT_TIMEOUT_MS = 60_000;
/** Characters of DoD output kept in `result.json` and sent to the model. */
export const OUTPUT_TAIL_CHARS = 4000;
/** Lines `read_file` returns at most per call. */
export const READ_MAX_LINES = 2000;
/** Bytes `read_file` reads at most; `write_file` accepts at most. */
export const FILE_MAX_BYTES = 1024 * 1024;
/** Bytes of each `read_context` file included in the prompt. */
export const READ_CONTEXT_MAX_BYTES = 32 * 1024;
/** Matches `search_code` returns at most. */
export const SEARCH_MAX_MATCHES = 200;
/** Time limit of the doctor's model reachability check. */
export const DOCTOR_HTTP_TIMEOUT_MS = 3000;
/** Prefix of the disposable worktree folders (under `os.tmpdir()`). */
export const WORKTREE_PREFIX = "ratchet-runner-";
/** Most `writable_paths` a spec may list (`ratchet-confine` takes at most 64 folders in all). */
export const MAX_WRITABLE_PATHS = 32;
