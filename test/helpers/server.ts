/**
 * A server over a fresh temp workspace for tests: the real store, ledger and app, called in-process
 * (`req`) or listening on an ephemeral loopback port (`listen`).
 */
import { cpSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createServerApp,
  openServerContext,
  type ServerApp,
  type ServerContext,
  startServer,
} from "../../src/server/index.js";
import { initWorkspace, SqliteStore, type Workspace } from "../../src/store/index.js";
import { ROOT } from "./cli.js";

export const TOKEN = "test-token-0123456789abcdef";

/** A SQLite fixture's context: its store is the SQLite one (tests read the handle directly). */
export type SqliteServerContext = ServerContext & { store: SqliteStore };

export interface ServerFixture<C extends ServerContext = SqliteServerContext> {
  dir: string;
  workspace: Workspace;
  ctx: C;
  app: ServerApp;
  runnerDir: string;
  /** The hello example copied into the temp folder. */
  helloDir: string;
  req(
    method: string,
    path: string,
    opts?: { body?: unknown; raw?: string; token?: string | null; headers?: Record<string, string> },
  ): Promise<Response>;
  dispose(): void;
}

export function makeServerFixture(opts: { readOnly?: boolean } = {}): ServerFixture {
  return serverFixture(opts) as ServerFixture;
}

/**
 * The same fixture over a PostgreSQL database (`url`, e.g. from `cluster.createDatabase()`): the
 * workspace folder holds only the config; every row lives in the database.
 */
export function makePgServerFixture(
  url: string,
  opts: { readOnly?: boolean } = {},
): ServerFixture<ServerContext> {
  return serverFixture({ ...opts, storeUrl: url });
}

function serverFixture(opts: { readOnly?: boolean; storeUrl?: string }): ServerFixture<ServerContext> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-server-")));
  const init = initWorkspace(dir).workspace;
  // A PostgreSQL workspace names its store in config.json, so `bin/ratchet.js` run in `dir` finds it.
  if (opts.storeUrl)
    writeFileSync(join(init.dir, "config.json"), JSON.stringify({ store: { url: opts.storeUrl } }));
  const workspace: Workspace = opts.storeUrl
    ? { ...init, dbPath: opts.storeUrl, storeUrl: opts.storeUrl }
    : init;
  if (!opts.storeUrl) SqliteStore.open(workspace.dbPath, { create: true }).close();
  const helloDir = join(dir, "flows", "hello");
  cpSync(join(ROOT, "examples", "workflows", "hello"), helloDir, { recursive: true });
  const runnerDir = join(dir, "runner-out");
  const ctx = openServerContext({ workspace, runnerDirs: [runnerDir], workflows: [helloDir] });
  const app = createServerApp({ ctx, token: TOKEN, readOnly: opts.readOnly === true });
  return {
    dir,
    workspace,
    ctx,
    app,
    runnerDir,
    helloDir,
    req(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const token = o.token === undefined ? TOKEN : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      const body = o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
      if (body !== undefined) headers["content-type"] = "application/json";
      return Promise.resolve(app.request(path, { method, headers, ...(body !== undefined ? { body } : {}) }));
    },
    dispose() {
      ctx.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A listening server over a fresh temp workspace. */
export async function listenFixture() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-serve-")));
  const { workspace } = initWorkspace(dir);
  SqliteStore.open(workspace.dbPath, { create: true }).close();
  const server = await startServer({ workspace, port: 0, token: TOKEN });
  return {
    dir,
    workspace,
    server,
    async dispose() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
