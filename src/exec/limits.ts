/**
 * Named limits of the process runner. Every bound `exec/` enforces is a constant here (the capture
 * cap itself is {@link MAX_CAPTURE_BYTES} in `core/`, shared with the ledger).
 */

/** Default time limit of one process run, in milliseconds (10 minutes). */
export const DEFAULT_EXEC_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * Longest time limit a timer can express, in milliseconds (2^31 - 1, about 24.8 days). Larger
 * `timeoutMs` values are clamped to this: Node fires longer timers immediately.
 */
export const MAX_EXEC_TIMEOUT_MS = 2_147_483_647;

/** Default wait between SIGTERM and SIGKILL when a process group is killed, in milliseconds. */
export const DEFAULT_KILL_GRACE_MS = 2000;

/**
 * After the direct child exits, how long to wait for its stdout/stderr to close, in milliseconds.
 * A grandchild that keeps the pipes open past this is killed with the rest of the group and the run
 * resolves with what was captured so far.
 */
export const STREAM_CLOSE_GRACE_MS = 500;

/**
 * After SIGKILL, how long to wait for the OS to report the exit before the run resolves anyway,
 * in milliseconds. Only reached when a process cannot die (e.g. stuck in uninterruptible I/O).
 */
export const POST_KILL_WAIT_MS = 5000;

/** Time limit of one sandbox or tool probe (`bwrap … true`, `python3 --version`), in milliseconds. */
export const PROBE_TIMEOUT_MS = 10_000;

/**
 * How often a finished run checks whether the leftovers of its process group are gone, in
 * milliseconds (only while leftovers exist: a parent cannot wait for non-children).
 */
export const DRAIN_POLL_MS = 20;
