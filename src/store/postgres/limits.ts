/** Bounds of the PostgreSQL store (STYLE §10: everything long is bounded). */

/**
 * `statement_timeout` of every session: a statement — including the wait for the workspace write
 * lock — that runs longer fails with SQLSTATE 57014. The same bound as SQLite's busy timeout.
 */
export const PG_STATEMENT_TIMEOUT_MS = 30_000;

/**
 * `idle_in_transaction_session_timeout`: a session that sits inside a transaction this long without
 * a statement (a stopped or hung process) is ended by the server, which releases its write lock.
 * Ledger transactions run synchronous code between statements, so they are never idle this long.
 */
export const PG_IDLE_IN_TX_TIMEOUT_MS = 60_000;

/** How long connecting may take (TCP, TLS, authentication). */
export const PG_CONNECT_TIMEOUT_MS = 10_000;

/**
 * How much longer than its statement timeout the calling thread waits for the bridge's worker
 * before it declares the worker dead (the worker's own timers fire first in every live case).
 */
export const PG_BRIDGE_WAIT_MARGIN_MS = 5_000;
