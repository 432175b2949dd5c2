/**
 * The server's hono app: one host rule, one auth rule, one error mapping, and route groups mounted
 * in order. Every request must name this server in `Host` (loopback names or configured hosts:
 * 421 `host_not_allowed` otherwise), and a write or MCP request from a browser must come from its
 * origin (403 `origin_not_allowed`) — the DNS-rebinding defence. Reads are open (the server binds
 * to loopback by default); every write and the MCP endpoint need the bearer token; `readOnly`
 * refuses every write with 403. More route groups (e.g. thread approvals) mount through
 * {@link ServerAppOptions.extraRoutes} without touching this file.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { type HostPolicy, hostAllowed, originAllowed } from "../core/index.js";
import type { ServerContext } from "./context.js";
import { replyCode, replyError, ServerErrorCode, writeBodyLimit } from "./http.js";
import { attentionRoutes } from "./routes/attention.js";
import { ledgerRoutes } from "./routes/ledger.js";
import { mcpRoutes } from "./routes/mcp.js";
import { openapiRoutes } from "./routes/openapi.js";
import { runnerRoutes } from "./routes/runner.js";
import { runRoutes } from "./routes/runs.js";
import { sseRoutes } from "./routes/sse.js";
import { staticRoutes } from "./routes/static.js";
import { webhookRoutes } from "./routes/webhooks.js";
import { whyRoutes } from "./routes/why.js";
import { workflowRoutes } from "./routes/workflows.js";

export type ServerEnv = { Variables: Record<string, never> };
export type ServerApp = Hono<ServerEnv>;

/** What a route group gets: the app, the shared context, and the guard to put before writes. */
export interface RouteKit {
  ctx: ServerContext;
  /** Put before every route that changes something: checks the token and `readOnly`. */
  write: MiddlewareHandler<ServerEnv>;
  /** Checks the token only (MCP: its tools refuse writes themselves in read-only mode). */
  auth: MiddlewareHandler<ServerEnv>;
  /** Whether the request carries this server's bearer token (routes with a second way in: webhooks). */
  tokenValid: (c: Context<ServerEnv>) => boolean;
  /** The body size limit of writes, alone (for routes that authenticate themselves). */
  bodyLimit: MiddlewareHandler<ServerEnv>;
  readOnly: boolean;
  /**
   * Adds OpenAPI 3.1 path items (keyed by path, e.g. `/api/threads/{id}`) to `/openapi.json`, so a
   * mounted group documents its routes where the built-in ones are.
   */
  describe: (paths: Record<string, unknown>) => void;
  /** What the groups described so far (read by `GET /openapi.json`). */
  described: Readonly<Record<string, unknown>>;
}

/** A group of routes. Mount more with {@link ServerAppOptions.extraRoutes}. */
export type RouteGroup = (app: ServerApp, kit: RouteKit) => void;

export interface ServerAppOptions {
  ctx: ServerContext;
  /** The bearer token of writes and MCP. */
  token: string;
  /** Refuse every write (403 `read_only`). Default false. */
  readOnly?: boolean;
  /** Route groups mounted after the built-in API routes and before the dashboard. */
  extraRoutes?: readonly RouteGroup[];
  /** One line per request, called just after the reply is sent. Default: none. */
  log?: (line: string) => void;
  /**
   * Hosts answered besides the loopback names: `name` (any port) or `name:port`. Default: none
   * (`server.allowed_hosts` of `.ratchet/config.json` through `ratchet serve`).
   */
  allowedHosts?: readonly string[];
  /** The listening port (loopback `Host`/`Origin` must carry it). Default: unknown, any port. */
  boundPort?: () => number | undefined;
}

const SAFE_METHODS = ["GET", "HEAD", "OPTIONS"];

/**
 * Refuses a request whose `Host` is not this server (421) and a write or `/mcp` request whose
 * `Origin` is a foreign page (403). An absent `Origin` is a non-browser client and passes.
 */
function hostGuard(policy: HostPolicy): MiddlewareHandler<ServerEnv> {
  return async (c, next) => {
    if (!hostAllowed(c.req.header("host"), policy, new URL(c.req.url).host))
      return replyCode(
        c,
        ServerErrorCode.HostNotAllowed,
        `the Host header ${JSON.stringify(c.req.header("host") ?? "")} names no host this server answers (loopback names, or server.allowed_hosts in .ratchet/config.json)`,
        "host",
      );
    const origin = c.req.header("origin");
    if ((!SAFE_METHODS.includes(c.req.method) || c.req.path === "/mcp") && !originAllowed(origin, policy))
      return replyCode(
        c,
        ServerErrorCode.OriginNotAllowed,
        `the Origin header ${JSON.stringify(origin ?? "")} is not this server's origin: writes and /mcp are refused from other pages`,
        "origin",
      );
    await next();
    return undefined;
  };
}

/** Compares two secrets in constant time. */
function tokensMatch(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The built-in route groups, in mount order. */
export const BUILTIN_ROUTES: readonly RouteGroup[] = [
  ledgerRoutes,
  runRoutes,
  workflowRoutes,
  webhookRoutes,
  runnerRoutes,
  sseRoutes,
  mcpRoutes,
  whyRoutes,
  attentionRoutes,
  openapiRoutes,
];

export function createServerApp(opts: ServerAppOptions): ServerApp {
  const app: ServerApp = new Hono<ServerEnv>();
  const readOnly = opts.readOnly === true;

  app.onError((e, c) => replyError(c, e));
  app.notFound((c) => replyCode(c, "not_found", `no route ${c.req.method} ${c.req.path}`));

  if (opts.log) {
    const log = opts.log;
    app.use("*", async (c, next) => {
      const t = performance.now();
      await next();
      const line = `${c.req.method} ${c.req.path} ${c.res.status} ${(performance.now() - t).toFixed(1)}ms`;
      // Written after the reply has gone out (a terminal or a pipe write is synchronous and was a
      // large share of a write op's latency); lines keep their order (setImmediate is FIFO).
      setImmediate(() => log(line));
    });
  }

  app.use("*", hostGuard({ allowed: opts.allowedHosts ?? [], port: opts.boundPort ?? (() => undefined) }));

  const tokenValid = (c: Context<ServerEnv>): boolean => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
    return m?.[1] !== undefined && tokensMatch(m[1], opts.token);
  };
  const denied = (c: Context<ServerEnv>): Response | undefined => {
    if (!tokenValid(c)) return replyCode(c, ServerErrorCode.Unauthorized, "missing or invalid bearer token");
    return undefined;
  };
  const auth: MiddlewareHandler<ServerEnv> = async (c, next) => {
    const refusal = denied(c);
    if (refusal) return refusal;
    await next();
    return undefined;
  };
  const limit = writeBodyLimit<ServerEnv>();
  const write: MiddlewareHandler<ServerEnv> = async (c, next) => {
    const refusal = denied(c);
    if (refusal) return refusal;
    if (readOnly)
      return replyCode(c, ServerErrorCode.ReadOnly, "the server runs with --read-only: writes are refused");
    return limit(c, next);
  };

  const described: Record<string, unknown> = {};
  const kit: RouteKit = {
    ctx: opts.ctx,
    write,
    auth,
    tokenValid,
    bodyLimit: limit,
    readOnly,
    describe: (paths) => Object.assign(described, paths),
    described,
  };
  for (const group of [...BUILTIN_ROUTES, ...(opts.extraRoutes ?? [])]) group(app, kit);
  staticRoutes(app, kit);
  return app;
}
