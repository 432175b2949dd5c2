/**
 * What the routes share: the store, blobs and ledger of one workspace, the run tables, the event
 * hub, and the folders the server may read runner tasks and workflows from. Built once per server.
 */
import { dirname } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { Ledger } from "../ledger/index.js";
import { type Blobs, blobsOf, openStore, type Store, type Workspace } from "../store/index.js";
import type { ThreadService } from "../threads/index.js";
import { type RunStore, runStoreOf } from "../workflow/index.js";
import { EventHub } from "./event-hub.js";

/** Options of {@link openServerContext}. Only `workspace` is required. */
export interface ServerContextOptions {
  workspace: Workspace;
  /** Runner output folders whose tasks the server shows. Default: none. */
  runnerDirs?: readonly string[];
  /** Workflow files or folders the server shows besides those found in the run tables. */
  workflows?: readonly string[];
  /**
   * Builds the thread service over the server's store (called once, on first use: the MCP thread
   * tools). Default: none, and those tools answer `not_found` naming threads.
   */
  threads?: (store: Store, workspaceDir: string) => ThreadService;
}

export interface ServerContext {
  workspace: Workspace;
  store: Store;
  blobs: Blobs;
  ledger: Ledger;
  runs: RunStore;
  hub: EventHub;
  runnerDirs: readonly string[];
  workflows: readonly string[];
  /** Runs started through this server, cancelled when it closes. */
  active: Set<AbortController>;
  /** The thread service. @throws `not_found` when the server was started without one. */
  threads(): ThreadService;
  close(): void;
}

export function openServerContext(opts: ServerContextOptions): ServerContext {
  const store = openStore(opts.workspace, { create: true, checkpoint: "background" });
  const blobs = blobsOf(opts.workspace, store);
  const ledger = new Ledger({ store, blobs });
  const hub = new EventHub(
    store,
    opts.workspace.storeUrl
      ? { storeUrl: opts.workspace.storeUrl }
      : { watchDir: dirname(opts.workspace.dbPath) },
  );
  const active = new Set<AbortController>();
  let threads: ThreadService | undefined;
  return {
    workspace: opts.workspace,
    store,
    blobs,
    ledger,
    runs: runStoreOf(store),
    hub,
    runnerDirs: opts.runnerDirs ?? [],
    workflows: opts.workflows ?? [],
    active,
    threads() {
      if (!opts.threads)
        throw new RatchetError(ErrorCode.NotFound, "this server was started without threads", {
          field: "thread_id",
        });
      threads ??= opts.threads(store, opts.workspace.dir);
      return threads;
    },
    close() {
      for (const a of active) a.abort();
      hub.close();
      store.close();
    },
  };
}
