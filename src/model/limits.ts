/**
 * Named limits of the model layer: the client's time limit and retries, and the tool loop's
 * budgets. Documented in docs/models.md; changed on purpose.
 */

/** Default time limit of one `complete()` call, retries and their waits included, in milliseconds. */
export const DEFAULT_MODEL_TIMEOUT_MS = 5 * 60 * 1000;
/**
 * Longest time limit a timer can express, in milliseconds (2^31 - 1). Larger values are refused:
 * Node fires longer timers immediately.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Default attempts of one `complete()` call (the first one and the retries). */
export const DEFAULT_MAX_ATTEMPTS = 3;
/** Most attempts a caller may configure. */
export const MAX_ATTEMPTS_LIMIT = 10;
/** Wait before the first retry, in milliseconds; it doubles on each later retry. */
export const RETRY_BASE_DELAY_MS = 1000;
/** Longest wait between two attempts computed by backoff, in milliseconds. */
export const RETRY_MAX_DELAY_MS = 30_000;
/**
 * Longest `Retry-After` honoured, in milliseconds. A server that asks for a longer wait fails the
 * call (`rate_limited`, with `retryAfterMs`) instead of holding it.
 */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Default most rounds (model calls) of one tool loop. */
export const DEFAULT_LOOP_MAX_ROUNDS = 25;
/** Default most tool executions of one tool loop (the built-in `finish` is not counted). */
export const DEFAULT_LOOP_MAX_TOOL_CALLS = 100;
/** Default token budget (input + output, all rounds) of one tool loop. */
export const DEFAULT_LOOP_MAX_TOKENS = 500_000;
/** Default time limit of one tool loop, in milliseconds. */
export const DEFAULT_LOOP_TIMEOUT_MS = 30 * 60 * 1000;
/** The loop stops with `no_progress` when this many rounds in a row make the same tool calls. */
export const NO_PROGRESS_ROUNDS = 3;
/**
 * Bytes of a tool result kept at the head and at the tail when a result is cut before it is sent
 * to the model (the marker says how much was left out).
 */
export const TOOL_RESULT_HEAD_BYTES = 16 * 1024;
export const TOOL_RESULT_TAIL_BYTES = 16 * 1024;
/** Longest provider error text kept in a {@link ModelError} message (the rest is cut). */
export const MAX_ERROR_DETAIL_CHARS = 2000;
