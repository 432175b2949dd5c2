/** Opens the workspace's store and ledger for a command, and closes them after. */
import { Ledger } from "../ledger/index.js";
import { BlobStore, envDb, resolveWorkspace, SqliteStore, type Workspace } from "../store/index.js";

export interface GlobalOptions {
  db?: string;
}

export interface CommandContext {
  workspace: Workspace;
  store: SqliteStore;
  blobs: BlobStore;
  ledger: Ledger;
}

export function openContext(opts: GlobalOptions): CommandContext {
  const workspace = resolveWorkspace({ ...(opts.db ? { db: opts.db } : {}) });
  // A --db / RATCHET_DB (ORCH_DB) path may name a new file: create it; a found workspace already exists.
  const store = SqliteStore.open(workspace.dbPath, { create: Boolean(opts.db ?? envDb()) });
  const blobs = new BlobStore(workspace.blobsDir);
  return { workspace, store, blobs, ledger: new Ledger({ store, blobs }) };
}

/** Runs `fn` with an open context and always closes the store. */
export async function withContext<T>(
  opts: GlobalOptions,
  fn: (ctx: CommandContext) => T | Promise<T>,
): Promise<T> {
  const ctx = openContext(opts);
  try {
    return await fn(ctx);
  } finally {
    ctx.store.close();
  }
}
