/**
 * A listening `ratchet serve`: the app on `@hono/node-server`, loopback by default, a generated
 * token unless one is given. Closing it cancels the runs it started, ends the SSE streams and
 * closes the store.
 */
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bindHostName } from "../core/index.js";
import type { Workspace } from "../store/index.js";
import { createServerApp, type RouteGroup, type ServerApp } from "./app.js";
import { loadServerConfig } from "./config.js";
import { openServerContext, type ServerContext, type ServerContextOptions } from "./context.js";
import { DEFAULT_HOST, DEFAULT_PORT, TOKEN_BYTES } from "./limits.js";

/** Options of {@link startServer}. Only `workspace` is required. */
export interface StartServerOptions {
  workspace: Workspace;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 8765; 0 picks a free port. */
  port?: number;
  /** Default: {@link TOKEN_BYTES} random bytes, hex. */
  token?: string;
  /** Refuse every write. Default false. */
  readOnly?: boolean;
  runnerDirs?: readonly string[];
  workflows?: readonly string[];
  /** The thread service's factory (the MCP thread tools). Default: none. */
  threads?: ServerContextOptions["threads"];
  extraRoutes?: readonly RouteGroup[];
  log?: (line: string) => void;
  /**
   * Hosts answered besides the loopback names and the bind address: `name` (any port) or
   * `name:port`, added to `server.allowed_hosts` of the workspace's `.ratchet/config.json`.
   */
  allowedHosts?: readonly string[];
}

export interface RunningServer {
  url: string;
  port: number;
  token: string;
  app: ServerApp;
  ctx: ServerContext;
  /** Idempotent. */
  close(): Promise<void>;
}

export function generateServerToken(): string {
  return randomBytes(TOKEN_BYTES).toString("hex");
}

/**
 * Starts the server and resolves once it listens.
 * @throws the listen error (e.g. `EADDRINUSE`); `schema_violation` for a bad `server` config section.
 */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  const token = opts.token ?? generateServerToken();
  const host = opts.host ?? DEFAULT_HOST;
  const config = loadServerConfig(opts.workspace.dir);
  const ctx = openServerContext({
    workspace: opts.workspace,
    ...(opts.runnerDirs ? { runnerDirs: opts.runnerDirs } : {}),
    ...(opts.workflows ? { workflows: opts.workflows } : {}),
    ...(opts.threads ? { threads: opts.threads } : {}),
  });
  let boundPort: number | undefined;
  const bindName = bindHostName(host);
  const app = createServerApp({
    ctx,
    token,
    readOnly: opts.readOnly === true,
    allowedHosts: [...(bindName ? [bindName] : []), ...config.allowedHosts, ...(opts.allowedHosts ?? [])],
    boundPort: () => boundPort,
    ...(opts.extraRoutes ? { extraRoutes: opts.extraRoutes } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const { createAdaptorServer } = await import("@hono/node-server");
  const server = createAdaptorServer({
    fetch: app.fetch,
    hostname: host,
    overrideGlobalObjects: false,
  }) as Server;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? DEFAULT_PORT, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (e) {
    ctx.close();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  boundPort = port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    token,
    app,
    ctx,
    close() {
      closing ??= (async () => {
        for (const a of ctx.active) a.abort();
        ctx.hub.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        // Runs cancelled above finish their bookkeeping before the store closes.
        const deadline = Date.now() + 10_000;
        while (ctx.active.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        ctx.close();
      })();
      return closing;
    },
  };
}
