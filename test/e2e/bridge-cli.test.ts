/**
 * The tool bridge through the BUILT CLI: `ratchet bridge serve` in a workspace whose
 * `.ratchet/config.json` points at the fixture MCP server, called with fetch, stopped with
 * SIGTERM; `ratchet tools list` and `ratchet tools spec`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  makeTempDir,
  makeWorkspace,
  ROOT,
  ratchet,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

const FIXTURE = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");

let ws: TestWorkspace;
const config = {
  mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } },
  customTools: {
    upper: {
      command: process.execPath,
      args: ["tools/upper.mjs"],
      description: "Uppercases text.",
      input_schema: {
        type: "object",
        properties: { text: { type: "string", description: "what to uppercase" } },
        required: ["text"],
        additionalProperties: false,
      },
    },
  },
  somethingElse: { owned: "by another module" },
};

beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-e2e-bridge-");
  writeFileSync(join(ws.ratchetDir, "config.json"), JSON.stringify(config));
  mkdirSync(join(ws.dir, "tools"));
  writeFileSync(
    join(ws.dir, "tools", "upper.mjs"),
    'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.stringify(JSON.parse(s).text.toUpperCase())));',
  );
});
afterAll(() => ws?.remove());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function post(url: string, token: string | undefined, path: string, body: unknown) {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { success: boolean; result: unknown; error: string | null },
  };
}

describe("ratchet bridge serve", () => {
  it("serves the workspace's tools until SIGTERM (--port 0 --print-token)", async () => {
    const cli = startRatchet(["bridge", "serve", "--port", "0", "--print-token"], { cwd: ws.dir });
    await waitFor(() => cli.stdoutSoFar().includes("\n"), "the bridge's JSON line");
    const info = JSON.parse(cli.stdoutSoFar().split("\n")[0]!) as {
      url: string;
      port: number;
      token: string;
    };
    expect(info.url).toBe(`http://127.0.0.1:${info.port}`);
    expect(info.token).toMatch(/^[0-9a-f]{64}$/);

    expect((await fetch(`${info.url}/health`)).status).toBe(200);
    expect(await post(info.url, undefined, "/tools/mcp/fx/add", { a: 1, b: 2 })).toMatchObject({
      status: 401,
      body: { success: false, result: null },
    });
    expect(await post(info.url, info.token, "/tools/mcp/fx/add", { a: 1, b: 2 })).toEqual({
      status: 200,
      body: { success: true, result: 3, error: null },
    });
    expect(await post(info.url, info.token, "/tools/custom/upper", { text: "abc" })).toEqual({
      status: 200,
      body: { success: true, result: "ABC", error: null },
    });
    expect((await post(info.url, info.token, "/tools/custom/upper", { text: 1 })).body.error).toBe(
      "custom:upper: argument `text` must be a string (got number 1)",
    );
    const pid = (await post(info.url, info.token, "/tools/mcp/fx/pid", {})).body.result as number;

    cli.child.kill("SIGTERM");
    const r = await cli.done;
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/bridge POST \/tools\/mcp\/fx\/add 200 /);
    expect(r.stderr).not.toContain(info.token);
    await waitFor(() => !alive(pid), "the MCP server to stop");
  });

  it("prints the token once on stderr without --print-token", async () => {
    const cli = startRatchet(["bridge", "serve", "--quiet"], { cwd: ws.dir });
    await waitFor(() => /token [0-9a-f]{64}/.test(cli.stderrSoFar()), "the token banner");
    const info = JSON.parse(cli.stdoutSoFar().split("\n")[0]!) as Record<string, unknown>;
    expect(Object.keys(info).sort()).toEqual(["port", "url"]);
    const token = /token ([0-9a-f]{64})/.exec(cli.stderrSoFar())![1]!;
    expect((await post(String(info.url), token, "/tools/custom/echo", { x: 1 })).body.result).toEqual({
      x: 1,
    });
    cli.child.kill("SIGINT");
    expect((await cli.done).status).toBe(0);
  });

  it("refuses a bad --port and a bad config with exit 2 naming the problem", async () => {
    const r = await ws.run(["bridge", "serve", "--port", "70000"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--port must be an integer from 0 to 65535/);
    const bad = join(ws.dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ customTools: { t: { args: [] } } }));
    const r2 = await ws.run(["bridge", "serve", "--config", bad]);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain("field `customTools.t.command` must be a non-empty string");
  });

  it("refuses a port already in use with exit 2", async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()));
    const { port } = holder.address() as AddressInfo;
    try {
      const r = await ws.run(["bridge", "serve", "--port", String(port)]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
    } finally {
      holder.close();
    }
  });
});

describe("ratchet tools", () => {
  it("list --json prints every tool with its route and schema", async () => {
    const r = await ws.run(["tools", "list", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { tools: { name: string; route: string }[]; errors: unknown[] };
    expect(out.errors).toEqual([]);
    expect(out.tools.map((t) => t.name)).toEqual([
      "custom:echo",
      "custom:upper",
      "mcp:fx/add",
      "mcp:fx/echo",
      "mcp:fx/slow",
      "mcp:fx/peak",
      "mcp:fx/crash",
      "mcp:fx/fail",
      "mcp:fx/pid",
      "mcp:fx/env",
    ]);
    expect(out.tools[2]).toMatchObject({
      route: "POST $MCP_API_URL/tools/mcp/fx/add",
      description: "Adds two numbers.",
    });
  });

  it("list prints one line per tool", async () => {
    const r = await ws.run(["tools", "list"]);
    expect(r.status).toBe(0);
    expect(r.lines).toContain("custom:upper  Uppercases text.");
    expect(r.lines).toContain("mcp:fx/add    Adds two numbers.");
  });

  it("spec prints the get_api_spec text", async () => {
    const r = await ws.run(["tools", "spec", "fx/add", "upper"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      [
        "Base URL: $MCP_API_URL",
        "Auth: Authorization: Bearer $MCP_API_TOKEN",
        'Reply: JSON {"success": true|false, "result": <the tool\'s result>, "error": <text>|null}',
        "",
        "POST $MCP_API_URL/tools/mcp/fx/add",
        "Tool: mcp:fx/add",
        "Adds two numbers.",
        "Parameters:",
        "  a: number (required) - first addend",
        "  b: number (required) - second addend",
        "",
        "POST $MCP_API_URL/tools/custom/upper",
        "Tool: custom:upper",
        "Uppercases text.",
        "Parameters:",
        "  text: string (required) - what to uppercase",
        "",
      ].join("\n"),
    );
  });

  it("spec exits 3 naming an unknown tool or server", async () => {
    const r = await ws.run(["tools", "spec", "fx/nope"]);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('MCP server fx has no tool "nope"');
    const r2 = await ws.run(["tools", "spec", "ghost/x"]);
    expect(r2.status).toBe(3);
    expect(r2.stderr).toContain('unknown MCP server "ghost" (configured: fx)');
  });

  it("list exits 8 when a server cannot be listed, and still prints the others (--config)", async () => {
    const dir = makeTempDir("ratchet-e2e-bridge-cfg-");
    const path = join(dir, "tools.json");
    writeFileSync(
      path,
      JSON.stringify({
        mcpServers: { fx: config.mcpServers.fx, broken: { command: "ratchet-no-such-server" } },
      }),
    );
    const r = await ratchet(["tools", "list", "--config", path], { cwd: dir });
    expect(r.status).toBe(8);
    expect(r.lines).toContain("mcp:fx/add    Adds two numbers.");
    expect(r.stderr).toMatch(/MCP server broken: cannot start MCP server broken \(ratchet-no-such-server\)/);
  });
});
