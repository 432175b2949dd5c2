/** Opens the workspace's store and ledger for a command, and closes them after. */
import { mkdirSync } from "node:fs";
import { Ledger } from "../ledger/index.js";
import {
  type Blobs,
  blobsOf,
  envDb,
  openStore,
  resolveWorkspace,
  type Store,
  type Workspace,
} from "../store/index.js";

export interface GlobalOptions {
  db?: string;
}

/** The context of a command that runs on either store (the ledger: plans, steps, events, …). */
export interface LedgerContext {
  workspace: Workspace;
  store: Store;
  blobs: Blobs;
  ledger: Ledger;
}

/** Opens a ledger context on the workspace's store, SQLite or PostgreSQL. */
export function openLedgerContext(opts: GlobalOptions): LedgerContext {
  const workspace = resolveWorkspace({ ...(opts.db ? { db: opts.db } : {}) });
  // With PostgreSQL the local folder holds only blobs and run temp folders; it may not exist yet.
  if (workspace.storeUrl) mkdirSync(workspace.dir, { recursive: true });
  const store = openStore(workspace, { create: Boolean(opts.db ?? envDb()) });
  const blobs = blobsOf(workspace, store);
  return { workspace, store, blobs, ledger: new Ledger({ store, blobs }) };
}

async function using<C extends LedgerContext, T>(ctx: C, fn: (ctx: C) => T | Promise<T>): Promise<T> {
  try {
    return await fn(ctx);
  } finally {
    ctx.store.close();
  }
}

/** Runs `fn` with an open ledger context (either store) and always closes the store. */
export async function withLedgerContext<T>(
  opts: GlobalOptions,
  fn: (ctx: LedgerContext) => T | Promise<T>,
): Promise<T> {
  return using(openLedgerContext(opts), fn);
}
