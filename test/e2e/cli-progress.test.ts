/**
 * Progress of the long commands besides `ratchet run` (src/cli/progress.ts), through the built
 * CLI with the scripted model: `runner run` and `build` on a real pseudo-terminal (`script` from
 * util-linux) and piped, with NO_COLOR, `--json` and `--quiet`; `thread watch` renders messages,
 * tool calls and results and approvals instead of raw event rows.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { GOOD, workflowYaml, writesScript } from "../helpers/builder.js";
import { assertBuilt, BIN, childEnv, makeWorkspace, query, ROOT, ratchet } from "../helpers/cli.js";
import { calcSpec, fixTurns, GIT_IDENTITY, makeRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ANSI = /\x1b\[[0-9;]*m/;
const plain = (s: string) => s.replace(new RegExp(ANSI.source, "g"), "");

/**
 * Runs the built CLI on a pseudo-terminal; returns what the terminal showed. Asynchronous: the
 * scripted model answers from this process.
 */
function onTty(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined>,
): Promise<{ status: number | null; out: string }> {
  const cmd = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(" ");
  const child = spawn("script", ["-q", "-e", "-c", cmd, "/dev/null"], {
    cwd,
    env: childEnv({ TERM: "xterm", NO_COLOR: undefined, ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  return new Promise((done) =>
    child.on("close", (status) => done({ status, out: out.replaceAll("\r\n", "\n") })),
  );
}

async function model(turns: Record<string, unknown>[]) {
  const m = await startScriptedModel({ script: { turns } });
  cleanups.push(() => m.close());
  return {
    url: m.url,
    env: {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: m.url,
      OPENAI_API_KEY: "sk-test-0000000000",
    },
  };
}

function runnerTask() {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  const spec = join(r.root, "task.json");
  writeFileSync(spec, JSON.stringify(calcSpec(r)));
  return { r, spec };
}

const TURNS = () => {
  const t = fixTurns();
  return [{ ...t[0], text: "Reading calc.sh first." }, ...t.slice(1)];
};

describe("runner run progress", () => {
  it("on a terminal: rounds, tool calls with their arguments, DoD results as they happen, in colour", async () => {
    const { r, spec } = runnerTask();
    const m = await model(TURNS());
    const res = await onTty(["runner", "run", spec], r.root, {
      ...GIT_IDENTITY,
      ...m.env,
      RATCHET_DB: undefined,
    });
    expect(res.status, res.out).toBe(0);
    expect(res.out).toMatch(ANSI);
    const out = plain(res.out);
    expect(out).toContain("▶ task fix-calc started");
    expect(out).toContain("● round 1");
    expect(out).toContain("  Reading calc.sh first.");
    expect(out).toContain('  → read_file {"path":"calc.sh"}');
    expect(out).toContain("  ← read_file");
    expect(out).toContain("  → edit_file ");
    expect(out).toMatch(/ {2}✓ DoD \(round 1\): passed, exit 0/);
    expect(out).toMatch(/✓ DoD on a fresh worktree: passed, exit 0/);
    expect(out).toContain("✓ task passed");
    // Progress comes before the summary, and the summary is unchanged.
    expect(out.indexOf("● round 1")).toBeLessThan(out.indexOf("task fix-calc: passed"));
    expect(out.indexOf("→ read_file")).toBeLessThan(out.indexOf("DoD (round 1)"));
  });

  it("NO_COLOR: no colour; --json: only the JSON; --quiet: nothing; piped: no progress", async () => {
    for (const [args, extra] of [
      [[], { NO_COLOR: "1" }],
      [["--json"], {}],
      [["--quiet"], {}],
    ] as const) {
      const { r, spec } = runnerTask();
      const m = await model(TURNS());
      const res = await onTty(["runner", "run", spec, ...args], r.root, {
        ...GIT_IDENTITY,
        ...m.env,
        RATCHET_DB: undefined,
        ...extra,
      });
      expect(res.status, res.out).toBe(0);
      if (args[0] === "--json") expect(JSON.parse(res.out)).toMatchObject({ status: "passed" });
      else if (args[0] === "--quiet") expect(res.out.trim()).toBe("");
      else {
        expect(res.out).not.toMatch(ANSI);
        expect(res.out).toContain("● round 1");
      }
    }
    const { r, spec } = runnerTask();
    const m = await model(TURNS());
    const piped = await ratchet(["runner", "run", spec], { cwd: r.root, env: { ...GIT_IDENTITY, ...m.env } });
    expect(piped.status, piped.stderr).toBe(0);
    expect(piped.stdout).not.toContain("● round");
    expect(piped.stdout).not.toMatch(ANSI);
    expect(piped.stdout).toContain("task fix-calc: passed");
  });

  it("a secret in the model's text or a tool's arguments never reaches the terminal", async () => {
    const secret = "sk-test-0000000000";
    const { r, spec } = runnerTask();
    const t = fixTurns();
    const m = await model([{ ...t[0], text: `my key is ${secret}` }, ...t.slice(1)]);
    const res = await onTty(["runner", "run", spec], r.root, { ...GIT_IDENTITY, ...m.env, NO_COLOR: "1" });
    expect(res.status, res.out).toBe(0);
    expect(res.out).toContain("my key is ");
    expect(res.out).not.toContain(secret);
  });
});

describe("build progress", () => {
  async function flow() {
    const ws = await makeWorkspace("ratchet-build-progress-");
    cleanups.push(() => ws.remove());
    mkdirSync(join(ws.dir, "flow"), { recursive: true });
    writeFileSync(join(ws.dir, "flow", "workflow.yaml"), workflowYaml());
    return ws;
  }

  it("on a terminal: the agent's rounds and tool calls, then each attempt's check; --json and --quiet print none", async () => {
    const ws = await flow();
    const m = await model([{ text: "Writing the script.", ...writesScript(GOOD) }]);
    const env = { ...m.env, RATCHET_SANDBOX: "off" };
    const res = await onTty(["build", "flow", "--step", "report"], ws.dir, env);
    expect(res.status, res.out).toBe(0);
    expect(res.out).toMatch(ANSI);
    const out = plain(res.out);
    expect(out).toContain("  ● round 1");
    expect(out).toContain("    Writing the script.");
    expect(out).toContain('    → write_file {"path":"main.py"');
    expect(out).toContain("    ← write_file");
    expect(out).toMatch(/✓ attempt 1 author: check passed, exit 0, 150 tokens/);
    expect(out.indexOf("→ write_file")).toBeLessThan(out.indexOf("✓ attempt 1"));
    expect(out.indexOf("✓ attempt 1")).toBeLessThan(out.indexOf("build passed"));

    // The script is saved now: the next builds take the fast path, no model.
    const json = await onTty(["build", "flow", "--step", "report", "--json"], ws.dir, env);
    expect(json.status, json.out).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ verdict: "passed" });
    const quiet = await onTty(["build", "flow", "--step", "report", "--quiet"], ws.dir, env);
    expect(quiet.status).toBe(0);
    expect(quiet.out.trim()).toBe("");
    const piped = await ws.run(["build", "flow", "--step", "report"], { env });
    expect(piped.status, piped.stderr).toBe(0);
    expect(piped.stdout).not.toContain("attempt 1 fast_path: check");
    expect(piped.stdout).toContain("build passed");
  });
});

describe("thread watch", () => {
  it("renders roles, text, tool calls and results, approvals; colour only on a terminal; --json keeps the rows", async () => {
    const ws = await makeWorkspace("ratchet-watch-");
    cleanups.push(() => ws.remove());
    const appendFile = join(ws.dir, "appended.txt");
    writeFileSync(
      join(ws.ratchetDir, "config.json"),
      JSON.stringify({
        customTools: {
          append: {
            command: process.execPath,
            args: [join(ROOT, "test/fixtures/threads/append-tool.mjs"), appendFile],
            description: "Appends a line.",
            input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
          },
        },
        threads: {
          policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
        },
      }),
    );
    const m = await model([
      { text: "Appending now.", tool_calls: [{ id: "w1", name: "append", arguments: { line: "hello" } }] },
      { text: "Appended it." },
    ]);
    const chat = await ws.run(["chat"], { env: m.env, input: "append a line please\ny\n" });
    expect(chat.status, chat.stderr).toBe(0);
    const id = query<{ thread_id: string }>(ws, "SELECT thread_id FROM threads")[0]!.thread_id;

    const piped = await ws.run(["thread", "watch", id, "--timeout", "5"], { env: m.env });
    expect(piped.status, piped.stderr).toBe(0);
    const out = piped.stdout;
    expect(out).not.toMatch(ANSI);
    expect(out).toContain(`● thread ${id}: `);
    expect(out).toContain("user: append a line please");
    expect(out).toContain("assistant: Appending now.");
    expect(out).toContain('  → append {"line":"hello"}');
    expect(out).toContain('⏸ approval needed: append {"line":"hello"} (call w1)');
    expect(out).toContain("✓ append approved");
    expect(out).toContain("← append result");
    expect(out).toContain("assistant: Appended it.");
    expect(out).toContain("[completed → done]");
    // No raw event rows.
    expect(out).not.toMatch(/^\d+ \d{4}-\d\d-\d\dT/m);
    expect(out).not.toContain("thread.message");
    expect(out.indexOf("Appending now.")).toBeLessThan(out.indexOf("approval needed"));
    expect(out.indexOf("✓ append approved")).toBeLessThan(out.indexOf("Appended it."));

    const tty = await onTty(["thread", "watch", id, "--timeout", "5"], ws.dir, m.env);
    expect(tty.status).toBe(0);
    expect(tty.out).toMatch(ANSI);
    expect(plain(tty.out)).toContain("assistant: Appended it.");
    expect(
      (await onTty(["thread", "watch", id, "--timeout", "5"], ws.dir, { ...m.env, NO_COLOR: "1" })).out,
    ).not.toMatch(ANSI);

    const json = await ws.run(["thread", "watch", id, "--timeout", "5", "--json"], { env: m.env });
    const rows = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    expect(rows.map((r) => r.type)).toContain("thread.approval_decided");
  });
});
