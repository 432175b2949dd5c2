/**
 * Which store a workspace uses: the SQLite file (default) or PostgreSQL (`Workspace.storeUrl`).
 * Only the ledger runs on both today; runs, threads, the server and provenance still run SQL on
 * the SQLite handle and refuse a PostgreSQL workspace with `sqliteOnly` (refusal.ts).
 */
import { PgStore } from "./postgres/pg-store.js";
import { isPostgresUrl } from "./postgres/url.js";
import { SqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./types.js";
import type { Workspace } from "./workspace.js";

/** True when `pathOrUrl` names a PostgreSQL store. */
export const isPostgresStore = (pathOrUrl: string | undefined): boolean => isPostgresUrl(pathOrUrl);

/**
 * Opens the ledger store of a workspace: PostgreSQL when it names one, else its SQLite file
 * (created when `create`).
 * @throws workspace_not_found when the file or the server cannot be reached.
 */
export function openStore(ws: Workspace, opts: { create?: boolean } = {}): Store {
  if (ws.storeUrl) return PgStore.open(ws.storeUrl);
  return SqliteStore.open(ws.dbPath, opts);
}
