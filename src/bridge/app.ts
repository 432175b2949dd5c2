/**
 * The bridge's HTTP routes (hono). Thin: authenticate, read the body, call {@link invokeTool} or
 * {@link apiSpec}, reply `{success, result, error}` with the status of the failure kind, log one
 * redacted line per request.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { type HostPolicy, hostAllowed, originAllowed, Redactor } from "../core/index.js";
import { apiSpec, parseSpecNames } from "./api-spec.js";
import { BridgeError, BridgeErrorKind, toBridgeError } from "./errors.js";
import { invokeTool } from "./invoke.js";
import { DEFAULT_CALL_TIMEOUT_MS, LOG_RESULT_PREVIEW_CHARS, MAX_BODY_BYTES } from "./limits.js";
import { assertAllowed, qualifiedName, type ToolRef } from "./names.js";
import type { ToolRegistry } from "./registry.js";

/** The body of every reply. */
export interface BridgeReply {
  success: boolean;
  result: unknown;
  error: string | null;
}

/** Options of {@link createBridgeApp}. `registry` and `token` are required. */
export interface BridgeAppOptions {
  registry: ToolRegistry;
  /** The bearer token every `/tools/…` request must carry. */
  token: string;
  /** Tools the run may use. Default: all. */
  allowedTools?: readonly string[] | undefined;
  /**
   * More tokens, each limited to a narrower allowlist (a step's `allowed_tools`), keyed by
   * {@link tokenKey}. A request with one of them may use only tools both lists allow. The map is
   * read on every request, so tokens added later work at once.
   */
  scopedTokens?: ReadonlyMap<string, readonly string[]> | undefined;
  /** Masks secrets in log lines and error texts. Default: one built from `process.env`. */
  redactor?: Redactor | undefined;
  /** Time limit of a call when the tool declares none. Default `DEFAULT_CALL_TIMEOUT_MS`. */
  callTimeoutMs?: number | undefined;
  /** One line per request (already redacted). Default: no logging. */
  log?: ((line: string) => void) | undefined;
  /** The base URL `get_api_spec` prints (or a getter, for a port known after listening). Default: the request's origin. */
  baseUrl?: string | (() => string) | undefined;
  /** Largest request body in bytes. Default `MAX_BODY_BYTES`. */
  maxBodyBytes?: number | undefined;
  /**
   * The `Host` names answered (DNS-rebinding defence): loopback names always, plus these. A
   * request naming another host gets 421; a POST with a foreign `Origin` 403. Default: loopback
   * names on any port (`startBridge` passes its bound port).
   */
  hostPolicy?: HostPolicy | undefined;
}

/** The key of a scoped token in {@link BridgeAppOptions.scopedTokens}: its SHA-256, hex. */
export function tokenKey(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Compares two secrets in constant time (hashing first makes the buffers the same length). */
export function tokensMatch(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Per-request values of the app (the log line's detail). */
export type BridgeAppEnv = { Variables: { logDetail: string; scope: readonly string[] | undefined } };

/** The VIRTUAL tools: answered by the bridge itself. */
export const VIRTUAL_TOOLS = Object.freeze(["get_api_spec"]);

/** Builds the bridge's hono app (serve it with `startBridge`, or call `app.request()` in tests). */
export function createBridgeApp(opts: BridgeAppOptions): Hono<BridgeAppEnv> {
  const redactor = opts.redactor ?? new Redactor().addFromEnv(process.env);
  redactor.add("MCP_API_TOKEN", opts.token);
  const log = opts.log;
  const timeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const app = new Hono<BridgeAppEnv>();

  const send = (c: Context<BridgeAppEnv>, status: number, body: BridgeReply) =>
    c.json(
      body,
      status as 200,
      status === 401 ? { "WWW-Authenticate": 'Bearer realm="ratchet-bridge"' } : {},
    );
  const fail = (c: Context<BridgeAppEnv>, err: unknown) => {
    const e = toBridgeError(err);
    return send(c, e.status, { success: false, result: null, error: redactor.redact(e.message) });
  };

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    if (!log) return;
    const ms = (performance.now() - started).toFixed(1);
    let line = `bridge ${c.req.method} ${c.req.path} ${c.res.status} ${ms}ms`;
    const detail = c.get("logDetail");
    if (detail) line += ` ${detail}`;
    log(redactor.redact(line).replace(/\s*\n\s*/g, " | "));
  });

  const policy: HostPolicy = opts.hostPolicy ?? { allowed: [], port: () => undefined };
  app.use("*", async (c, next) => {
    const host = c.req.header("host");
    if (!hostAllowed(host, policy, new URL(c.req.url).host))
      return send(c, 421, {
        success: false,
        result: null,
        error: `the Host header ${JSON.stringify(host ?? "")} names no host this bridge answers (use 127.0.0.1)`,
      });
    const origin = c.req.header("origin");
    if (c.req.method !== "GET" && c.req.method !== "HEAD" && !originAllowed(origin, policy))
      return send(c, 403, {
        success: false,
        result: null,
        error: `the Origin header ${JSON.stringify(origin ?? "")} is not this bridge's origin`,
      });
    await next();
    return undefined;
  });

  app.get("/health", (c) => send(c, 200, { success: true, result: "ok", error: null }));

  app.use("/tools/*", async (c, next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "");
    const given = m?.[1];
    // A scoped token is found by its hash, so the lookup leaks nothing about the token itself.
    const scope = given === undefined ? undefined : opts.scopedTokens?.get(tokenKey(given));
    if (!given || (!scope && !tokensMatch(given, opts.token)))
      return fail(c, new BridgeError(BridgeErrorKind.Unauthorized, "missing or invalid bearer token"));
    c.set("scope", scope);
    await next();
    return undefined;
  });
  app.use(
    "/tools/*",
    bodyLimit({
      maxSize: opts.maxBodyBytes ?? MAX_BODY_BYTES,
      onError: (c) =>
        send(c, 413, {
          success: false,
          result: null,
          error: `the body is larger than ${opts.maxBodyBytes ?? MAX_BODY_BYTES} bytes`,
        }),
    }),
  );

  /** Reads the body as JSON (an empty body is `{}`). */
  const readJson = async (c: Context): Promise<unknown> => {
    const text = await c.req.text();
    if (text.trim() === "") return {};
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new BridgeError(
        BridgeErrorKind.BadRequest,
        `the body is not valid JSON: ${(err as Error).message}`,
      );
    }
  };

  const callRoute = async (c: Context<BridgeAppEnv>, ref: ToolRef) => {
    try {
      // Before the body is read or anything is started.
      assertAllowed(opts.allowedTools, ref);
      assertAllowed(c.get("scope"), ref);
      const args = await readJson(c);
      const result = await invokeTool(opts.registry, ref, args, {
        allowedTools: opts.allowedTools,
        timeoutMs,
        signal: c.req.raw.signal,
      });
      if (log) c.set("logDetail", `${qualifiedName(ref)} -> ${preview(result)}`);
      return send(c, 200, { success: true, result: result ?? null, error: null });
    } catch (err) {
      if (log) c.set("logDetail", toBridgeError(err).message);
      return fail(c, err);
    }
  };

  app.post("/tools/mcp/:server/:tool", (c) =>
    callRoute(c, { kind: "mcp", server: c.req.param("server"), tool: c.req.param("tool") }),
  );
  app.post("/tools/custom/:tool", (c) => callRoute(c, { kind: "custom", tool: c.req.param("tool") }));
  app.post("/tools/virtual/get_api_spec", async (c) => {
    try {
      const names = parseSpecNames(await readJson(c));
      const text = await apiSpec(opts.registry, names, {
        baseUrl:
          typeof opts.baseUrl === "function" ? opts.baseUrl() : (opts.baseUrl ?? new URL(c.req.url).origin),
        allowedTools: opts.allowedTools,
        scope: c.get("scope"),
        signal: c.req.raw.signal,
      });
      return send(c, 200, { success: true, result: text, error: null });
    } catch (err) {
      return fail(c, err);
    }
  });
  app.post("/tools/virtual/:tool", (c) =>
    fail(
      c,
      new BridgeError(
        BridgeErrorKind.NotFound,
        `unknown virtual tool ${JSON.stringify(c.req.param("tool"))} (virtual tools: ${VIRTUAL_TOOLS.join(", ")})`,
      ),
    ),
  );

  app.notFound((c) =>
    fail(
      c,
      new BridgeError(
        BridgeErrorKind.NotFound,
        `no route ${c.req.method} ${c.req.path}: tools are called with POST /tools/mcp/{server}/{tool}, POST /tools/custom/{tool} or POST /tools/virtual/get_api_spec`,
      ),
    ),
  );
  app.onError((err, c) => fail(c, err));
  return app;

  function preview(result: unknown): string {
    // Redact before cutting: a cut must not leave the head of a secret behind.
    const text = redactor.redact(JSON.stringify(result) ?? "null");
    return text.length > LOG_RESULT_PREVIEW_CHARS ? `${text.slice(0, LOG_RESULT_PREVIEW_CHARS)}…` : text;
  }
}
