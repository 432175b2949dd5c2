/**
 * Learned scripts calling tools through the run's tool bridge, driven through the BUILT `ratchet`
 * CLI with real processes: python3 (under Landlock or bubblewrap where they work), node (under its permission
 * model), the real fixture MCP server test/fixtures/mcp/echo-server.mjs and a custom command tool,
 * both declared in the test workspace's `.ratchet/config.json`. Fixtures: test/fixtures/workflows/bridge/.
 */
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { helperFiles } from "../../src/bridge/helper-files.js";
import { isWithin } from "../../src/exec/read-roots.js";
import {
  assertBuilt,
  type CliResult,
  makeWorkspace,
  query,
  ROOT,
  type TestWorkspace,
} from "../helpers/cli.js";
import { historyOf, runsOf } from "../helpers/run-home.js";

const FIXTURE = join(ROOT, "test", "fixtures", "workflows", "bridge");
const MCP_SERVER = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
const SECRET = "sk-bridge-Zq81-never-in-logs-7319";
const ENV = { SECRET_API_KEY: SECRET };

const workspaces: TestWorkspace[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** A workspace with the bridge fixture workflow and a `.ratchet/config.json` declaring its tools. */
async function setup(): Promise<{ ws: TestWorkspace; wf: string }> {
  const ws = await makeWorkspace("ratchet-e2e-bridge-");
  workspaces.push(ws);
  const wf = join(ws.dir, "workflows", "bridge");
  cpSync(FIXTURE, wf, { recursive: true });
  writeFileSync(
    join(ws.ratchetDir, "config.json"),
    JSON.stringify(
      {
        mcpServers: { "echo-fixture": { command: process.execPath, args: [MCP_SERVER] } },
        customTools: {
          upper: {
            command: process.execPath,
            args: ["workflows/bridge/tools/upper.mjs"],
            description: "Upper-cases a text.",
            input_schema: {
              type: "object",
              properties: { text: { type: "string" } },
              required: ["text"],
              additionalProperties: false,
            },
          },
        },
      },
      null,
      2,
    ),
  );
  return { ws, wf };
}

interface StepJson {
  step_id: string;
  ledger_step_id: string;
  fast_path: boolean;
  outcome: string;
  exit_code: number | null;
  tokens: number;
  error: string | null;
  write_protection: string;
}
interface RunJson {
  run_id: string;
  plan_id: string;
  status: string;
  steps: StepJson[];
  write_protection: { python: string; javascript: string; reason: string };
}

function json(r: CliResult): RunJson {
  try {
    return JSON.parse(r.stdout) as RunJson;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

function runStep(ws: TestWorkspace, wf: string, step: string): Promise<CliResult> {
  return ws.run(["run", wf, "--only", step, "--json"], { env: ENV });
}

function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** The ledger row and the ledger log of a run's only step. */
function ledgerStep(ws: TestWorkspace, run: RunJson) {
  const id = run.steps[0]?.ledger_step_id;
  const row = query<{ status: string; tokens: number; exit_code: number | null }>(
    ws,
    "SELECT status, tokens, exit_code FROM steps WHERE step_id = ?",
    id,
  )[0];
  const log = query<{ text: string }>(ws, "SELECT text FROM step_logs WHERE step_id = ?", id)
    .map((l) => l.text)
    .join("\n");
  return { row, log };
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("scripts call tools through the run's bridge", () => {
  test("a Python main.py calls an MCP tool with call_mcp (ratchet run, then run-saved): passes with 0 tokens; the helper is never in learnings/; the MCP server stops with the run", async () => {
    const { ws, wf } = await setup();
    const learnedBefore = filesUnder(join(wf, "learnings")).sort();
    const r = await runStep(ws, wf, "py-add");
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json(r);
    expect(run.status).toBe("passed");
    expect(run.steps[0]).toMatchObject({
      step_id: "py-add",
      fast_path: true,
      outcome: "passed",
      exit_code: 0,
      tokens: 0,
      error: null,
    });
    // Under Landlock or bubblewrap where they work: the sandbox keeps loopback reachable.
    expect(run.steps[0]?.write_protection).toBe(run.write_protection.python);
    const out = join(runsOf(wf), run.run_id, "py-add");
    const result = readJson(join(out, "result.json"));
    expect(result.sum).toBe(5);

    const { row, log } = ledgerStep(ws, run);
    expect(row).toEqual({ status: "COMPLETED", tokens: 0, exit_code: 0 });
    expect(log).toContain("2 + 3 = 5");
    expect(log).toContain("validation: ok");
    expect(log).toMatch(/--- tool bridge ---\n[\s\S]*bridge POST \/tools\/mcp\/echo-fixture\/add 200 /);

    // Under Landlock the script imports the package's own helper (on PYTHONPATH, outside every write
    // root) unless the checkout lies in the temporary folder (a CI clone under /tmp); elsewhere a
    // copy sits next to the script in code/. Never in learnings/; metadata hashes main.py alone.
    const shared =
      run.write_protection.python === "landlock" && !isWithin(tmpdir(), dirname(helperFiles().python));
    expect(readdirSync(join(out, "code")).sort()).toEqual(
      shared ? ["main.py"] : ["main.py", "ratchet_tools.py"],
    );
    const learned = join(wf, "learnings", "py-add");
    expect(filesUnder(join(wf, "learnings")).sort()).toEqual(learnedBefore);
    expect(readdirSync(learned).sort()).toEqual(["main.py"]);
    const meta = readJson(join(historyOf(wf, "py-add"), "script_metadata.json"));
    expect(meta).toMatchObject({ total_runs: 1, successful_runs: 1, script_version: 1 });
    expect(meta.script_sha256).toBe(
      createHash("sha256")
        .update(readFileSync(join(learned, "main.py")))
        .digest("hex"),
    );

    // The bridge (and the MCP server it started) ended with the run.
    expect(typeof result.server_pid).toBe("number");
    expect(processAlive(result.server_pid as number)).toBe(false);

    // run-saved starts its own bridge too.
    const saved = await ws.run(["workflow", "run-saved", wf, "py-add", "--json"], { env: ENV });
    expect(saved.status, saved.stderr + saved.stdout).toBe(0);
    const one = json(saved);
    expect(one.steps[0]).toMatchObject({ outcome: "passed", tokens: 0 });
    expect(readJson(join(runsOf(wf), one.run_id, "py-add", "result.json")).sum).toBe(5);
  });

  test("a JavaScript main.mjs calls an MCP tool with callMcp under the Node permission model", async () => {
    const { ws, wf } = await setup();
    const r = await runStep(ws, wf, "js-add");
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json(r);
    expect(run.steps[0]).toMatchObject({ step_id: "js-add", outcome: "passed", exit_code: 0, tokens: 0 });
    // Under the Node permission model where this Node has it: fetch to loopback is allowed.
    expect(run.steps[0]?.write_protection).toBe(run.write_protection.javascript);
    const out = join(runsOf(wf), run.run_id, "js-add");
    expect(readJson(join(out, "result.json"))).toEqual({ sum: 5 });
    expect(readdirSync(join(out, "code")).sort()).toEqual(["main.mjs", "ratchet-tools.mjs"]);
    expect(existsSync(join(wf, "learnings", "js-add", "ratchet-tools.mjs"))).toBe(false);
    const { row, log } = ledgerStep(ws, run);
    expect(row).toEqual({ status: "COMPLETED", tokens: 0, exit_code: 0 });
    expect(log).toContain("2 + 3 = 5");
  });

  test("a custom command tool through call_custom", async () => {
    const { ws, wf } = await setup();
    const r = await runStep(ws, wf, "custom");
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json(r);
    expect(run.steps[0]).toMatchObject({ step_id: "custom", outcome: "passed", tokens: 0 });
    expect(readJson(join(runsOf(wf), run.run_id, "custom", "result.json"))).toEqual({
      upper: "RATCHET",
    });
    expect(ledgerStep(ws, run).log).toMatch(/bridge POST \/tools\/custom\/upper 200 /);
  });

  test("a step with allowed_tools gets a token of its own: its tools answer, any other is refused with 403", async () => {
    const { ws, wf } = await setup();
    const r = await runStep(ws, wf, "scoped");
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json(r);
    expect(readJson(join(runsOf(wf), run.run_id, "scoped", "result.json"))).toEqual({
      sum: 5,
      upper_status: 403,
    });
    const { log } = ledgerStep(ws, run);
    expect(log).toMatch(/bridge POST \/tools\/mcp\/echo-fixture\/add 200 /);
    expect(log).toMatch(
      /bridge POST \/tools\/custom\/upper 403 .*tool custom:upper is not allowed in this run/,
    );
  });

  test("an unknown tool: the script's ToolError carries the bridge's error text and the step fails with it (exit 8)", async () => {
    const { ws, wf } = await setup();
    const r = await runStep(ws, wf, "unknown-tool");
    expect(r.status, r.stderr + r.stdout).toBe(8);
    const step = json(r).steps[0];
    const bridgeText =
      'tool call failed with HTTP 404: MCP server echo-fixture has no tool "no_such_tool" (tools: ';
    expect(step).toMatchObject({ step_id: "unknown-tool", outcome: "script_failed", exit_code: 1 });
    expect(step?.error).toContain(`script exited with 1: ${bridgeText}`);
    expect(step?.error).toMatch(/\(tools: .*\badd\b.*\becho\b/);
    expect(r.stderr).toContain(`step unknown-tool (script_failed): script exited with 1: ${bridgeText}`);
    expect(readJson(join(historyOf(wf, "unknown-tool"), "script_metadata.json"))).toMatchObject({
      failed_runs: 1,
      recent_runs: [expect.objectContaining({ failure_reason: "execution_error", exit_code: 1 })],
    });
  });

  test("a secret passed to a tool and printed never lands in anything Ratchet writes (db, WAL, blobs, logs, metadata), nor does the bridge token", async () => {
    const { ws, wf } = await setup();
    const r = await runStep(ws, wf, "secret");
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json(r);
    expect(run.steps[0]).toMatchObject({ step_id: "secret", outcome: "passed", tokens: 0 });
    const out = join(runsOf(wf), run.run_id, "secret");
    expect(readJson(join(out, "result.json"))).toEqual({ echoed_the_key: true });
    const token = readFileSync(join(out, "token.txt"), "utf8");
    expect(token).toMatch(/^[0-9a-f]{64}$/);

    const { log } = ledgerStep(ws, run);
    expect(log).toContain("the tool echoed [REDACTED:SECRET_API_KEY]");
    expect(log).toContain("bridge token [REDACTED:MCP_API_TOKEN]");
    expect(log).toMatch(/mcp:echo-fixture\/echo -> .*\[REDACTED:SECRET_API_KEY\]/);

    // Everything in the workspace but the script's own token.txt: the db (and its -wal while it
    // exists), blobs, the run folders, learnings/ and script_metadata.json.
    const files = filesUnder(ws.dir).filter((f) => f !== join(out, "token.txt"));
    expect(files.map((f) => relative(ws.dir, f))).toEqual(
      expect.arrayContaining([".ratchet/ratchet.db", ".ratchet/scripts/bridge/secret/script_metadata.json"]),
    );
    for (const needle of [SECRET, token]) {
      const bytes = Buffer.from(needle);
      expect(files.filter((f) => readFileSync(f).includes(bytes)).map((f) => relative(ws.dir, f))).toEqual(
        [],
      );
      expect(r.stdout + r.stderr).not.toContain(needle);
    }
  });
});
