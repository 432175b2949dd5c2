/**
 * Named limits. Every bound Ratchet enforces is a constant here (or in a module's own `limits.ts`),
 * documented in docs/ and changed on purpose.
 */

/** Bytes of a log kept at the head when a log is cut for display. */
export const LOG_HEAD_BYTES = 8 * 1024;
/** Bytes of a log kept at the tail when a log is cut for display. */
export const LOG_TAIL_BYTES = 8 * 1024;
/** A log entry longer than this is cut (head + marker + tail) in the row; the full text goes to a blob. */
export const LOG_INLINE_MAX_BYTES = LOG_HEAD_BYTES + LOG_TAIL_BYTES;

/** Deepest deviation level allowed (top-level steps are depth 0; `D.1.1.1` is depth 3). */
export const MAX_DEPTH = 3;
/** Default revision budget of a plan. */
export const DEFAULT_MAX_REVISIONS = 5;

/** Default lease of a started step, in seconds. Renewed by `heartbeat` and by `step run`. */
export const DEFAULT_LEASE_SECONDS = 15 * 60;
/** Largest lease a caller may ask for, in seconds (one day). */
export const MAX_LEASE_SECONDS = 24 * 60 * 60;

/** Default time limit of a command run by `step run`, in seconds. */
export const DEFAULT_STEP_RUN_TIMEOUT_SECONDS = 60 * 60;
/** Largest time limit a caller may ask for, in seconds. */
export const MAX_STEP_RUN_TIMEOUT_SECONDS = 24 * 60 * 60;
/** Most bytes of combined output a command may produce before its capture is capped (full-output blob). */
export const MAX_CAPTURE_BYTES = 64 * 1024 * 1024;

/** SQLite busy timeout, in milliseconds: how long a writer waits for another writer. */
export const SQLITE_BUSY_TIMEOUT_MS = 30_000;
/**
 * Page size of a newly created store. Every commit writes each page it touched to the WAL, and a
 * step transition touches about four; 1 KiB pages write a quarter of the bytes of SQLite's 4 KiB
 * default (bench/ledger (a): about +20%). Existing stores keep the page size they were created with.
 */
export const SQLITE_PAGE_SIZE = 1024;
/** WAL size that triggers an automatic checkpoint (SQLite's default is 1,000 pages: 4 MiB at 4 KiB). */
export const SQLITE_WAL_CHECKPOINT_BYTES = 8 * 1024 * 1024;

/** Largest JSON/YAML input file accepted by a write flow. */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;
/** Most steps in one published plan (and sub-steps in one deviation). */
export const MAX_STEPS_PER_PLAN = 500;
/** Longest title of a step. */
export const MAX_TITLE_CHARS = 500;
/**
 * Longest free text field, in characters (UTF-16 units): goal, summary, reason, justification,
 * description, skill source, `agent_input`, `agent_output`, a `step run` command.
 */
export const MAX_TEXT_CHARS = 64 * 1024;
/**
 * Longest log text, in characters: `append-log`'s `text` and every `log_context`. Logs hold raw
 * output (stored cut, the full text in a blob), so they get more room than prose, and still less
 * than {@link MAX_INPUT_BYTES}.
 */
export const MAX_LOG_TEXT_CHARS = 4 * 1024 * 1024;
/** Longest identifier field (step, plan, project ids), in characters. */
export const MAX_ID_CHARS = 300;
/** Longest path field (`cwd` of `run-step`), in characters (Linux PATH_MAX). */
export const MAX_PATH_CHARS = 4096;
/** Longest metric unit, in characters. */
export const MAX_UNIT_CHARS = 100;
