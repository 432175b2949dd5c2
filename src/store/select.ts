/**
 * Which store a workspace uses: the SQLite file (default) or PostgreSQL (`Workspace.storeUrl`).
 * Every area reaches its tables through the store: the ledger (`Store`), the runs area
 * (`runStoreOf`), blobs (`blobsOf`) and the rest (threads, provenance, the server) through the one
 * SQL door `store.sql`. Only the runner and the Builder still refuse PostgreSQL (`sqliteOnly`).
 */
import { BlobStore, type Blobs, DbBlobStore } from "./blobs.js";
import { PgStore } from "./postgres/pg-store.js";
import { PgRunStore } from "./postgres/run-store.js";
import { isPostgresUrl } from "./postgres/url.js";
import type { RunStore } from "./runs.js";
import { SqliteRunStore } from "./sqlite/run-store.js";
import { type CheckpointMode, SqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./types.js";
import type { Workspace } from "./workspace.js";

/** True when `pathOrUrl` names a PostgreSQL store. */
export const isPostgresStore = (pathOrUrl: string | undefined): boolean => isPostgresUrl(pathOrUrl);

/**
 * Opens the ledger store of a workspace: PostgreSQL when it names one, else its SQLite file
 * (created when `create`). `checkpoint` is the SQLite file's ({@link SqliteStore.open}).
 * @throws workspace_not_found when the file or the server cannot be reached.
 */
export function openStore(
  ws: Workspace,
  opts: { create?: boolean; checkpoint?: CheckpointMode; log?: (line: string) => void } = {},
): Store {
  if (ws.storeUrl) return PgStore.open(ws.storeUrl);
  return SqliteStore.open(ws.dbPath, opts);
}

const runStores = new WeakMap<Store, RunStore>();

/**
 * The runs area of an open store (one per store, so its statements are prepared once; a fresh one
 * when `now` — a test clock — is given).
 * @throws Error for a store of neither kind.
 */
export function runStoreOf(store: Store, now?: () => string): RunStore {
  if (now) return newRunStore(store, now);
  let r = runStores.get(store);
  if (!r) {
    r = newRunStore(store);
    runStores.set(store, r);
  }
  return r;
}

function newRunStore(store: Store, now?: () => string): RunStore {
  if (store instanceof SqliteStore) return new SqliteRunStore(store, now);
  if (store instanceof PgStore) return new PgRunStore(store, now);
  throw new Error("runStoreOf: the store is neither SQLite nor PostgreSQL");
}

/**
 * Where a store's blobs live: the `blobs` table of a PostgreSQL store (every machine reads them),
 * else the workspace's `blobs/` folder.
 */
export function blobsOf(ws: Pick<Workspace, "blobsDir">, store: Store): Blobs {
  return store instanceof PgStore ? new DbBlobStore(store) : new BlobStore(ws.blobsDir);
}
