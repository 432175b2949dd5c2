/**
 * How a provenance area reaches its tables from a ledger flow: the ledger holds the `Store`
 * contract; the provenance areas keep their own store interfaces, implemented on SQLite over the
 * same database file, so their rows commit in the same transaction as the ledger's.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import { SqliteStore, type Store } from "../store/index.js";

/** The SQLite store behind `store`, or a clear refusal when the store has no provenance tables. */
export function sqliteOf(store: Store): SqliteStore {
  if (store instanceof SqliteStore) return store;
  throw new RatchetError(
    ErrorCode.InvalidValue,
    "provenance needs the SQLite store; this store has no provenance tables",
  );
}
