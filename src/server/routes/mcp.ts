/**
 * `/mcp`: the MCP server over streamable HTTP, stateless (a fresh transport per request, JSON
 * replies), behind the bearer token.
 *
 * The SDK `Server`s (tool, resource and prompt tables) are built once and kept in a pool of idle
 * ones: a request takes one, connects it to its own fresh transport, and gives it back after the
 * transport is closed. A server is connected to one transport at a time (the SDK refuses a second
 * `connect`), so two requests in flight never share a server, a transport, or the request-id space
 * of their refusals; a busy pool simply builds another server.
 *
 * The body is read here, strictly (UTF-8, JSON), and the arguments of every `tools/call` are checked
 * for `__proto__`/`constructor`/`prototype` keys on the raw JSON: the SDK's own parser silently
 * drops a `__proto__` key, so the tool would otherwise run without it instead of refusing.
 *
 * A plain `tools/call` — one JSON-RPC request, nothing the SDK's transport would refuse or treat
 * specially (see {@link plainToolCall}) — skips the SDK's transport and `Server`: it is answered by
 * the same `tools/call` handler ({@link toolCallHandler}) and serialised the way the transport's
 * JSON mode does (`{"result":…,"jsonrpc":"2.0","id":…}`, 200, `application/json`); the SDK's zod
 * passes over the message, its per-request transport and its connect/close were most of the
 * route's own time. Anything else (initialize, notifications, batches, lists, resources, prompts,
 * a `_meta` or `task`, a refused argument, a header the transport would answer with an error) goes
 * through the SDK exactly as before; `mcp-fast-path.test.ts` compares the two byte for byte.
 *
 * Stateless means no server-to-client stream and no session to end: `GET /mcp` and `DELETE /mcp`
 * answer 405 with `Allow: POST, OPTIONS` (the spec's signal that makes a client stop opening the
 * SSE stream, instead of reconnecting every second). `OPTIONS /mcp` is a CORS preflight: it is
 * answered with CORS headers only for an origin the host guard let through (this server's own
 * loopback origin, or a `server.allowed_hosts` name), echoed exactly, never `*`; a foreign origin
 * was already refused with 403 by the guard.
 */

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import { decodeUtf8Strict, type RatchetError } from "../../core/index.js";
import type { RouteGroup } from "../app.js";
import { writeBodyLimit } from "../http.js";
import { createMcpServer, type ToolCallParams, toolCallHandler } from "../mcp-server.js";
import { argumentRefusals } from "../mcp-tools.js";

// The body is read here, not by the transport, so its 4 MiB bound is applied here too.
const limit = writeBodyLimit();

/** Request headers a browser MCP client sends on `POST /mcp`. */
const CORS_ALLOW_HEADERS =
  "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id";
/** Response headers a browser MCP client may read. */
const CORS_EXPOSE_HEADERS = "mcp-session-id, mcp-protocol-version";
const ALLOW = "POST, OPTIONS";

/**
 * CORS headers for `origin`; the host guard before every route has already refused an origin that
 * is not this server's, so a present origin here is an allowed one. None without an `Origin`.
 */
function corsHeaders(origin: string | undefined): Record<string, string> {
  if (!origin) return {};
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-credentials": "true",
    "access-control-expose-headers": CORS_EXPOSE_HEADERS,
    vary: "Origin",
  };
}

/** Idle servers kept for reuse; more in flight at once are built and dropped. */
const POOL_MAX = 16;

/** One pooled server and the refusals of the request it is serving now. */
interface Pooled {
  server: Server;
  refusals: ReadonlyMap<string | number, RatchetError>;
}

const NONE: ReadonlyMap<string | number, RatchetError> = new Map();

/** A JSON object as `JSON.parse` makes it (not an array, not null, not a class instance). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

/** Whether every own key of `o` is one of `allowed`. */
function onlyKeys(o: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) return false;
  return true;
}

const REQUEST_KEYS = ["jsonrpc", "id", "method", "params"] as const;
const CALL_KEYS = ["name", "arguments"] as const;

/**
 * The id and params of `body` when it is a `tools/call` the SDK's transport and `Server` would take
 * as it is and hand to the `tools/call` handler unchanged; `undefined` for anything else, which then
 * goes through the SDK. Deliberately narrower than the SDK: the headers its transport checks (both
 * `Accept` types, `Content-Type` exactly `application/json` as its clients send it, a supported
 * `Mcp-Protocol-Version` or none), one request (no batch), exactly the JSON-RPC request keys
 * (its schema is strict), a string or safe-integer id, params of only `name` (a string) and
 * `arguments` (an object) — no `_meta`, no `task` — and no argument refused on the raw JSON.
 */
function plainToolCall(
  c: Context,
  body: unknown,
  refusals: ReadonlyMap<string | number, RatchetError>,
): { id: string | number; params: ToolCallParams } | undefined {
  if (refusals.size > 0 || !isPlainObject(body) || !onlyKeys(body, REQUEST_KEYS)) return undefined;
  if (body.jsonrpc !== "2.0" || body.method !== "tools/call") return undefined;
  const id = body.id;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) return undefined;
  const params = body.params;
  if (!isPlainObject(params) || !onlyKeys(params, CALL_KEYS) || typeof params.name !== "string")
    return undefined;
  const args = params.arguments;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  const accept = c.req.header("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  if (c.req.header("content-type") !== "application/json") return undefined;
  const version = c.req.header("mcp-protocol-version");
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  return { id, params: args === undefined ? { name: params.name } : { name: params.name, arguments: args } };
}

export const mcpRoutes: RouteGroup = (app, { ctx, auth, readOnly }) => {
  // A preflight carries no credentials: answered before the token check.
  app.options("/mcp", (c) => {
    const origin = c.req.header("origin");
    return c.body(null, 204, {
      allow: ALLOW,
      ...corsHeaders(origin),
      ...(origin
        ? {
            "access-control-allow-methods": ALLOW,
            "access-control-allow-headers": CORS_ALLOW_HEADERS,
            "access-control-max-age": "600",
          }
        : {}),
    });
  });
  const notAllowed = (c: Context) =>
    c.json(
      {
        ok: false,
        error: {
          code: "method_not_allowed",
          message: `${c.req.method} /mcp: this MCP server is stateless (no event stream, no session); send JSON-RPC with POST`,
        },
      },
      405,
      { allow: ALLOW, ...corsHeaders(c.req.header("origin")) },
    );
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);
  app.on(["PUT", "PATCH"], "/mcp", notAllowed);

  // The fast path's handler: the pooled servers' own, without refusals (a refused call is not plain).
  const callTool = toolCallHandler(ctx, { readOnly });
  const idle: Pooled[] = [];
  const take = (): Pooled => {
    const found = idle.pop();
    if (found) return found;
    const pooled: Pooled = { server: undefined as unknown as Server, refusals: NONE };
    pooled.server = createMcpServer(ctx, { readOnly, refusals: () => pooled.refusals });
    return pooled;
  };
  const giveBack = (pooled: Pooled): void => {
    pooled.refusals = NONE;
    // What an `initialize` told this server about its client is not the next request's client.
    const s = pooled.server as unknown as { _clientCapabilities?: unknown; _clientVersion?: unknown };
    s._clientCapabilities = undefined;
    s._clientVersion = undefined;
    if (pooled.server.transport === undefined && idle.length < POOL_MAX) idle.push(pooled);
  };

  app.post("/mcp", auth, limit, async (c) => {
    let parsedBody: unknown;
    let refusals = new Map<string | number, RatchetError>();
    let request = c.req.raw;
    const text = decodeUtf8Strict(new Uint8Array(await c.req.arrayBuffer()), "the request body", "body");
    try {
      parsedBody = JSON.parse(text) as unknown;
      refusals = argumentRefusals(parsedBody);
    } catch {
      // Not JSON: the transport answers with its JSON-RPC parse error.
      request = new Request(c.req.raw.url, { method: "POST", headers: c.req.raw.headers, body: text });
    }
    const plain = plainToolCall(c, parsedBody, refusals);
    if (plain) {
      const result = await callTool(plain.params, plain.id);
      // The bytes of the SDK transport's JSON reply: Protocol builds `{ result, jsonrpc, id }`.
      return c.body(JSON.stringify({ result, jsonrpc: "2.0", id: plain.id }), 200, {
        "content-type": "application/json",
        ...corsHeaders(c.req.header("origin")),
      });
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const pooled = take();
    pooled.refusals = refusals;
    const server = pooled.server;
    await server.connect(transport);
    let res: Response;
    try {
      res = await transport.handleRequest(request, parsedBody !== undefined ? { parsedBody } : undefined);
    } catch (e) {
      await server.close();
      giveBack(pooled);
      throw e;
    }
    // Closed once the SDK has finished its own bookkeeping of the request (a macrotask later): a
    // close while the handler's abort controller is still registered aborts it, and building that
    // abort's DOMException was a twentieth of the route. The reply does not wait for it; the server
    // goes back to the pool after, and a request in the meantime takes another one.
    setImmediate(() => {
      server.close().then(
        () => giveBack(pooled),
        () => undefined,
      );
    });
    for (const [k, v] of Object.entries(corsHeaders(c.req.header("origin")))) res.headers.set(k, v);
    return res;
  });
};
