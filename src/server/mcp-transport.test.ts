/**
 * The transport edges of `/mcp` and `ratchet mcp`: stateless streamable HTTP answers GET/DELETE
 * with 405 + `Allow` (so clients stop reopening an event stream), a CORS preflight is answered only
 * for this server's own origins (echoed, never `*`), and a stdio client launched outside a
 * workspace gets a tool error naming the problem instead of a closed connection.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN, childEnv } from "../../test/helpers/cli.js";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

const mcpUrl = () => `${fx.server.url}/mcp`;
const ownOrigin = () => new URL(fx.server.url).origin;

describe("/mcp methods", () => {
  it("answers GET and DELETE with 405 and Allow: POST, OPTIONS (with or without the token)", async () => {
    for (const method of ["GET", "DELETE"])
      for (const auth of [{ authorization: `Bearer ${TOKEN}` }, {}] as Record<string, string>[]) {
        const r = await fetch(mcpUrl(), { method, headers: { accept: "text/event-stream", ...auth } });
        expect(r.status).toBe(405);
        expect(r.headers.get("allow")).toBe("POST, OPTIONS");
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed");
      }
    expect(fx.server.ctx.store.lastEventId()).toBe(0);
  });
});

describe("/mcp CORS", () => {
  const preflight = (origin: string | undefined) =>
    fetch(mcpUrl(), {
      method: "OPTIONS",
      headers: {
        ...(origin ? { origin } : {}),
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });

  it("answers a preflight from this server's origin with its origin echoed, never *", async () => {
    const r = await preflight(ownOrigin());
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-origin")).toBe(ownOrigin());
    expect(r.headers.get("access-control-allow-methods")).toContain("POST");
    expect(r.headers.get("access-control-allow-headers")).toContain("authorization");
    expect(r.headers.get("access-control-allow-credentials")).toBe("true");
    expect(r.headers.get("vary")).toContain("Origin");
  });

  it("refuses a preflight from a foreign page, a loopback page on another port and a null origin", async () => {
    const port = Number(new URL(fx.server.url).port);
    for (const origin of ["http://evil.example", `http://127.0.0.1:${port + 1}`, "null", "*"]) {
      const r = await preflight(origin);
      expect(r.status, origin).toBe(403);
      expect(r.headers.get("access-control-allow-origin"), origin).toBeNull();
    }
  });

  it("sends no CORS headers to a client without an Origin", async () => {
    const r = await preflight(undefined);
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("puts the allow-origin header on a POST from this server's origin", async () => {
    const r = await fetch(mcpUrl(), {
      method: "POST",
      headers: {
        origin: ownOrigin(),
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe(ownOrigin());
    expect(((await r.json()) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0);
  });
});

describe("ratchet mcp outside a workspace", () => {
  it("starts, lists its tools, and answers every call with an error naming the problem", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-nows-")));
    const client = new Client({ name: "ratchet-test", version: "1.0.0" });
    const env = childEnv({ RATCHET_DB: undefined, ORCH_DB: undefined });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp"],
      cwd: dir,
      env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
      stderr: "pipe",
    });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("list_plans");
      for (const [name, args] of [
        ["list_plans", {}],
        ["publish_plan", { goal: "g", steps: [{ title: "t", type: "THINKING" }] }],
      ] as const) {
        const r = (await client.callTool({ name, arguments: args })) as {
          isError?: boolean;
          structuredContent?: { error: { code: string; message: string } };
        };
        expect(r.isError).toBe(true);
        expect(r.structuredContent!.error.code).toBe("workspace_not_found");
        expect(r.structuredContent!.error.message).toBe(
          `no Ratchet workspace found from ${dir}; run \`ratchet init\` or set RATCHET_DB`,
        );
      }
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
