/** Named limits of the HTTP server. */

/** Default bind address: only this machine can connect. */
export const DEFAULT_HOST = "127.0.0.1";
/** Default port of `ratchet serve`. */
export const DEFAULT_PORT = 8765;
/** Largest request body in bytes (a plan with the most steps fits with room to spare). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Default and largest page size of list endpoints. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;
/** Rows one SSE catch-up query reads at a time. */
export const SSE_BATCH = 1000;
/** Frames a slow SSE client may have queued before it is dropped (it resumes with Last-Event-ID). */
export const SSE_MAX_QUEUED = 10_000;
/** Comment frame sent to idle SSE clients so proxies keep the connection. */
export const SSE_KEEPALIVE_MS = 15_000;
/** The shared watcher's fallback timer for file systems without change notifications. */
export const WATCH_FALLBACK_MS = 1000;
/** Coalesces a burst of WAL changes into one read of the events table. */
export const WATCH_DEBOUNCE_MS = 5;
/** Bytes of random bearer token generated when `--token` is not given. */
export const TOKEN_BYTES = 32;
/** Lines of a runner task's events.jsonl returned by the task route. */
export const RUNNER_EVENTS_TAIL = 200;
/** Largest file (patch, diff, script) the file routes return. */
export const MAX_FILE_BYTES = 8 * 1024 * 1024;
/**
 * The fallback read of the events table on PostgreSQL, where `LISTEN` wakes readers at once: it
 * only covers a notification lost between reconnects (`RATCHET_EVENTS_FALLBACK_MS` overrides it).
 */
export const PG_WAKE_FALLBACK_MS = 5000;
/** First and largest wait before the event listener reconnects (doubling in between). */
export const PG_LISTEN_BACKOFF_MS = 100;
export const PG_LISTEN_BACKOFF_MAX_MS = 5000;
/** How long the event listener's connection attempt may take. */
export const PG_LISTEN_CONNECT_TIMEOUT_MS = 10_000;
/** How far a webhook's `X-Ratchet-Timestamp` may be from the server's clock (replay window). */
export const WEBHOOK_WINDOW_SECONDS = 300;
/** Accepted webhook signatures remembered against replays (per server process). */
export const WEBHOOK_REPLAY_MAX = 10_000;
