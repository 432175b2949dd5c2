// The HTTP surface, called in-process with app.request(): auth, body checks, statuses, the reply
// shape, the allowlist, timeouts, get_api_spec and redaction. MCP servers: mcp.test.ts.
import { afterAll, describe, expect, it } from "vitest";
import { Redactor } from "../core/index.js";
import { createBridgeApp } from "./app.js";
import { registerBuiltinTool } from "./custom-tools.js";
import { BridgeError } from "./errors.js";
import { createToolRegistry } from "./registry.js";

const TOKEN = "t".repeat(64);
const SECRET = "hunter2-very-secret";

function setup(opts: { allowedTools?: string[]; callTimeoutMs?: number } = {}) {
  const registry = createToolRegistry({ baseDir: process.cwd() });
  const calls: Record<string, unknown>[] = [];
  registerBuiltinTool(registry, {
    name: "count",
    description: "Counts its calls.",
    input_schema: {
      type: "object",
      properties: { n: { type: "integer", minimum: 0 }, tags: { type: "array", items: { type: "string" } } },
      required: ["n"],
      additionalProperties: false,
    },
    handler: (args) => {
      calls.push(args);
      return { calls: calls.length };
    },
  });
  registerBuiltinTool(registry, {
    name: "hang",
    description: "Never answers.",
    handler: () => new Promise(() => {}),
  });
  registerBuiltinTool(registry, {
    name: "boom",
    description: "Throws, quoting a secret.",
    handler: () => {
      throw new Error(`bad credentials ${SECRET}`);
    },
  });
  registerBuiltinTool(registry, {
    name: "leak",
    description: "Returns a secret.",
    handler: () => ({ key: SECRET }),
  });
  const logs: string[] = [];
  const app = createBridgeApp({
    registry,
    token: TOKEN,
    redactor: new Redactor().add("SECRET_KEY", SECRET),
    log: (l) => logs.push(l),
    ...opts,
  });
  const post = async (path: string, body?: string | object, headers: Record<string, string> = {}) => {
    const res = await app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  return { app, registry, calls, logs, post };
}

const s = setup();
afterAll(() => s.registry.close());

describe("authentication", () => {
  it("serves /health without a token and without data", async () => {
    const res = await s.app.request("/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, result: "ok", error: null });
  });

  it("answers 401 JSON without a valid token and calls nothing", async () => {
    const before = s.calls.length;
    for (const authorization of [
      undefined,
      "",
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(1)}`,
      `Basic ${TOKEN}`,
      "Bearer",
    ]) {
      const res = await s.app.request("/tools/custom/count", {
        method: "POST",
        headers: authorization === undefined ? {} : { authorization },
        body: JSON.stringify({ n: 1 }),
      });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await res.json()).toEqual({
        success: false,
        result: null,
        error: "missing or invalid bearer token",
      });
    }
    expect(s.calls.length).toBe(before);
  });

  it("accepts the token with any case of the scheme", async () => {
    expect((await s.post("/tools/custom/count", { n: 1 }, { authorization: `bearer ${TOKEN}` })).status).toBe(
      200,
    );
  });
});

describe("bodies and arguments", () => {
  it("answers the tool's result in the reply shape", async () => {
    expect(await s.post("/tools/custom/echo", { text: "hi", n: [1, 2] })).toEqual({
      status: 200,
      headers: expect.anything(),
      body: { success: true, result: { text: "hi", n: [1, 2] }, error: null },
    });
  });

  it("takes an empty body as no arguments", async () => {
    expect((await s.post("/tools/custom/echo")).body).toEqual({ success: true, result: {}, error: null });
  });

  it("answers 400 for malformed JSON", async () => {
    const r = await s.post("/tools/custom/echo", "{not json");
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, result: null });
    expect(r.body.error).toMatch(/^the body is not valid JSON/);
  });

  it("answers 400 for a body that is not an object", async () => {
    for (const [body, got] of [
      ["[1,2]", "an array"],
      ["3", "number"],
      ['"x"', "string"],
      ["null", "null"],
    ] as const) {
      const r = await s.post("/tools/custom/echo", body);
      expect(r.status, body).toBe(400);
      expect(r.body.error).toBe(`the body must be a JSON object of custom:echo's arguments (got ${got})`);
    }
  });

  it("answers 400 naming the argument that fails the schema, and does not call the tool", async () => {
    const before = s.calls.length;
    const cases: [object, string][] = [
      [{ n: "1" }, 'custom:count: argument `n` must be an integer (got string "1")'],
      [{}, "custom:count: argument `n` is required"],
      [{ n: -1 }, "custom:count: argument `n` must be ≥ 0 (got -1)"],
      [{ n: 1, tags: ["a", 2] }, "custom:count: argument `tags[1]` must be a string (got number 2)"],
      [{ n: 1, x: 1 }, "custom:count: argument `x` is not an accepted argument (accepted: n, tags)"],
    ];
    for (const [args, error] of cases) {
      const r = await s.post("/tools/custom/count", args);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ success: false, result: null, error });
    }
    expect(s.calls.length).toBe(before);
  });

  it("answers 413 for a body over the cap", async () => {
    const r = await s.post("/tools/custom/echo", { text: "x".repeat(1024 * 1024 + 10) });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ success: false, result: null });
  });
});

describe("lookup and allowlist", () => {
  it("answers 404 naming an unknown custom tool, MCP server or route", async () => {
    expect(await s.post("/tools/custom/nope", {})).toMatchObject({
      status: 404,
      body: { success: false, result: null, error: expect.stringContaining('unknown custom tool "nope"') },
    });
    expect(await s.post("/tools/mcp/ghost/add", {})).toMatchObject({
      status: 404,
      body: { success: false, error: 'unknown MCP server "ghost" (configured: none)' },
    });
    expect(await s.post("/tools/virtual/nope", {})).toMatchObject({ status: 404, body: { success: false } });
    const get = await s.app.request("/tools/custom/echo", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(get.status).toBe(404);
    expect(await get.json()).toMatchObject({ success: false, error: expect.stringMatching(/^no route GET/) });
  });

  it("answers 403 for a tool the run may not use, before reading the body or calling it", async () => {
    const r = setup({ allowedTools: ["custom:echo", "mcp:fx/*"] });
    expect(await r.post("/tools/custom/count", "{malformed")).toMatchObject({
      status: 403,
      body: { success: false, result: null, error: "tool custom:count is not allowed in this run" },
    });
    expect((await r.post("/tools/mcp/other/x", {})).status).toBe(403);
    expect((await r.post("/tools/custom/echo", { a: 1 })).status).toBe(200);
    expect(r.calls).toEqual([]);
    await r.registry.close();
  });
});

describe("failures", () => {
  it("answers 504 when a tool times out and keeps serving", async () => {
    const r = setup({ callTimeoutMs: 50 });
    expect(await r.post("/tools/custom/hang", {})).toEqual({
      status: 504,
      headers: expect.anything(),
      body: { success: false, result: null, error: "tool custom:hang timed out after 50 ms" },
    });
    expect((await r.post("/tools/custom/count", { n: 1 })).body).toEqual({
      success: true,
      result: { calls: 1 },
      error: null,
    });
    await r.registry.close();
  });

  it("answers 422 with the message when a built-in throws; a BridgeError keeps its status", async () => {
    const r = setup();
    registerBuiltinTool(r.registry, {
      name: "gone",
      description: "",
      handler: () => {
        throw new BridgeError("unavailable", "backend down");
      },
    });
    expect((await r.post("/tools/custom/boom", {})).status).toBe(422);
    expect(await r.post("/tools/custom/gone", {})).toMatchObject({
      status: 502,
      body: { error: "backend down" },
    });
    await r.registry.close();
  });
});

describe("secrets", () => {
  it("redacts error texts and log lines but returns results unredacted to the script", async () => {
    const r = setup();
    const boom = await r.post("/tools/custom/boom", {});
    expect(boom.body.error).toBe("built-in tool boom failed: bad credentials [REDACTED:SECRET_KEY]");
    const leak = await r.post("/tools/custom/leak", {});
    expect(leak.body.result).toEqual({ key: SECRET });
    expect(r.logs.join("\n")).not.toContain(SECRET);
    expect(r.logs.join("\n")).not.toContain(TOKEN);
    expect(r.logs.some((l) => l.includes("custom:leak") && l.includes("[REDACTED:SECRET_KEY]"))).toBe(true);
    expect(r.logs.some((l) => /^bridge POST \/tools\/custom\/boom 422 /.test(l))).toBe(true);
    await r.registry.close();
  });
});

describe("get_api_spec", () => {
  const spec = (body: unknown) => s.post("/tools/virtual/get_api_spec", body as object);

  it("accepts a name, a list and a JSON-encoded list, and answers the text in result", async () => {
    const one = await spec({ tool_name: "count" });
    const list = await spec({ tool_name: ["count", "custom:echo"] });
    const encoded = await spec({ tool_name: '["count","custom:echo"]' });
    expect(one.status).toBe(200);
    expect(one.body.result).toBe(
      [
        "Base URL: http://localhost",
        "Auth: Authorization: Bearer $MCP_API_TOKEN",
        'Reply: JSON {"success": true|false, "result": <the tool\'s result>, "error": <text>|null}',
        "",
        "POST http://localhost/tools/custom/count",
        "Tool: custom:count",
        "Counts its calls.",
        "Parameters:",
        "  n: integer (required)",
        "  tags: array<string>",
        "",
      ].join("\n"),
    );
    expect(list.body.result).toBe(encoded.body.result);
    expect(String(list.body.result)).toContain("POST http://localhost/tools/custom/echo");
  });

  it("answers 400 / 403 / 404 with success:false", async () => {
    expect((await spec({})).status).toBe(400);
    expect((await spec({ tool_name: "ghost/x" })).body.error).toBe(
      'unknown MCP server "ghost" (configured: none)',
    );
    const r = setup({ allowedTools: ["custom:echo"] });
    const forbidden = await r.post("/tools/virtual/get_api_spec", { tool_name: ["echo", "count"] });
    expect(forbidden).toMatchObject({
      status: 403,
      body: { success: false, error: "tool custom:count is not allowed in this run" },
    });
    await r.registry.close();
  });
});
