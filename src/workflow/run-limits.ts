/**
 * Named limits of workflow runs (the fast path). Documented in docs/steps.md ("Runs").
 */

/** Default time limit of one learned script in a run, in seconds (10 minutes). `--step-timeout` overrides it. */
export const DEFAULT_STEP_TIMEOUT_SECONDS = 10 * 60;
/** Largest `--step-timeout` accepted, in seconds (one day). */
export const MAX_STEP_TIMEOUT_SECONDS = 24 * 60 * 60;

/**
 * Capture cap of one script's output, in bytes, applied to stdout, stderr and the combined stream
 * separately (8 MiB). Beyond it the first and last halves are kept with a marker between them; the
 * ledger keeps the captured text as a blob and shows 8 KiB head + 8 KiB tail.
 */
export const STEP_MAX_CAPTURE_BYTES = 8 * 1024 * 1024;

/** Bytes of a failed script's stderr (or combined output) quoted in the step's error (its tail). */
export const ERROR_TAIL_BYTES = 2000;

/** Most validation issues quoted in a step's error line (all are kept in the ledger log). */
export const ERROR_MAX_ISSUES = 5;

/** Extra seconds a run's ledger lease lasts beyond the step's time limit. */
export const LEASE_MARGIN_SECONDS = 5 * 60;

/** Successful runs a step needs before `workflow config --mode learn_code` promotes it without `--force`. */
export const PROMOTION_MIN_SUCCESSES = 10;

/**
 * Lines of the tool bridge's log (one per call, plus MCP server events) kept in one step's ledger
 * log. Beyond it the count of the lines left out is noted.
 */
export const BRIDGE_LOG_MAX_LINES = 500;

/** How often a running run looks for a cancel request in the store (`ratchet runs cancel`). */
export const CANCEL_POLL_MS = 200;

/** How long `runs cancel` waits for the running process to close a cancelled run. */
export const CANCEL_WAIT_MS = 10_000;
