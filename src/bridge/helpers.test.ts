// The script helpers, run as a script would run them: `python3` importing ratchet_tools from
// PYTHONPATH, and `node` importing ./ratchet-tools.mjs copied next to the script, against a live bridge.
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { helperFiles } from "./helper-files.js";
import { type Bridge, startBridge } from "./server.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURE = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
const config = { baseDir: ROOT, mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } };
const dir = mkdtempSync(join(tmpdir(), "ratchet-helpers-"));

let bridge: Bridge;
beforeAll(async () => {
  bridge = await startBridge({ config });
});
afterAll(async () => {
  await bridge.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(command: string, args: string[], env: Record<string, string>, cwd = dir) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((res, rej) => {
    const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? "", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", rej);
    child.on("close", (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

const freePort = () =>
  new Promise<number>((res) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });

/**
 * An address where nothing listens, for the connection-refused tests: a free port on a random
 * loopback address other than 127.0.0.1 (Linux routes all of 127/8 to lo), so another test file
 * that binds a port on 127.0.0.1 in the meantime cannot answer there.
 */
const refusedUrl = async (): Promise<string> => {
  const port = await freePort();
  const octet = () => 2 + Math.floor(Math.random() * 250);
  return `http://127.${octet()}.${octet()}.${octet()}:${port}`;
};

const env = () => ({ MCP_API_URL: bridge.url, MCP_API_TOKEN: bridge.token });

describe("Python helper (ratchet_tools.py)", () => {
  const python = (code: string, extra: Record<string, string> = env()) =>
    // No __pycache__ next to the shipped helper.
    run("python3", ["-c", code], {
      PYTHONPATH: dirname(helperFiles().python),
      PYTHONDONTWRITEBYTECODE: "1",
      ...extra,
    });

  it("calls MCP and custom tools, reads specs, and raises ToolError on success:false", async () => {
    const r = await python(`
import json
from ratchet_tools import call_mcp, call_custom, api_spec, ToolError
out = {}
out["add"] = call_mcp("fx", "add", {"a": 2, "b": 3})
out["echo"] = call_custom("echo", {"text": "hi"})
out["spec"] = api_spec(["fx/add", "echo"])
out["spec1"] = api_spec("fx/add")
for key, fn in [("fail", lambda: call_mcp("fx", "fail", {})), ("bad", lambda: call_mcp("fx", "add", {"a": "x", "b": 1})), ("ghost", lambda: call_custom("ghost"))]:
    try:
        fn()
        out[key] = "no error"
    except ToolError as e:
        out[key] = [str(e), e.status]
print(json.dumps(out))
`);
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    expect(out.add).toBe(5);
    expect(out.echo).toEqual({ text: "hi" });
    expect(out.spec).toContain(`POST ${bridge.url}/tools/mcp/fx/add`);
    expect(out.spec).toContain(`POST ${bridge.url}/tools/custom/echo`);
    expect(out.spec1.startsWith(`Base URL: ${bridge.url}\nAuth: Authorization: Bearer $MCP_API_TOKEN`)).toBe(
      true,
    );
    expect(out.fail).toEqual(["MCP tool fx/fail reported an error: this tool always fails", 422]);
    expect(out.bad).toEqual(['mcp:fx/add: argument `a` must be a number (got string "x")', 400]);
    expect(out.ghost[1]).toBe(404);
  });

  it("retries on connection refused, then gives up with ToolError", async () => {
    const url = await refusedUrl();
    const r = await python(
      `
import ratchet_tools
ratchet_tools.BACKOFF_BASE_S = 0.01
try:
    ratchet_tools.call_custom("echo", {})
except ratchet_tools.ToolError as e:
    print(e, e.status)
`,
      { MCP_API_URL: url, MCP_API_TOKEN: "x" },
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `^cannot reach the tool bridge at ${url.replace(/\./g, "\\.")} after 5 attempt\\(s\\): .*refused.* None\\n$`,
        "i",
      ),
    );
  });

  it("retries until a bridge that starts late answers", async () => {
    const port = await freePort();
    const pending = python(
      `
import ratchet_tools
ratchet_tools.MAX_ATTEMPTS = 10
ratchet_tools.BACKOFF_BASE_S = 0.1
print(ratchet_tools.call_custom("echo", {"late": True}))
`,
      { MCP_API_URL: `http://127.0.0.1:${port}`, MCP_API_TOKEN: "late-token" },
    );
    await new Promise((r) => setTimeout(r, 300));
    const late = await startBridge({ config: {}, port, token: "late-token" });
    try {
      const r = await pending;
      expect(r.stderr).toBe("");
      expect(r.stdout.trim()).toBe("{'late': True}");
    } finally {
      await late.close();
    }
  });

  it("says when MCP_API_URL is not set", async () => {
    const r = await python(
      "from ratchet_tools import call_custom, ToolError\ntry:\n    call_custom('echo')\nexcept ToolError as e:\n    print(e)",
      {},
    );
    expect(r.stdout.trim()).toBe(
      "MCP_API_URL is not set: run this script through Ratchet (or export MCP_API_URL)",
    );
  });
});

describe("JavaScript helper (ratchet-tools.mjs)", () => {
  const node = (code: string, extra: Record<string, string> = env()) => {
    copyFileSync(helperFiles().javascript, join(dir, "ratchet-tools.mjs"));
    const main = join(dir, "main.mjs");
    writeFileSync(main, code);
    return run(process.execPath, [main], extra);
  };

  it("calls MCP and custom tools, reads specs, and throws ToolError on success:false", async () => {
    const r = await node(`
import { callMcp, callCustom, apiSpec, ToolError } from "./ratchet-tools.mjs";
const out = {};
out.add = await callMcp("fx", "add", { a: 2, b: 3 });
out.echo = await callCustom("echo", { text: "hi" });
out.spec = await apiSpec(["fx/add", "echo"]);
for (const [key, fn] of [["fail", () => callMcp("fx", "fail", {})], ["bad", () => callMcp("fx", "add", { a: "x", b: 1 })]]) {
  try { await fn(); out[key] = "no error"; } catch (e) { out[key] = [e instanceof ToolError, e.name, e.message, e.status]; }
}
console.log(JSON.stringify(out));
`);
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    expect(out.add).toBe(5);
    expect(out.echo).toEqual({ text: "hi" });
    expect(out.spec).toContain(`POST ${bridge.url}/tools/mcp/fx/add`);
    expect(out.fail).toEqual([
      true,
      "ToolError",
      "MCP tool fx/fail reported an error: this tool always fails",
      422,
    ]);
    expect(out.bad).toEqual([
      true,
      "ToolError",
      'mcp:fx/add: argument `a` must be a number (got string "x")',
      400,
    ]);
  });

  it("retries on connection refused, then gives up with ToolError", async () => {
    const url = await refusedUrl();
    const r = await node(
      `
import { callCustom, ToolError, MAX_ATTEMPTS } from "./ratchet-tools.mjs";
try { await callCustom("echo", {}); } catch (e) { console.log(e instanceof ToolError, MAX_ATTEMPTS, e.message); }
`,
      { MCP_API_URL: url, MCP_API_TOKEN: "x" },
    );
    expect(r.stdout.trim()).toBe(
      `true 5 cannot reach the tool bridge at ${url} after 5 attempt(s): ECONNREFUSED`,
    );
  });
});
