/**
 * How a provenance area reaches its tables: through the store's SQL door (`store.sql`, portable
 * statements on SQLite and PostgreSQL) and inside the store's write transaction (`store.tx`), so
 * provenance rows commit in the same transaction as the ledger's. Any `Store` is a {@link SqlHome};
 * the prompt hook builds a small one over its own SQLite connection.
 */
import type { SqlPort } from "../store/sql.js";

/** The two things a provenance area needs of a store: its SQL door and its write transaction. */
export interface SqlHome {
  readonly sql: SqlPort;
  /** Runs `fn` in one write transaction; nested calls join the outer one. */
  tx<T>(fn: () => T): T;
}

/**
 * Runs `fn` in a savepoint of the open write transaction: a throw rolls back only what `fn` wrote
 * (and, on PostgreSQL, clears the aborted state so the transaction goes on). Same statements on
 * both stores.
 * @throws Error when no write transaction is open.
 */
export function inSavepoint<T>(sql: SqlPort, name: string, fn: () => T): T {
  if (!sql.inTransaction) throw new Error(`savepoint ${name} needs an open write transaction`);
  sql.run(`SAVEPOINT ${name}`);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    sql.run(`ROLLBACK TO SAVEPOINT ${name}`);
    sql.run(`RELEASE SAVEPOINT ${name}`);
    throw e;
  }
  sql.run(`RELEASE SAVEPOINT ${name}`);
  return result;
}
