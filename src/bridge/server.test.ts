// A real listening bridge: port, token, auth over HTTP, per-bridge tokens, close.
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { helperFiles } from "./helper-files.js";
import { type Bridge, bridgeEnv, startBridge } from "./server.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURE = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
const config = { baseDir: ROOT, mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } };

const bridges: Bridge[] = [];
afterAll(async () => {
  await Promise.all(bridges.map((b) => b.close()));
});

async function start(opts: Partial<Parameters<typeof startBridge>[0]> = {}): Promise<Bridge> {
  const b = await startBridge({ config, ...opts });
  bridges.push(b);
  return b;
}

async function post(b: Pick<Bridge, "url" | "token">, path: string, body: unknown, token = b.token) {
  const res = await fetch(`${b.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { success: boolean; result: unknown; error: string | null },
  };
}

const freePort = () =>
  new Promise<number>((res) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("startBridge", () => {
  it("listens on 127.0.0.1 on an ephemeral port with a fresh 32-byte token", async () => {
    const logs: string[] = [];
    const b = await start({ log: (l) => logs.push(l) });
    expect(b.url).toBe(`http://127.0.0.1:${b.port}`);
    expect(b.port).toBeGreaterThan(0);
    expect(b.token).toMatch(/^[0-9a-f]{64}$/);
    expect(bridgeEnv(b)).toEqual({ MCP_API_URL: b.url, MCP_API_TOKEN: b.token });
    const health = await fetch(`${b.url}/health`);
    expect(await health.json()).toEqual({ success: true, result: "ok", error: null });
    expect(await post(b, "/tools/mcp/fx/add", { a: 1, b: 2 })).toEqual({
      status: 200,
      body: { success: true, result: 3, error: null },
    });
    expect(await post(b, "/tools/custom/echo", { x: 1 }, "wrong")).toMatchObject({
      status: 401,
      body: { success: false, result: null, error: "missing or invalid bearer token" },
    });
    expect(logs.join("\n")).not.toContain(b.token);
    expect(logs.some((l) => l.startsWith("bridge POST /tools/mcp/fx/add 200 "))).toBe(true);
  });

  it("gives every bridge its own token: one run's token does not open another's bridge", async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(a.token).not.toBe(b.token);
    expect(a.port).not.toBe(b.port);
    expect((await post(b, "/tools/custom/echo", {}, a.token)).status).toBe(401);
    expect((await post(b, "/tools/custom/echo", {}, b.token)).status).toBe(200);
  });

  it("scoped tokens reach only their tools (on top of the bridge's allowlist), and get_api_spec shows only those", async () => {
    const logs: string[] = [];
    const b = await start({ allowedTools: ["mcp:fx/*", "custom:echo"], log: (l) => logs.push(l) });
    const scoped = b.scopedToken(["mcp:fx/add", "custom:count"]);
    expect(scoped).toMatch(/^[0-9a-f]{64}$/);
    expect(scoped).not.toBe(b.token);
    expect(await post(b, "/tools/mcp/fx/add", { a: 2, b: 3 }, scoped)).toMatchObject({
      status: 200,
      body: { result: 5 },
    });
    expect(await post(b, "/tools/mcp/fx/pid", {}, scoped)).toMatchObject({
      status: 403,
      body: { error: "tool mcp:fx/pid is not allowed in this run" },
    });
    // Allowed by the token, not by the bridge: still refused.
    expect((await post(b, "/tools/custom/count", {}, scoped)).status).toBe(403);
    expect((await post(b, "/tools/custom/echo", {}, scoped)).status).toBe(403);
    // The bridge's own token keeps the bridge's allowlist.
    expect((await post(b, "/tools/mcp/fx/pid", {}, b.token)).status).toBe(200);
    const spec = await post(b, "/tools/virtual/get_api_spec", { tool_name: "fx/*" }, scoped);
    expect(spec.status).toBe(200);
    expect(spec.body.result).toContain("/tools/mcp/fx/add");
    expect(spec.body.result).not.toContain("/tools/mcp/fx/pid");
    expect((await post(b, "/tools/virtual/get_api_spec", { tool_name: "mcp:fx/pid" }, scoped)).status).toBe(
      403,
    );
    expect(logs.join("\n")).not.toContain(scoped);
    // One bridge's scoped token opens no other bridge.
    const other = await start();
    expect((await post(other, "/tools/custom/echo", {}, scoped)).status).toBe(401);
  });

  it("listens on a given port with a given token", async () => {
    const port = await freePort();
    const b = await start({ port, token: "fixed-token-for-this-test" });
    expect(b.port).toBe(port);
    expect((await post(b, "/tools/custom/echo", { y: 2 })).body.result).toEqual({ y: 2 });
  });

  it("rejects a bad config naming the field", async () => {
    await expect(startBridge({ config: { mcpServers: { fx: { command: 7 } } } })).rejects.toThrow(
      "field `mcpServers.fx.command` must be a non-empty string",
    );
  });

  it("close() stops listening and stops its MCP servers", async () => {
    const b = await startBridge({ config });
    const pid = (await post(b, "/tools/mcp/fx/pid", {})).body.result as number;
    expect(alive(pid)).toBe(true);
    await b.close();
    await b.close(); // idempotent
    await expect(fetch(`${b.url}/health`)).rejects.toThrow();
    for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
    expect(alive(pid)).toBe(false);
  });
});

describe("helperFiles", () => {
  it("points at the Python and JavaScript helpers", () => {
    const h = helperFiles();
    expect(h.python.endsWith(join("bridge", "helpers", "ratchet_tools.py"))).toBe(true);
    expect(h.javascript.endsWith(join("bridge", "helpers", "ratchet-tools.mjs"))).toBe(true);
    expect(existsSync(h.python) && existsSync(h.javascript)).toBe(true);
  });
});
