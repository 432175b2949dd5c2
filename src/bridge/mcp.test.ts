// MCP servers through the bridge, against REAL servers: the stdio fixture
// (test/fixtures/mcp/echo-server.mjs, the SDK's McpServer) and an in-process Streamable HTTP server.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Redactor } from "../core/index.js";
import { createBridgeApp } from "./app.js";
import { createToolRegistry, type ToolRegistry } from "./registry.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURE = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
const TOKEN = "k".repeat(64);
/** `${NAME}` as written in a config file (built, so it does not read as a broken template). */
const ref = (name: string) => ["$", "{", name, "}"].join("");

const registries: ToolRegistry[] = [];
afterAll(async () => {
  await Promise.all(registries.map((r) => r.close()));
});

interface SetupOptions {
  allowedTools?: string[];
  callTimeoutMs?: number;
  maxConcurrentPerServer?: number;
  servers?: Record<string, Record<string, unknown>>;
  env?: NodeJS.ProcessEnv;
}

function setup(opts: SetupOptions = {}) {
  const registry = createToolRegistry(
    {
      baseDir: ROOT,
      mcpServers: opts.servers ?? {
        fx: { command: process.execPath, args: [FIXTURE], env: { FROM_CONFIG: ref("FIXTURE_VALUE") } },
      },
    },
    {
      env: opts.env ?? {
        ...process.env,
        FIXTURE_VALUE: "configured",
        SECRET_LEAK: "must-not-reach-the-server",
      },
      ...(opts.maxConcurrentPerServer ? { maxConcurrentPerServer: opts.maxConcurrentPerServer } : {}),
    },
  );
  registries.push(registry);
  const app = createBridgeApp({
    registry,
    token: TOKEN,
    redactor: new Redactor(),
    allowedTools: opts.allowedTools,
    callTimeoutMs: opts.callTimeoutMs,
  });
  const call = async (path: string, body: unknown = {}) => {
    const res = await app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as { success: boolean; result: unknown; error: string | null },
    };
  };
  const fx = () => registry.servers.get("fx")!;
  return { registry, app, call, fx };
}

describe("a stdio MCP server", () => {
  const s = setup();

  it("is started lazily, on the first call", async () => {
    expect(s.fx().connectCount).toBe(0);
    expect(await s.call("/tools/mcp/fx/add", { a: 2, b: 3 })).toEqual({
      status: 200,
      body: { success: true, result: 5, error: null },
    });
    expect(await s.call("/tools/mcp/fx/echo", { text: "hi" })).toEqual({
      status: 200,
      body: { success: true, result: "hi", error: null },
    });
    expect(s.fx().connectCount).toBe(1);
  });

  it("answers 400 naming the argument that fails the tool's schema", async () => {
    expect(await s.call("/tools/mcp/fx/add", { a: "2", b: 3 })).toEqual({
      status: 400,
      body: {
        success: false,
        result: null,
        error: 'mcp:fx/add: argument `a` must be a number (got string "2")',
      },
    });
    expect((await s.call("/tools/mcp/fx/add", { a: 1 })).body.error).toBe(
      "mcp:fx/add: argument `b` is required",
    );
  });

  it("answers 404 naming an unknown tool or server", async () => {
    expect(await s.call("/tools/mcp/fx/nope")).toEqual({
      status: 404,
      body: {
        success: false,
        result: null,
        error: 'MCP server fx has no tool "nope" (tools: add, crash, echo, env, fail, peak, pid, slow)',
      },
    });
    expect((await s.call("/tools/mcp/ghost/add")).body.error).toBe(
      'unknown MCP server "ghost" (configured: fx)',
    );
  });

  it("answers 422 with the tool's text when it reports isError", async () => {
    expect(await s.call("/tools/mcp/fx/fail")).toEqual({
      status: 422,
      body: {
        success: false,
        result: null,
        error: "MCP tool fx/fail reported an error: this tool always fails",
      },
    });
  });

  it("gives the server a minimal environment plus its configured env (with variables expanded)", async () => {
    expect((await s.call("/tools/mcp/fx/env", { name: "FROM_CONFIG" })).body.result).toBe("configured");
    expect((await s.call("/tools/mcp/fx/env", { name: "SECRET_LEAK" })).body.result).toBeNull();
  });

  it("answers 504 when a call times out, and keeps serving on the same connection", async () => {
    const t = setup({ callTimeoutMs: 300 });
    await t.fx().listTools(); // start the server outside the short call timeout
    const slow = await t.call("/tools/mcp/fx/slow", { ms: 30_000 });
    expect(slow.status).toBe(504);
    expect(slow.body).toMatchObject({ success: false, result: null });
    expect(slow.body.error).toMatch(/^(tool mcp:fx\/slow|MCP tool fx\/slow) timed out after 300 ms$/);
    expect(await t.call("/tools/mcp/fx/add", { a: 1, b: 2 })).toMatchObject({
      status: 200,
      body: { result: 3 },
    });
    expect(t.fx().connectCount).toBe(1);
  });

  it("answers 502 naming the crash when the server dies mid-call; the next call reconnects", async () => {
    const t = setup();
    expect((await t.call("/tools/mcp/fx/add", { a: 1, b: 1 })).status).toBe(200);
    const crash = await t.call("/tools/mcp/fx/crash");
    expect(crash.status).toBe(502);
    expect(crash.body.success).toBe(false);
    expect(crash.body.error).toMatch(
      /^MCP server fx closed the connection during the call to crash \(the server exited or crashed\)/,
    );
    expect(crash.body.error).toContain("crashing on purpose");
    expect(await t.call("/tools/mcp/fx/add", { a: 20, b: 22 })).toEqual({
      status: 200,
      body: { success: true, result: 42, error: null },
    });
    expect(t.fx().connectCount).toBe(2);
  });

  it("holds at most maxConcurrentPerServer calls in flight; the others wait for a slot", async () => {
    const t = setup({ maxConcurrentPerServer: 2 });
    expect((await t.call("/tools/mcp/fx/peak")).status).toBe(200); // starts the server, resets the peak
    const calls = Array.from({ length: 8 }, () => t.call("/tools/mcp/fx/slow", { ms: 100 }));
    let sawWaiting = false;
    for (let i = 0; i < 200 && !sawWaiting; i++) {
      const load = t.fx().load;
      expect(load.inFlight).toBeLessThanOrEqual(2);
      sawWaiting = load.waiting > 0;
      await new Promise((r) => setTimeout(r, 5));
    }
    const results = await Promise.all(calls);
    expect(results.every((r) => r.status === 200 && r.body.success)).toBe(true);
    const peak = (await t.call("/tools/mcp/fx/peak")).body.result as { peak: number };
    expect(peak.peak).toBeGreaterThanOrEqual(1);
    expect(peak.peak).toBeLessThanOrEqual(2);
    expect(sawWaiting).toBe(true);
  });

  it("answers 403 for a tool the run may not use without starting its server", async () => {
    const t = setup({ allowedTools: ["mcp:fx/add"] });
    expect(await t.call("/tools/mcp/fx/echo", { text: "x" })).toEqual({
      status: 403,
      body: { success: false, result: null, error: "tool mcp:fx/echo is not allowed in this run" },
    });
    expect(t.fx().connectCount).toBe(0);
    expect((await t.call("/tools/mcp/fx/add", { a: 1, b: 1 })).status).toBe(200);
  });

  it("answers 502 when the server cannot start, and tries again on the next call", async () => {
    const t = setup({ servers: { fx: { command: "ratchet-no-such-mcp-server" } } });
    for (let i = 1; i <= 2; i++) {
      const r = await t.call("/tools/mcp/fx/add", { a: 1, b: 1 });
      expect(r.status).toBe(502);
      expect(r.body.error).toMatch(/^cannot start MCP server fx \(ratchet-no-such-mcp-server\)/);
      expect(t.fx().connectCount).toBe(i);
    }
  });

  it("names a variable of the config that is not set", async () => {
    const t = setup({ env: { PATH: process.env.PATH } });
    const r = await t.call("/tools/mcp/fx/add", { a: 1, b: 1 });
    expect(r).toMatchObject({
      status: 502,
      body: { error: `mcpServers.fx.env.FROM_CONFIG names ${ref("FIXTURE_VALUE")}, which is not set` },
    });
  });

  it("describes its tools in get_api_spec (one tool, and server/*)", async () => {
    const one = await s.call("/tools/virtual/get_api_spec", { tool_name: "mcp:fx/add" });
    expect(one.body.result).toBe(
      [
        "Base URL: http://localhost",
        "Auth: Authorization: Bearer $MCP_API_TOKEN",
        'Reply: JSON {"success": true|false, "result": <the tool\'s result>, "error": <text>|null}',
        "",
        "POST http://localhost/tools/mcp/fx/add",
        "Tool: mcp:fx/add",
        "Adds two numbers.",
        "Parameters:",
        "  a: number (required) - first addend",
        "  b: number (required) - second addend",
        "",
      ].join("\n"),
    );
    const all = String((await s.call("/tools/virtual/get_api_spec", { tool_name: "fx/*" })).body.result);
    expect(all.match(/^POST /gm)).toHaveLength(8);
    expect(all).toContain(
      "Tool: mcp:fx/crash\nExits the server process in the middle of the call.\nParameters: none",
    );
    const t = setup({ allowedTools: ["custom:echo"] });
    expect((await t.call("/tools/virtual/get_api_spec", { tool_name: "fx/*" })).status).toBe(403);
    expect(t.fx().connectCount).toBe(0);
  });
});

describe("a Streamable HTTP MCP server", () => {
  let http: Server;
  let url = "";

  beforeAll(async () => {
    http = createServer(async (req, res) => {
      if (req.headers["x-key"] !== "sesame") {
        res.writeHead(401).end("no key");
        return;
      }
      const server = new McpServer({ name: "http-fixture", version: "1.0.0" });
      server.registerTool(
        "add",
        { description: "Adds.", inputSchema: { a: z.number(), b: z.number() } },
        async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(
    () =>
      new Promise<void>((r) => {
        http.close(() => r());
        http.closeAllConnections();
      }),
  );

  it("is reached by URL with the configured headers", async () => {
    const t = setup({
      servers: { remote: { url, headers: { "X-Key": ref("HTTP_KEY") } } },
      env: { ...process.env, HTTP_KEY: "sesame" },
    });
    expect(await t.call("/tools/mcp/remote/add", { a: 40, b: 2 })).toEqual({
      status: 200,
      body: { success: true, result: 42, error: null },
    });
    expect((await t.call("/tools/mcp/remote/add", { a: "x", b: 2 })).status).toBe(400);
  });

  it("answers 502 when the server refuses the connection", async () => {
    const t = setup({ servers: { remote: { url, headers: { "X-Key": "wrong" } } } });
    const r = await t.call("/tools/mcp/remote/add", { a: 1, b: 2 });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatch(/^cannot connect to MCP server remote/);
  });
});
