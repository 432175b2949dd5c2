/**
 * `ratchet serve` and `ratchet mcp`. Thin: parse flags, start the server (or the stdio MCP server)
 * over the workspace, run until SIGINT/SIGTERM (or stdin closes), close.
 */
import { resolve } from "node:path";
import type { Hono } from "hono";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import type { RouteGroup } from "../server/index.js";
import { openStore, resolveWorkspace, type Store } from "../store/index.js";
import type { ThreadService } from "../threads/index.js";
import type { GlobalOptions } from "./context.js";
import { err, out } from "./io.js";

export interface ServeOptions extends GlobalOptions {
  host?: string;
  port?: string;
  token?: string;
  readOnly?: boolean;
  runnerDir?: string[];
  workflow?: string[];
  quiet?: boolean;
}

function parsePort(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new RatchetError(ErrorCode.Usage, `--port must be a whole number from 0 to 65535 (got ${raw})`, {
      field: "port",
    });
  return n;
}

function workspaceOf(opts: GlobalOptions) {
  const workspace = resolveWorkspace({ ...(opts.db ? { db: opts.db } : {}) });
  openStore(workspace, { create: true }).close(); // migrate (and reach a PostgreSQL server) before serving
  return workspace;
}

function untilSignal(): Promise<void> {
  return new Promise((res) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      res();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

/**
 * Threads under `/api/threads` (src/threads/http.ts): reads open like every read, writes behind the
 * server's token and read-only guard. The service shares the server's store.
 */
async function threadRouteGroup(workspaceDir: string): Promise<RouteGroup> {
  const [{ registerThreadRoutes, threadOpenApiPaths }, { threadServiceFor }] = await Promise.all([
    import("../threads/http.js"),
    import("./thread-commands.js"),
  ]);
  return (app, kit) => {
    let svc: ThreadService | undefined;
    const prefix = "/api/threads";
    app.on("POST", [prefix, `${prefix}/*`], kit.write);
    kit.describe(threadOpenApiPaths(prefix));
    registerThreadRoutes(
      app as unknown as Hono,
      () => {
        svc ??= threadServiceFor(kit.ctx.store, workspaceDir);
        return svc;
      },
      { prefix, actor: "http" },
    );
  };
}

/** The thread service of the MCP thread tools (loaded on first use: models and the bridge are heavy). */
async function threadFactory(): Promise<(store: Store, workspaceDir: string) => ThreadService> {
  const { threadServiceFor } = await import("./thread-commands.js");
  return (store, workspaceDir) => threadServiceFor(store, workspaceDir);
}

/** `ratchet serve`. */
export async function serve(opts: ServeOptions): Promise<number> {
  const port = parsePort(opts.port);
  const token = opts.token ?? process.env.RATCHET_SERVER_TOKEN;
  if (token !== undefined && token.length < 16)
    throw new RatchetError(ErrorCode.Usage, "--token must be at least 16 characters", { field: "token" });
  const workspace = workspaceOf(opts);
  const { startServer, DEFAULT_PORT } = await import("../server/index.js");
  const threadRoutes = await threadRouteGroup(workspace.dir);
  const host = opts.host ?? "127.0.0.1";
  if (!["127.0.0.1", "::1", "localhost"].includes(host))
    err(
      `ratchet serve: binding ${host}: reads need no token, so anyone who can reach it can read the ledger`,
    );
  const server = await startServer({
    workspace,
    ...(opts.host ? { host: opts.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(token ? { token } : {}),
    readOnly: opts.readOnly === true,
    runnerDirs: (opts.runnerDir ?? []).map((d) => resolve(d)),
    workflows: (opts.workflow ?? []).map((w) => resolve(w)),
    extraRoutes: [threadRoutes],
    threads: await threadFactory(),
    ...(opts.quiet ? {} : { log: (line: string) => err(`ratchet serve: ${line}`) }),
  }).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "EADDRINUSE" || e.code === "EACCES" || e.code === "EADDRNOTAVAIL")
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `cannot listen on ${host}:${port ?? DEFAULT_PORT}: ${e.code} (choose another --port or --host)`,
        { field: e.code === "EADDRNOTAVAIL" ? "host" : "port" },
      );
    throw e;
  });
  out(
    JSON.stringify({
      ok: true,
      op: "serve",
      url: server.url,
      port: server.port,
      read_only: opts.readOnly === true,
      dashboard: `${server.url}/`,
    }),
  );
  // The token is printed once, on stderr, only when it was generated here.
  if (!token) err(`ratchet serve: bearer token (writes and /mcp): ${server.token}`);
  await untilSignal();
  await server.close();
  return 0;
}

/**
 * `ratchet mcp`: the same MCP tools over stdio, until stdin closes or a signal. Launched outside a
 * workspace (no `.ratchet` up from the folder, no `--db`/`RATCHET_DB`) it still starts and answers
 * `initialize` and the lists, and every tool call is a tool error naming the problem: a client that
 * launches servers shows that message instead of "Connection closed".
 */
export async function mcpStdio(
  opts: GlobalOptions & { readOnly?: boolean; runnerDir?: string[]; workflow?: string[] },
): Promise<number> {
  const [{ openServerContext, createMcpServer, strictStdin }, { StdioServerTransport }] = await Promise.all([
    import("../server/index.js"),
    import("@modelcontextprotocol/sdk/server/stdio.js"),
  ]);
  let ctx: ReturnType<typeof openServerContext> | undefined;
  let unavailable: RatchetError | undefined;
  try {
    ctx = openServerContext({
      workspace: workspaceOf(opts),
      threads: await threadFactory(),
      runnerDirs: (opts.runnerDir ?? []).map((d) => resolve(d)),
      workflows: (opts.workflow ?? []).map((w) => resolve(w)),
    });
  } catch (e) {
    const cause = toRatchetError(e);
    unavailable =
      cause.code === ErrorCode.WorkspaceNotFound
        ? new RatchetError(
            ErrorCode.WorkspaceNotFound,
            `no Ratchet workspace found from ${process.cwd()}; run \`ratchet init\` or set RATCHET_DB`,
            { cwd: process.cwd() },
          )
        : cause;
    err(`ratchet mcp: ${unavailable.message} (every tool call answers with this error)`);
  }
  const context = () => {
    if (ctx) return ctx;
    throw unavailable as RatchetError;
  };
  // Arguments are checked on the raw lines (the SDK's parser drops a __proto__ key silently).
  const refusals = new Map<string | number, RatchetError>();
  const server = createMcpServer(context, { readOnly: opts.readOnly === true, refusals });
  const closed = new Promise<void>((res) => {
    server.onclose = () => res();
  });
  await server.connect(new StdioServerTransport(strictStdin(process.stdin, refusals), process.stdout));
  await Promise.race([
    closed,
    untilSignal(),
    new Promise<void>((res) => process.stdin.once("end", () => res())),
  ]);
  await server.close();
  ctx?.close();
  return 0;
}
