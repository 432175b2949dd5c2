import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RatchetError } from "../core/index.js";
import { compileBridgeConfig } from "./config.js";
import { configBaseDir, loadBridgeConfig, loadWorkspaceBridgeConfig } from "./config-file.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-bridge-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function violation(config: unknown): string {
  try {
    compileBridgeConfig(config as Record<string, unknown>);
  } catch (e) {
    expect(e).toBeInstanceOf(RatchetError);
    expect((e as RatchetError).code).toBe("schema_violation");
    return (e as RatchetError).message;
  }
  throw new Error("expected a schema violation");
}

describe("compileBridgeConfig", () => {
  it("reads stdio and HTTP servers and custom tools, applying defaults", () => {
    const c = compileBridgeConfig({
      baseDir: "/ws",
      mcpServers: {
        fx: { command: "node", args: ["server.mjs"], env: { A: "1" }, cwd: "tools" },
        remote: { url: "http://127.0.0.1:9/mcp", headers: { "X-Key": "k" }, type: "http" },
        off: { command: "x", disabled: true },
      },
      customTools: {
        up: { command: "python3", args: ["up.py"], description: "Up.", timeout_ms: 500 },
      },
    });
    expect(c.servers.get("fx")).toEqual({
      kind: "stdio",
      name: "fx",
      command: "node",
      args: ["server.mjs"],
      env: { A: "1" },
      cwd: "/ws/tools",
    });
    expect(c.servers.get("remote")).toMatchObject({ kind: "http", headers: { "X-Key": "k" } });
    expect(c.servers.has("off")).toBe(false);
    expect(c.customTools.get("up")).toEqual({
      name: "up",
      command: "python3",
      args: ["up.py"],
      description: "Up.",
      inputSchema: { type: "object" },
      timeoutMs: 500,
      cwd: "/ws",
      env: {},
    });
  });

  it("names the offending field", () => {
    expect(violation({ mcpServers: { fx: {} } })).toMatch(
      "field `mcpServers.fx` needs `command` (stdio) or `url` (HTTP)",
    );
    expect(violation({ mcpServers: { fx: { command: "n", args: "x" } } })).toMatch(
      "field `mcpServers.fx.args` must be an array of strings",
    );
    expect(violation({ mcpServers: { fx: { command: "n", arg: [] } } })).toMatch(
      "field `mcpServers.fx.arg` is not a known field",
    );
    expect(violation({ mcpServers: { fx: { url: "ftp://x" } } })).toMatch(
      "field `mcpServers.fx.url` must be an http:// or https:// URL",
    );
    expect(violation({ mcpServers: { "a/b": { command: "n" } } })).toMatch(
      "field `mcpServers.a/b` must be 1-128 characters",
    );
    expect(violation({ customTools: { t: { command: "x", timeout_ms: -1 } } })).toMatch(
      "field `customTools.t.timeout_ms`",
    );
    expect(violation({ customTools: { t: { command: "x", input_schema: [] } } })).toMatch(
      "field `customTools.t.input_schema`",
    );
    expect(violation({ customTools: { t: { command: "x", env: { A: 1 } } } })).toMatch(
      "field `customTools.t.env.A` must be a string",
    );
    expect(violation({ customTools: [] })).toMatch("field `customTools` must be an object of tools");
  });
});

describe("config files", () => {
  it("resolves relative paths against the workspace folder for .ratchet/config.json", () => {
    expect(configBaseDir("/ws/.ratchet/config.json")).toBe("/ws");
    expect(configBaseDir("/etc/tools/bridge.json")).toBe("/etc/tools");
  });

  it("loads the bridge part, ignores other top-level keys and names the file in errors", () => {
    const ws = join(dir, "ws");
    mkdirSync(join(ws, ".ratchet"), { recursive: true });
    expect(loadWorkspaceBridgeConfig(join(ws, ".ratchet"))).toEqual({
      baseDir: ws,
      source: join(ws, ".ratchet", "config.json"),
    });
    const path = join(ws, ".ratchet", "config.json");
    writeFileSync(path, JSON.stringify({ models: { x: 1 }, customTools: { t: { command: "true" } } }));
    expect(loadWorkspaceBridgeConfig(join(ws, ".ratchet"))).toEqual({
      baseDir: ws,
      source: path,
      customTools: { t: { command: "true" } },
    });
    writeFileSync(path, "{nope");
    expect(() => loadBridgeConfig(path)).toThrow(/is not valid JSON/);
    writeFileSync(path, JSON.stringify({ mcpServers: { fx: { command: 1 } } }));
    expect(() => loadBridgeConfig(path)).toThrow(
      `${path}: field \`mcpServers.fx.command\` must be a non-empty string`,
    );
    expect(() => loadBridgeConfig(join(dir, "missing.json"))).toThrow(/cannot read config/);
  });
});
