/**
 * `runWorkflow` in process, with the fake process runner: the script's environment and command
 * line, outcomes the real runner only produces rarely (time-outs, exceptions), and what is
 * recorded. The real processes (python3, node, ratchet-confine, bwrap) are covered by test/e2e/workflow-runs.test.ts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import type { RunRequest } from "../exec/index.js";
import { FakeProcessRunner } from "../testing/fake-process-runner.js";
import { makeLedgerFixture } from "../testing/ledger-fixtures.js";
import { runStoreOf } from "./run-store.js";
import { runWorkflow } from "./runs.js";
import { loadWorkflow } from "./schema.js";

function setup() {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  const home = join(fx.dir, "wf");
  mkdirSync(join(home, "learnings", "fetch"), { recursive: true });
  mkdirSync(join(home, "learnings", "report"), { recursive: true });
  writeFileSync(
    join(home, "workflow.yaml"),
    [
      "id: flow",
      "variables: { region: { default: eu } }",
      "secrets: [api_token]",
      "defaults: { declared_execution_mode: learn_code }",
      "steps:",
      "  - { id: fetch, description: fetch }",
      "  - { id: report, description: report, context_dependencies: [fetch] }",
      "",
    ].join("\n"),
  );
  writeFileSync(join(home, "learnings", "fetch", "main.py"), "print('fetch')\n");
  writeFileSync(join(home, "learnings", "report", "main.py"), "print('report')\n");
  const wf = loadWorkflow(join(home, "workflow.yaml"));
  const ctx = {
    store: fx.store,
    ledger: fx.ledger,
    workspace: { root: fx.dir, dir: join(fx.dir, ".ratchet"), dbPath: "", blobsDir: "" },
  };
  // What a run writes lives in the workspace (layout.ts RunHome), never in the workflow's folder.
  const runs = join(fx.dir, ".ratchet", "runs");
  const history = (step: string) => join(fx.dir, ".ratchet", "scripts", "flow", step);
  const env = {
    PATH: process.env.PATH,
    HOME: "/home/someone",
    RATCHET_SANDBOX: "off",
    SECRET_API_TOKEN: "tok-123456789",
    STEP_OUTPUT_DIR: "/evil",
    OPENAI_API_KEY: "sk-should-not-leak",
  };
  return { fx, home, wf, ctx, env, runs, history };
}

/** A fake script that writes `out.json` into its output folder and exits with `code`. */
const writes =
  (code = 0) =>
  (req: RunRequest) => {
    writeFileSync(join(req.env?.STEP_OUTPUT_DIR as string, "out.json"), '{"ok": true}');
    return { exitCode: code, stdout: "done\n" };
  };

describe("runWorkflow (fake process runner)", () => {
  it("gives the script a minimal environment, the STEP_* folders last, argv = dependency outputs", async () => {
    const { wf, ctx, env, runs } = setup();
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, writes());
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.status).toBe("passed");
    const [fetch, rep] = runner.requests;
    const out = join(runs, report.run_id, "fetch");
    expect(fetch?.args).toEqual(["-B", "main.py"]);
    expect(fetch?.cwd).toBe(join(out, "code"));
    expect(fetch?.env).toMatchObject({
      STEP_OUTPUT_DIR: out,
      STEP_EXECUTION_DIR: join(out, "code"),
      PYTHONDONTWRITEBYTECODE: "1",
      VAR_REGION: "eu",
      SECRET_API_TOKEN: "tok-123456789",
      HOME: "/home/someone",
    });
    expect(fetch?.env).not.toHaveProperty("OPENAI_API_KEY");
    expect(fetch?.env).not.toHaveProperty("RATCHET_SANDBOX");
    expect(rep?.args).toEqual(["-B", "main.py", out]);
    expect(fetch?.timeoutMs).toBe(600_000);
  });

  it("under Landlock a script gets a private TMPDIR it may write to, removed when the script ends", async () => {
    const { wf, ctx, env } = setup();
    const tmpDirs: string[] = [];
    const runner = new FakeProcessRunner()
      .on({ command: /ratchet-confine$/, args: ["--probe"] }, { stdout: "landlock abi 7\n" })
      .on({ command: /ratchet-confine$/ }, (req) => {
        const tmp = req.env?.TMPDIR as string;
        tmpDirs.push(tmp);
        expect(statSync(tmp).isDirectory()).toBe(true);
        const out = req.env?.STEP_OUTPUT_DIR as string;
        // The launcher's flags (whatever its version adds: reads, supervision) come before "--".
        const args = req.args ?? [];
        const flags = args.slice(0, args.indexOf("--"));
        const pairs = flags.flatMap((f, i) =>
          f === "--write" || f === "--write-file" ? [`${f} ${flags[i + 1]}`] : [],
        );
        expect(pairs).toEqual([`--write ${out}`, `--write ${tmp}`, "--write-file /dev/null"]);
        expect(args.slice(args.indexOf("--") + 2)).toEqual(expect.arrayContaining(["-B", "main.py"]));
        writeFileSync(join(tmp, "scratch"), "x");
        return writes()(req);
      });
    const report = await runWorkflow(ctx, wf, { env: { ...env, RATCHET_SANDBOX: "landlock" }, runner });
    expect(report.status, JSON.stringify(report.steps)).toBe("passed");
    expect(report.write_protection.python).toBe("landlock");
    expect(report.steps.map((s) => s.write_protection)).toEqual(["landlock", "landlock"]);
    expect(tmpDirs).toHaveLength(2);
    expect(new Set(tmpDirs).size).toBe(2);
    for (const t of tmpDirs) expect(existsSync(t)).toBe(false);
  });

  it("a time-out (with no output) is an execution and validation failure naming the limit; the dependent step is skipped", async () => {
    const { wf, ctx, env, history } = setup();
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, { hang: true, stderr: "working…\n" });
    const report = await runWorkflow(ctx, wf, { env, runner, stepTimeoutSeconds: 1 });
    expect(report.status).toBe("failed");
    expect(report.steps.map((s) => [s.step_id, s.outcome])).toEqual([
      ["fetch", "execution_and_validation_failed"],
      ["report", "skipped"],
    ]);
    expect(report.steps[0]?.error).toMatch(
      /^script was killed at its 1 s time limit: working…\noutputs failed validation: .* has no file besides code\/ \(builtin_has_output\)$/,
    );
    expect(existsSync(join(history("fetch"), "script_metadata.json"))).toBe(true);
    expect(existsSync(join(history("report"), "script_metadata.json"))).toBe(false);
  });

  it("an exception while running a step is a harness failure: nothing recorded against the script, the run goes on", async () => {
    const { wf, ctx, env, fx, history } = setup();
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, () => {
      throw new Error("disk on fire");
    });
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.steps[0]).toMatchObject({
      outcome: "harness_failed",
      error: "harness failure: disk on fire; nothing was recorded against the script",
    });
    expect(existsSync(join(history("fetch"), "script_metadata.json"))).toBe(false);
    const runs = runStoreOf(fx.store);
    expect(runs.getRun(report.run_id)?.status).toBe("failed");
    expect(fx.store.getPlan(report.plan_id)?.status).toBe("FAILED");
  });

  it("refuses before recording anything when a secret or a variable is missing", async () => {
    const { wf, ctx, env, fx } = setup();
    const { SECRET_API_TOKEN: _, ...noSecret } = env;
    await expect(runWorkflow(ctx, wf, { env: noSecret, runner: new FakeProcessRunner() })).rejects.toThrow(
      /no value for secret SECRET_API_TOKEN/,
    );
    await expect(
      runWorkflow(ctx, wf, { env, vars: { nope: "1" }, runner: new FakeProcessRunner() }),
    ).rejects.toThrow(/declares no variable NOPE/);
    expect(runStoreOf(fx.store).listRuns()).toEqual([]);
    expect(fx.store.listPlans({})).toEqual([]);
  });

  it("secrets are masked in the ledger log and the step error", async () => {
    const { wf, ctx, env, fx } = setup();
    const runner = new FakeProcessRunner().on(
      { command: /python3$/ },
      { exitCode: 1, stderr: "auth failed for tok-123456789\n" },
    );
    const report = await runWorkflow(ctx, wf, { env, runner, only: ["fetch"] });
    expect(report.steps[0]?.error).toMatch(
      /^script exited with 1: auth failed for \[REDACTED:SECRET_API_TOKEN\]\n/,
    );
    const logs = fx.store
      .logsOfPlan(report.plan_id)
      .map((l) => l.text)
      .join("\n");
    expect(logs).toContain("[REDACTED:SECRET_API_TOKEN]");
    expect(logs).not.toContain("tok-123456789");
  });

  it("starts one tool bridge per run: every script gets its MCP_API_URL/MCP_API_TOKEN (not over STEP_*), the helper sits next to the script, the bridge is closed at the end", async () => {
    const { wf, ctx, env, home, runs, history } = setup();
    const seen: { url: string; token: string; health: number; status: number; reply: unknown }[] = [];
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, async (req) => {
      const url = req.env?.MCP_API_URL as string;
      const token = req.env?.MCP_API_TOKEN as string;
      const health = (await fetch(`${url}/health`)).status;
      // The built-in echo tool, with the secret as an argument: answered as is, logged redacted.
      const res = await fetch(`${url}/tools/custom/echo`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify({ key: req.env?.SECRET_API_TOKEN }),
      });
      seen.push({ url, token, health, status: res.status, reply: await res.json() });
      return writes()(req);
    });
    const report = await runWorkflow(ctx, wf, { env: { ...env, MCP_API_URL: "http://evil" }, runner });
    expect(report.status, report.error ?? "").toBe("passed");
    expect(seen).toHaveLength(2);
    const [first, second] = seen;
    expect(first?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first?.token).toMatch(/^[0-9a-f]{64}$/);
    expect(second).toMatchObject({ url: first?.url, token: first?.token });
    expect(first).toMatchObject({
      health: 200,
      status: 200,
      reply: { success: true, result: { key: "tok-123456789" }, error: null },
    });
    const [fetchReq] = runner.requests;
    const out = join(runs, report.run_id, "fetch");
    expect(fetchReq?.env).toMatchObject({ STEP_OUTPUT_DIR: out, STEP_EXECUTION_DIR: join(out, "code") });
    expect(readdirSync(join(out, "code")).sort()).toEqual(["main.py", "ratchet_tools.py"]);
    // Nothing written in the workflow's folder: the run history is in the workspace.
    expect(readdirSync(join(home, "learnings", "fetch")).sort()).toEqual(["main.py"]);
    expect(readdirSync(history("fetch"))).toEqual(["script_metadata.json"]);

    // The bridge's log lines are in the step's ledger log, redacted.
    const logs = ctx.store
      .logsOfPlan(report.plan_id)
      .map((l) => l.text)
      .join("\n");
    expect(logs).toMatch(/--- tool bridge ---\n(.*\n)*bridge POST \/tools\/custom\/echo 200 /);
    expect(logs).toContain("[REDACTED:SECRET_API_TOKEN]");
    expect(logs).not.toContain("tok-123456789");
    expect(logs).not.toContain(first?.token);

    // Closed when the run ended.
    await expect(fetch(`${first?.url}/health`)).rejects.toThrow();
  });

  it("a bridge that cannot start (a malformed config) is a harness failure; steps that run no script never start it", async () => {
    const { wf, ctx, env, home, history } = setup();
    mkdirSync(ctx.workspace.dir, { recursive: true });
    writeFileSync(join(ctx.workspace.dir, "config.json"), "{ not json");
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, writes());
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.steps.map((s) => [s.step_id, s.outcome])).toEqual([
      ["fetch", "harness_failed"],
      ["report", "skipped"],
    ]);
    expect(report.steps[0]?.error).toMatch(
      /^harness failure: could not start the tool bridge: .*config\.json is not valid JSON: .*; nothing was recorded against the script$/,
    );
    expect(runner.requests).toEqual([]);
    expect(existsSync(join(history("fetch"), "script_metadata.json"))).toBe(false);

    // No script to run: the config is never read.
    rmSync(join(home, "learnings", "fetch", "main.py"));
    const missing = await runWorkflow(ctx, wf, { env, runner, only: ["fetch"] });
    expect(missing.steps.map((s) => s.outcome)).toEqual(["missing_script"]);
  });

  it("a bridge the caller gives is used as is (not started, not closed)", async () => {
    const { wf, ctx, env } = setup();
    mkdirSync(ctx.workspace.dir, { recursive: true });
    writeFileSync(join(ctx.workspace.dir, "config.json"), "{ not json");
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, writes());
    const bridge = { url: "http://127.0.0.1:9", token: "t".repeat(64) };
    const report = await runWorkflow(ctx, wf, { env, runner, bridge, only: ["fetch"] });
    expect(report.status).toBe("passed");
    expect(runner.requests[0]?.env).toMatchObject({ MCP_API_URL: bridge.url, MCP_API_TOKEN: bridge.token });
  });

  it("a caller's own run home (a worker's) gets every output folder and the run history; the workspace's and the workflow's folders get nothing", async () => {
    const { wf, ctx, env, home, runs, fx } = setup();
    const own = { runs: join(fx.dir, "worker", "runs"), scripts: join(fx.dir, "worker", "scripts") };
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, writes());
    const report = await runWorkflow(ctx, wf, { env, runner, home: own });
    expect(report.status).toBe("passed");
    const [fetchReq, reportReq] = runner.requests;
    const out = join(own.runs, report.run_id, "fetch");
    expect(fetchReq?.env).toMatchObject({ STEP_OUTPUT_DIR: out, STEP_EXECUTION_DIR: join(out, "code") });
    expect(reportReq?.args).toContain(out);
    expect(existsSync(join(own.scripts, "flow", "report", "script_metadata.json"))).toBe(true);
    expect(existsSync(runs)).toBe(false);
    expect(readdirSync(home).sort()).toEqual(["learnings", "workflow.yaml"]);
    expect(readdirSync(join(home, "learnings", "fetch"))).toEqual(["main.py"]);
  });

  it("copies the saved folder into code/ without diffs/, the metadata or the contract; sub-folders and other files come along", async () => {
    const { wf, ctx, env, home, history } = setup();
    const saved = join(home, "learnings", "fetch");
    mkdirSync(join(saved, "diffs"), { recursive: true });
    writeFileSync(join(saved, "diffs", "v1.diff"), "-a\n+b\n");
    mkdirSync(join(saved, "lib", "deep"), { recursive: true });
    writeFileSync(join(saved, "lib", "deep", "util.py"), "X = 1\n");
    writeFileSync(join(saved, "notes.txt"), "n\n");
    const seen: string[][] = [];
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, (req) => {
      const code = req.cwd as string;
      const walk = (d: string, pre = ""): string[] =>
        readdirSync(d, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? walk(join(d, e.name), `${pre}${e.name}/`) : [`${pre}${e.name}`],
        );
      seen.push(walk(code).sort());
      return writes()(req);
    });
    const report = await runWorkflow(ctx, wf, { env, runner, only: ["fetch"] });
    expect(report.status).toBe("passed");
    expect(seen[0]).toEqual(["lib/deep/util.py", "main.py", "notes.txt", "ratchet_tools.py"]);
    // The run recorded its metadata in the workspace, neither next to the saved script nor in the copy.
    expect(existsSync(join(history("fetch"), "script_metadata.json"))).toBe(true);
    expect(existsSync(join(saved, "script_metadata.json"))).toBe(false);
  });

  it("script_metadata.json is written while the next script runs, and a failed write is noted on its step", async () => {
    const { wf, ctx, env, fx, history } = setup();
    // fetch's metadata cannot be written (a folder where the file goes); report's can.
    mkdirSync(join(history("fetch"), "script_metadata.json"), { recursive: true });
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, writes());
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.status).toBe("passed");
    expect(report.steps.map((s) => [s.step_id, s.metadata_recorded])).toEqual([
      ["fetch", false],
      ["report", true],
    ]);
    expect(existsSync(join(history("report"), "script_metadata.json"))).toBe(true);
    const fetchLogs = fx.store
      .logsOfStep(report.steps[0]!.ledger_step_id)
      .map((l) => l.text)
      .join("\n");
    expect(fetchLogs).toContain("script_metadata.json not updated");
    expect(runner.requests).toHaveLength(2);
  });

  it("the next step is prepared while a script runs; when it is skipped after all, no folder of it is left", async () => {
    const { wf, ctx, env, runs } = setup();
    const seen: boolean[] = [];
    const runner = new FakeProcessRunner().on({ command: /python3$/ }, async (req) => {
      // While fetch runs, report (the next step) gets its working copy.
      const reportCode = join(dirname(dirname(req.cwd as string)), "report", "code", "main.py");
      const deadline = Date.now() + 5_000;
      while (!existsSync(reportCode) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      seen.push(existsSync(reportCode));
      return { exitCode: 1, stderr: "boom\n" };
    });
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.status).toBe("failed");
    expect(report.steps.map((s) => s.outcome)).toEqual(["execution_and_validation_failed", "skipped"]);
    expect(seen).toEqual([true]);
    expect(existsSync(join(runs, report.run_id, "report"))).toBe(false);
    expect(existsSync(join(runs, report.run_id, "fetch", "code", "main.py"))).toBe(true);
  });

  it("a step's output folder that exists before it is prepared (planted by an earlier script) is cleaned: only a folder the preparation created skips the clean", async () => {
    const { wf, ctx, env, runs } = setup();
    const seen: Record<string, unknown> = {};
    const runner = new FakeProcessRunner()
      .on(
        (req) => /python3$/.test(req.command) && /\/fetch\/code$/.test(req.cwd ?? ""),
        (req) => {
          // An unprotected script (RATCHET_SANDBOX=off) plants files in the next step's folder, before
          // that step is prepared: a module beside its script, a stale output, a stale code/ file.
          const next = join(dirname(dirname(req.cwd as string)), "report");
          mkdirSync(join(next, "code"), { recursive: true });
          writeFileSync(join(next, "code", "json.py"), "raise SystemExit(0)\n");
          writeFileSync(join(next, "code", "main.py"), "print('planted')\n");
          writeFileSync(join(next, "stale.json"), '{"ok": true}');
          writeFileSync(join(req.env?.STEP_OUTPUT_DIR as string, "out.json"), '{"ok": true}');
          return { exitCode: 0 };
        },
      )
      .on(
        (req) => /python3$/.test(req.command) && /\/report\/code$/.test(req.cwd ?? ""),
        (req) => {
          const code = req.cwd as string;
          seen.files = readdirSync(code).sort();
          seen.outputs = readdirSync(dirname(code)).sort();
          seen.script = readFileSync(join(code, "main.py"), "utf8");
          return { exitCode: 0 };
        },
      );
    const report = await runWorkflow(ctx, wf, { env, runner });
    expect(report.steps.map((s) => s.step_id)).toEqual(["fetch", "report"]);
    expect(runner.requests).toHaveLength(2);
    // The helper is copied beside the script where it is not shared (no write protection here).
    expect(seen).toEqual({
      files: ["main.py", "ratchet_tools.py"],
      outputs: ["code"],
      script: "print('report')\n",
    });
    expect(existsSync(join(runs, report.run_id, "report", "stale.json"))).toBe(false);
  });

  it("under Landlock the next step's TMPDIR is made while the current script runs, empty; a skipped step's is removed", async () => {
    const { wf, ctx, env } = setup();
    const mine = (): Set<string> =>
      new Set(readdirSync(tmpdir()).filter((n) => n.startsWith(`ratchet-step-${process.pid}-`)));
    const seen: { own: string; others: string[]; entries: string[] }[] = [];
    let failFirst = false;
    const runner = new FakeProcessRunner()
      .on({ command: /ratchet-confine$/, args: ["--probe"] }, { stdout: "landlock abi 7\n" })
      .on({ command: /ratchet-confine$/ }, async (req) => {
        const own = req.env?.TMPDIR as string;
        const entries = readdirSync(own);
        // The first script waits for the next step's TMPDIR to appear beside its own.
        const deadline = Date.now() + 5_000;
        let others: string[] = [];
        while (seen.length === 0 && others.length === 0 && Date.now() < deadline) {
          others = [...mine()].map((n) => join(tmpdir(), n)).filter((d) => d !== own);
          if (others.length === 0) await new Promise((r) => setTimeout(r, 5));
        }
        writeFileSync(join(own, "scratch"), "x");
        seen.push({ own, others, entries });
        return seen.length === 1 && failFirst ? { exitCode: 1 } : writes()(req);
      });
    const landlock = { ...env, RATCHET_SANDBOX: "landlock" };
    const report = await runWorkflow(ctx, wf, { env: landlock, runner });
    expect(report.status, JSON.stringify(report.steps)).toBe("passed");
    expect(seen).toHaveLength(2);
    // The second step runs in exactly the folder made ahead while the first ran, and finds it empty.
    expect(seen[0]?.others).toEqual([seen[1]?.own]);
    expect(seen[1]?.entries).toEqual([]);
    for (const s of seen) expect(existsSync(s.own)).toBe(false);

    // The first script fails: the second step is skipped, and the TMPDIR made for it is gone too.
    seen.length = 0;
    failFirst = true;
    const failed = await runWorkflow(ctx, wf, { env: landlock, runner });
    expect(failed.steps.map((s) => s.outcome)).toEqual(["execution_and_validation_failed", "skipped"]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.others).toHaveLength(1);
    expect(existsSync(seen[0]?.others[0] as string)).toBe(false);
    expect(mine().size).toBe(0);
  });
});
