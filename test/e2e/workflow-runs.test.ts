/**
 * Workflow runs driven through the BUILT `ratchet` CLI with real processes: python3, node and
 * ratchet-confine or bubblewrap. Fixtures (workflow files and saved scripts) live in test/fixtures/workflows/ and are
 * copied into a temp workspace per test, because runs write `execution/` and `script_metadata.json`
 * beside the workflow.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { hostname } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  assertBuilt,
  type CliResult,
  makeWorkspace,
  query,
  ROOT,
  startRatchet,
  type TestWorkspace,
  waitFor,
  withDb,
} from "../helpers/cli.js";
import { historyOf, runsOf } from "../helpers/run-home.js";

const FIXTURES = join(ROOT, "test", "fixtures", "workflows");
const SECRET = "tok-Zq81-not-for-logs-4242";
const SECRET_ENV = { SECRET_API_TOKEN: SECRET };

const workspaces: TestWorkspace[] = [];
async function workspace(): Promise<TestWorkspace> {
  const ws = await makeWorkspace("ratchet-e2e-runs-");
  workspaces.push(ws);
  return ws;
}

beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** Copies a fixture workflow folder into the workspace; returns its folder. */
function copyFixture(ws: TestWorkspace, name: string): string {
  const dest = join(ws.dir, "workflows", name);
  cpSync(join(FIXTURES, name), dest, { recursive: true });
  return dest;
}

function json<T = Record<string, unknown>>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

interface StepJson {
  step_id: string;
  ledger_step_id: string;
  mode: string;
  fast_path: boolean;
  outcome: string;
  exit_code: number | null;
  duration_ms: number | null;
  tokens: number;
  error: string | null;
  write_protection?: string;
}
interface RunJson {
  run_id: string;
  plan_id: string;
  status: string;
  trigger: string;
  group_name: string | null;
  steps: StepJson[];
  error: string | null;
  write_protection: { python: string; javascript: string; reason: string };
}

function byStep(steps: StepJson[]): Record<string, StepJson> {
  return Object.fromEntries(steps.map((s) => [s.step_id, s]));
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

function metadata(wfDir: string, step: string): Record<string, unknown> | undefined {
  const p = join(historyOf(wfDir, step), "script_metadata.json");
  return existsSync(p) ? (JSON.parse(readFileSync(p, "utf8")) as Record<string, unknown>) : undefined;
}

/** Whether the built ratchet-confine can confine a script on this kernel (the same probe Ratchet runs). */
const landlockWorks = spawnSync(join(ROOT, "dist", "native", "ratchet-confine"), ["--probe"]).status === 0;

/** Whether bubblewrap can start a sandbox on this machine (the same probe Ratchet runs). */
const bwrapWorks =
  spawnSync(
    "bwrap",
    [
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--tmpfs",
      "/tmp",
      "--unshare-pid",
      "--die-with-parent",
      "--new-session",
      "--",
      "true",
    ],
    { stdio: "ignore" },
  ).status === 0;

describe("ratchet run: the fast path", () => {
  test("a learned pipeline passes with zero tokens: outputs validated, argv, variables, ledger plan, metadata, events", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "pipeline");
    const learningsBefore = filesUnder(join(wf, "learnings")).map((f) => [f, readFileSync(f, "utf8")]);

    const r = await ws.run(["run", join(wf, "workflow.yaml"), "--group", "small", "--json"], {
      env: SECRET_ENV,
    });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json<RunJson>(r);
    expect(run).toMatchObject({ status: "passed", trigger: "manual", group_name: "small", error: null });
    expect(run.run_id).toMatch(/^run-\d{14}-[0-9a-f]{6}$/);
    const steps = byStep(run.steps);
    for (const id of ["fetch", "report"])
      expect(steps[id]).toMatchObject({
        mode: "learn_code",
        fast_path: true,
        outcome: "passed",
        exit_code: 0,
        tokens: 0,
      });

    // Outputs: variables and the group reached the script; the dependency folder came as argv.
    const fetchDir = join(runsOf(wf), run.run_id, "fetch");
    const reportDir = join(runsOf(wf), run.run_id, "report");
    const orders = JSON.parse(readFileSync(join(fetchDir, "orders.json"), "utf8"));
    expect(orders.region).toBe("eu");
    expect(orders.orders).toHaveLength(2);
    const report = JSON.parse(readFileSync(join(reportDir, "report.json"), "utf8"));
    expect(report).toMatchObject({
      count: 2,
      total: 30,
      input_dir: fetchDir,
      argv: [fetchDir],
      cwd: join(reportDir, "code"),
      execution_dir: join(reportDir, "code"),
    });
    expect(readFileSync(join(reportDir, "code", "main.py"), "utf8")).toBe(
      readFileSync(join(wf, "learnings", "report", "main.py"), "utf8"),
    );
    expect(existsSync(join(reportDir, "code", "script_metadata.json"))).toBe(false);
    expect(existsSync(join(reportDir, "code", "__pycache__"))).toBe(false);

    // Learnings: nothing was written in the workflow's folder; the run history is in the workspace.
    for (const [f, text] of learningsBefore) expect(readFileSync(f as string, "utf8")).toBe(text);
    const learnedNow = filesUnder(join(wf, "learnings"))
      .map((f) => relative(wf, f))
      .sort();
    expect(learnedNow).toEqual(["learnings/fetch/main.py", "learnings/report/main.py"].sort());
    expect(existsSync(join(wf, "execution"))).toBe(false);
    expect(readdirSync(historyOf(wf, "report"))).toEqual(["script_metadata.json"]);
    expect(metadata(wf, "fetch")).toMatchObject({
      step_id: "fetch",
      total_runs: 1,
      successful_runs: 1,
      failed_runs: 0,
      group_stats: { small: { runs: 1, successes: 1, failures: 0 } },
    });

    // The ledger: a workflow_run plan, completed, tokens 0, exit codes and the script's output logged.
    const plan = query<{ kind: string; status: string; goal: string }>(
      ws,
      "SELECT * FROM plans WHERE plan_id = ?",
      run.plan_id,
    )[0];
    expect(plan).toMatchObject({
      kind: "workflow_run",
      status: "COMPLETED",
      goal: `run pipeline ${run.run_id}`,
    });
    const ledgerSteps = query<{
      step_id: string;
      status: string;
      tokens: number;
      exit_code: number;
      type: string;
      duration_ms: number;
    }>(ws, "SELECT * FROM steps WHERE plan_id = ? AND role = 'regular' ORDER BY seq", run.plan_id);
    expect(ledgerSteps.map((s) => [s.status, s.type, s.tokens, s.exit_code])).toEqual([
      ["COMPLETED", "CODE", 0, 0],
      ["COMPLETED", "CODE", 0, 0],
    ]);
    const show = await ws.run(["plan", "show", run.plan_id]);
    expect(show.status).toBe(0);
    expect(show.stdout).toContain("wrote 2 orders");
    expect(show.stdout).toContain("[write protection:");

    // The run tables and their events.
    const listed = await ws.run(["runs", "list", "--json"]);
    expect(json<{ run_id: string; status: string }[]>(listed)).toEqual([
      expect.objectContaining({
        run_id: run.run_id,
        status: "passed",
        workflow_id: "pipeline",
        plan_id: run.plan_id,
      }),
    ]);
    const shown = json<{ tokens: number; steps: StepJson[]; owner: string }>(
      await ws.run(["runs", "show", run.run_id, "--json"]),
    );
    expect(shown.tokens).toBe(0);
    expect(shown.owner).toMatch(new RegExp(`^\\d+@${hostname()}$`));
    expect(
      shown.steps.map((s) => [s.step_id, s.mode, s.fast_path, s.outcome, s.tokens, s.exit_code]),
    ).toEqual([
      ["fetch", "learn_code", true, "passed", 0, 0],
      ["report", "learn_code", true, "passed", 0, 0],
    ]);
    const text = await ws.run(["runs", "show", run.run_id]);
    expect(text.stdout).toMatch(
      /✓ fetch {2}mode=learn_code {2}fast_path=yes {2}outcome=passed {2}exit=0 {2}duration=\d+\.\d\d s {2}tokens=0/,
    );
    const events = query<{ type: string; plan_id: string }>(
      ws,
      "SELECT type, plan_id FROM events WHERE entity_kind = 'run' ORDER BY id",
    );
    expect(events.map((e) => e.type)).toEqual([
      "run.started",
      "run.step_finished",
      "run.step_finished",
      "run.finished",
    ]);
    expect(new Set(events.map((e) => e.plan_id))).toEqual(new Set([run.plan_id]));

    // --var beats the default; the text output names the run and the write protection.
    const us = await ws.run(["run", wf, "--var", "region=us", "--var", "LIMIT=1"], { env: SECRET_ENV });
    expect(us.status, us.stderr).toBe(0);
    expect(us.stdout).toMatch(/^run run-\S+ of workflow pipeline \(plan /m);
    expect(us.stdout).toMatch(/^write protection: python: /m);
    expect(us.stdout).toMatch(/passed: 2 step\(s\), 0 tokens/);
    const usRun = (us.stdout.match(/^run (run-\S+) of/m) ?? [])[1] as string;
    expect(JSON.parse(readFileSync(join(runsOf(wf), usRun, "fetch", "orders.json"), "utf8")).region).toBe(
      "us",
    );
  });

  test("a secret the script prints is redacted everywhere Ratchet writes (db, WAL, blobs, logs, metadata, CLI output)", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "pipeline");
    // A large output forces the full log into a blob too.
    writeFileSync(
      join(wf, "learnings", "report", "main.py"),
      `import os
import sys

if os.environ["VAR_REGION"] == "fail":
    print("auth failed for token", os.environ["SECRET_API_TOKEN"], file=sys.stderr)
    sys.exit(1)
${readFileSync(join(wf, "learnings", "report", "main.py"), "utf8")}
for i in range(3000):
    print("padding line", i, "token", os.environ["SECRET_API_TOKEN"])
`,
    );
    const r = await ws.run(["run", wf, "--group", "large"], { env: SECRET_ENV });
    expect(r.status, r.stderr).toBe(0);
    const failing = await ws.run(["run", wf, "--group", "large", "--var", "region=fail"], {
      env: SECRET_ENV,
    });
    expect(failing.status).toBe(8);
    expect(failing.stderr).toContain("auth failed for token [REDACTED:SECRET_API_TOKEN]");
    expect(metadata(wf, "report")?.last_failure).toMatchObject({
      error_snippet: expect.stringContaining("[REDACTED:SECRET_API_TOKEN]"),
    });
    for (const out of [r.stdout, r.stderr, failing.stdout, failing.stderr]) expect(out).not.toContain(SECRET);

    const logs = query<{ text: string; blob: string | null }>(ws, "SELECT text, blob FROM step_logs");
    expect(logs.some((l) => l.text.includes("[REDACTED:SECRET_API_TOKEN]"))).toBe(true);
    expect(logs.some((l) => l.blob !== null)).toBe(true);
    const needle = Buffer.from(SECRET);
    const leaks = filesUnder(ws.dir).filter((f) => readFileSync(f).includes(needle));
    expect(leaks).toEqual([]);
  });

  test("every outcome in one run: script failure (exit 8, the real stderr), validation failure, skipped, needs_model, missing script, review blocked, JS — and no model is called", async () => {
    const requests: string[] = [];
    const server: Server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const ws = await workspace();
      const wf = copyFixture(ws, "mixed");
      const model = {
        OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
        OPENAI_API_KEY: "sk-test-not-used-000000000000",
        // No RATCHET_MODEL: the direct/code_exec steps fail as needs_model, and nothing reaches
        // the server although a base URL and a key are set.
        RATCHET_MODEL: undefined,
        ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
      };
      const r = await ws.run(["run", wf], { env: model });
      expect(r.status, r.stderr + r.stdout).toBe(8);
      expect(r.stderr).toMatch(
        /step crash \(script_failed\): script exited with 3: fatal: the upstream database exploded/,
      );
      expect(r.stdout).toMatch(/✗ crash .*outcome=script_failed {2}exit=3/);

      const last = await ws.run(["runs", "list", "--json"], { env: model });
      const runId = json<{ run_id: string; status: string }[]>(last)[0]?.run_id as string;
      const shown = json<{ status: string; error: string; steps: StepJson[]; plan_id: string }>(
        await ws.run(["runs", "show", runId, "--json"]),
      );
      expect(shown.status).toBe("failed");
      const s = byStep(shown.steps);
      expect(Object.fromEntries(shown.steps.map((x) => [x.step_id, x.outcome]))).toEqual({
        crash: "script_failed",
        "after-crash": "skipped",
        "bad-output": "validation_failed",
        lenient: "passed",
        think: "needs_model",
        explore: "needs_model",
        missing: "missing_script",
        blocked: "review_blocked",
        "js-step": "passed",
      });
      expect(s.crash).toMatchObject({ fast_path: true, exit_code: 3, tokens: 0 });
      expect(s.crash?.error).toContain("fatal: the upstream database exploded");
      expect(s["after-crash"]?.error).toBe("dependency crash did not pass (script_failed)");
      expect(s["bad-output"]?.error).toMatch(/outputs failed validation: count\.json \$\.count: .*min_value/);
      expect(s.lenient).toMatchObject({ outcome: "passed", exit_code: 2 });
      expect(s.think?.error).toMatch(
        /^step think runs in direct mode and needs a model: no model configured: set RATCHET_MODEL/,
      );
      expect(s.explore?.error).toMatch(
        /^step explore runs in code_exec mode and needs a model: no model configured: set RATCHET_MODEL/,
      );
      expect(s.think).toMatchObject({ fast_path: false, tokens: 0, mode: "direct" });
      expect(s.missing?.error).toBe(
        "no saved script at learnings/missing/main.py: build it with `ratchet build`",
      );
      expect(s.blocked?.error).toMatch(/static review blocked the saved script [\s\S]*R8/);
      expect(s["js-step"]).toMatchObject({ outcome: "passed", exit_code: 0, fast_path: true });
      expect(
        JSON.parse(readFileSync(join(runsOf(wf), runId, "js-step", "result.json"), "utf8")).language,
      ).toBe("javascript");

      // Metadata: recorded for scripts that ran, never for the ones that did not.
      expect(metadata(wf, "crash")).toMatchObject({
        failed_runs: 1,
        recent_runs: [expect.objectContaining({ failure_reason: "execution_error", exit_code: 3 })],
      });
      expect(metadata(wf, "bad-output")).toMatchObject({
        recent_runs: [expect.objectContaining({ failure_reason: "validation_error", exit_code: 0 })],
      });
      expect(metadata(wf, "lenient")).toMatchObject({ successful_runs: 1 });
      expect(metadata(wf, "blocked")).toBeUndefined();
      expect(existsSync(join(wf, "learnings", "missing"))).toBe(false);

      // The ledger records the failure with the real error; the plan failed.
      const plan = query<{ status: string }>(
        ws,
        "SELECT status FROM plans WHERE plan_id = ?",
        shown.plan_id,
      )[0];
      expect(plan?.status).toBe("FAILED");
      const crashRow = query<{ status: string; failure_reason: string; exit_code: number; tokens: number }>(
        ws,
        "SELECT * FROM steps WHERE step_id = ?",
        s.crash?.ledger_step_id,
      )[0];
      expect(crashRow).toMatchObject({ status: "FAILED", exit_code: 3, tokens: 0 });
      expect(crashRow?.failure_reason).toContain(
        "script_failed: script exited with 3: fatal: the upstream database exploded",
      );

      // --only with a dependency that never passed: skipped with a reason.
      const only = await ws.run(["run", wf, "--only", "after-crash", "--json"]);
      expect(only.status).toBe(8);
      expect(byStep(json<RunJson>(only).steps)["after-crash"]?.error).toMatch(
        /dependency crash is not part of this run and has no passing run/,
      );
      expect((await ws.run(["run", wf, "--only", "nope"])).status).toBe(2);

      expect(requests).toEqual([]);
    } finally {
      server.close();
    }
  });

  test("harness failures (python3 missing, an interpreter that cannot start) fail the step and record nothing against the script", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "pipeline");
    const r = await ws.run(["run", wf, "--group", "small", "--json"], {
      env: { ...SECRET_ENV, PATH: "/nonexistent" },
    });
    expect(r.status, r.stderr).toBe(8);
    const steps = byStep(json<RunJson>(r).steps);
    expect(steps.fetch).toMatchObject({ outcome: "harness_failed", fast_path: false });
    expect(steps.fetch?.error).toMatch(
      /harness failure: could not start the script: command not found: python3/,
    );
    expect(steps.fetch?.error).toMatch(/nothing was recorded against the script/);
    expect(steps.report?.outcome).toBe("skipped");
    expect(metadata(wf, "fetch")).toBeUndefined();

    // A python3 whose interpreter line points nowhere: the process cannot start (through bwrap when present).
    const bin = join(ws.dir, "fake-bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "python3"), "#!/nonexistent/interpreter\n");
    chmodSync(join(bin, "python3"), 0o755);
    const bogus = await ws.run(["run", wf, "--group", "small", "--json"], {
      env: { ...SECRET_ENV, PATH: `${bin}:/usr/bin:/bin` },
    });
    expect(bogus.status, bogus.stderr).toBe(8);
    const b = byStep(json<RunJson>(bogus).steps);
    expect(b.fetch?.outcome).toBe("harness_failed");
    expect(b.fetch?.error).toMatch(/python3/);
    expect(metadata(wf, "fetch")).toBeUndefined();
    const rows = query<{ outcome: string }>(
      ws,
      "SELECT outcome FROM workflow_step_runs WHERE step_id = 'fetch'",
    );
    expect(rows.map((x) => x.outcome)).toEqual(["harness_failed", "harness_failed"]);
  });
});

describe("write scope", () => {
  test("a script writing outside STEP_OUTPUT_DIR fails under the sandbox; with RATCHET_SANDBOX=off it is review-only and says so", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "escape");
    const r = await ws.run(["run", wf, "--var", `target=${wf}`, "--json"]);
    const run = json<RunJson>(r);
    const steps = byStep(run.steps);
    if (run.write_protection.python !== "none") {
      expect(steps["escape-py"]?.outcome).not.toBe("passed");
      expect(steps["escape-py"]?.write_protection).toBe(run.write_protection.python);
      expect(steps["escape-py"]?.error).toMatch(/Read-only file system|Permission denied/);
      expect(existsSync(join(wf, "escaped-py.txt"))).toBe(false);
    } else {
      console.warn(
        `write scope for Python not tested: no launcher works here (${run.write_protection.reason})`,
      );
      expect(bwrapWorks || landlockWorks).toBe(false);
    }
    expect(run.write_protection.python).toBe(landlockWorks ? "landlock" : bwrapWorks ? "bubblewrap" : "none");
    // The other launcher, chosen on purpose, refuses the write the same way.
    const only = landlockWorks ? "bubblewrap" : "landlock";
    if (only === "bubblewrap" ? bwrapWorks : landlockWorks) {
      const o = await ws.run(["run", wf, "--var", `target=${wf}`, "--json"], {
        env: { RATCHET_SANDBOX: only },
      });
      const oSteps = byStep(json<RunJson>(o).steps);
      expect(oSteps["escape-py"]?.write_protection).toBe(only);
      expect(oSteps["escape-py"]?.outcome).not.toBe("passed");
      expect(existsSync(join(wf, "escaped-py.txt"))).toBe(false);
    }
    if (run.write_protection.javascript === "node-permission") {
      expect(steps["escape-js"]?.outcome).not.toBe("passed");
      expect(steps["escape-js"]?.error).toMatch(/ERR_ACCESS_DENIED/);
      expect(existsSync(join(wf, "escaped-js.txt"))).toBe(false);
    }
    expect(r.status).toBe(8);

    const off = await ws.run(["run", wf, "--var", `target=${wf}`], { env: { RATCHET_SANDBOX: "off" } });
    expect(off.status, off.stderr + off.stdout).toBe(0);
    expect(off.stdout).toMatch(/write protection: .*RATCHET_SANDBOX=off/);
    expect(existsSync(join(wf, "escaped-py.txt"))).toBe(true);
    expect(existsSync(join(wf, "escaped-js.txt"))).toBe(true);
  });
});

describe("crash safety", () => {
  test("kill -9 of `ratchet run` mid-step: the next `runs list` marks it interrupted; store sound; script and metadata intact", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "slow");
    const first = await ws.run(["run", wf]);
    expect(first.status, first.stderr).toBe(0);
    const scriptPath = join(wf, "learnings", "sleeper", "main.py");
    const metaPath = join(historyOf(wf, "sleeper"), "script_metadata.json");
    const scriptBefore = readFileSync(scriptPath);
    const metaBefore = readFileSync(metaPath, "utf8");

    const running = startRatchet(["run", wf, "--var", "sleep=30", "--json"], { cwd: ws.dir });
    await waitFor(() => {
      const exec = runsOf(wf);
      return readdirSync(exec).some(
        (d) =>
          existsSync(join(exec, d, "sleeper", "started.txt")) &&
          !existsSync(join(exec, d, "sleeper", "done.json")),
      );
    }, "the sleeper to start");
    // The step is started in the ledger while its script runs (the start is written once the script
    // was asked for, the pre-started interpreter's request first), not only when it is closed.
    await waitFor(
      () =>
        query<{ n: number }>(
          ws,
          "SELECT count(*) AS n FROM steps WHERE role = 'regular' AND status = 'IN_PROGRESS'",
        )[0]?.n === 1,
      "the sleeper's ledger step to be IN_PROGRESS",
    );
    const pid = running.child.pid as number;
    running.child.kill("SIGKILL");
    const dead = await running.done;
    expect(dead.signal).toBe("SIGKILL");

    const listed = await ws.run(["runs", "list", "--json"]);
    expect(listed.status).toBe(0);
    const runs = json<{ run_id: string; status: string; error: string | null; plan_id: string }[]>(listed);
    const interrupted = runs.find((x) => x.status === "interrupted");
    const reason = `run interrupted: owner process ${pid}@${hostname()} is gone`;
    expect(interrupted?.error).toBe(reason);
    expect(listed.stderr).toContain(`marked interrupted: ${reason}`);
    expect(runs.filter((x) => x.status === "passed")).toHaveLength(1);

    const shown = json<{ steps: StepJson[] }>(
      await ws.run(["runs", "show", interrupted?.run_id as string, "--json"]),
    );
    expect(shown.steps[0]).toMatchObject({ step_id: "sleeper", outcome: "interrupted", error: reason });
    const ledgerStep = query<{ status: string; failure_reason: string }>(
      ws,
      "SELECT status, failure_reason FROM steps WHERE plan_id = ? AND role = 'regular'",
      interrupted?.plan_id,
    )[0];
    expect(ledgerStep).toEqual({ status: "FAILED", failure_reason: reason });
    expect(
      query<{ status: string }>(ws, "SELECT status FROM plans WHERE plan_id = ?", interrupted?.plan_id)[0]
        ?.status,
    ).toBe("FAILED");
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
    expect(readFileSync(scriptPath).equals(scriptBefore)).toBe(true);
    expect(readFileSync(metaPath, "utf8")).toBe(metaBefore);
    expect(JSON.parse(metaBefore)).toMatchObject({ total_runs: 1, successful_runs: 1 });
    // A second read finds nothing more to mark.
    expect((await ws.run(["runs", "list"])).stderr).toBe("");
  });
});

describe("run-saved, runs, evidence, config, doctor", () => {
  test("run-saved runs one saved script with its dependency's newest passing outputs, recorded as a one-step run", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "pipeline");
    const none = await ws.run(["workflow", "run-saved", wf, "report", "--group", "small", "--json"], {
      env: SECRET_ENV,
    });
    expect(none.status).toBe(8);
    expect(byStep(json<RunJson>(none).steps).report?.error).toMatch(
      /dependency fetch is not part of this run/,
    );

    const full = json<RunJson>(await ws.run(["run", wf, "--group", "small", "--json"], { env: SECRET_ENV }));
    const saved = await ws.run(["workflow", "run-saved", wf, "report", "--group", "small", "--json"], {
      env: SECRET_ENV,
    });
    expect(saved.status, saved.stderr).toBe(0);
    const one = json<RunJson>(saved);
    expect(one).toMatchObject({ trigger: "run_saved", status: "passed" });
    expect(one.steps.map((s) => [s.step_id, s.outcome, s.tokens])).toEqual([["report", "passed", 0]]);
    const report = JSON.parse(readFileSync(join(runsOf(wf), one.run_id, "report", "report.json"), "utf8"));
    expect(report.input_dir).toBe(join(runsOf(wf), full.run_id, "fetch"));
    expect(metadata(wf, "report")).toMatchObject({ total_runs: 2, successful_runs: 2, failed_runs: 0 });
    expect(
      query(ws, "SELECT step_id FROM steps WHERE plan_id = ? AND role = 'regular'", one.plan_id),
    ).toHaveLength(1);

    const wrongMode = copyFixture(ws, "mixed");
    const refused = await ws.run(["workflow", "run-saved", wrongMode, "think"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(
      /step think runs in direct mode .*only learn_code steps have a saved script/,
    );
    expect((await ws.run(["workflow", "run-saved", wf, "ghost"])).status).toBe(3);
    expect((await ws.run(["run", join(ws.dir, "no-such-workflow.yaml")])).status).toBe(3);

    const list = await ws.run(["runs", "list", "--workflow", "pipeline"]);
    expect(list.stdout.trim().split("\n")).toHaveLength(3);
    expect(list.stdout).toMatch(/trigger=run_saved/);
    expect((await ws.run(["runs", "list", "--workflow", "other", "--json"])).stdout.trim()).toBe("[]");
    const missing = await ws.run(["runs", "show", "run-20990101000000-abcdef"]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toMatch(/run run-20990101000000-abcdef not found/);
  });

  test("evidence counts runs, successes, failures and groups; promotion to learn_code is refused below 10 successes unless --force (recorded)", async () => {
    const ws = await workspace();
    const wf = copyFixture(ws, "pipeline");
    expect((await ws.run(["run", wf, "--group", "small"], { env: SECRET_ENV })).status).toBe(0);
    expect((await ws.run(["run", wf, "--group", "large"], { env: SECRET_ENV })).status).toBe(0);
    expect(
      (await ws.run(["run", wf, "--group", "large"], { env: { ...SECRET_ENV, PATH: "/nonexistent" } }))
        .status,
    ).toBe(8);
    const bad = await ws.run(["run", wf, "--var", "limit=0"], { env: SECRET_ENV });
    expect(bad.status).toBe(8);

    const ev = json(await ws.run(["workflow", "evidence", wf, "--step", "fetch", "--json"]));
    expect(ev).toMatchObject({
      step_id: "fetch",
      runs: 3,
      successes: 2,
      failures: 1,
      groups_covered: ["large", "small"],
      by_outcome: { passed: 2, harness_failed: 1, validation_failed: 1 },
      promotable: false,
      promotion_threshold: 10,
    });
    expect((ev.last_run as { outcome: string }).outcome).toBe("validation_failed");
    const evText = await ws.run(["workflow", "evidence", wf, "--step", "report"]);
    expect(evText.stdout).toMatch(/runs 2 {2}successes 2 {2}failures 0/);

    const mixed = copyFixture(ws, "mixed");
    const file = join(mixed, "workflow.yaml");
    const before = readFileSync(file, "utf8");
    const refused = await ws.run([
      "workflow",
      "config",
      mixed,
      "--step",
      "explore",
      "--mode",
      "learn_code",
      "--reason",
      "looks stable",
    ]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toMatch(/has 0 successful run\(s\) of 0 .*promotion needs 10/);
    expect(readFileSync(file, "utf8")).toBe(before);

    const forced = await ws.run([
      "workflow",
      "config",
      mixed,
      "--step",
      "explore",
      "--mode",
      "learn_code",
      "--reason",
      "the user asked for it",
      "--force",
    ]);
    expect(forced.status, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/forced: 0 successful run/);
    const after = readFileSync(file, "utf8");
    expect(after).toContain("# One of every step outcome a run can have (except harness failures).");
    expect(after).toMatch(
      /- id: explore\n[\s\S]*?declared_execution_mode: learn_code\n\s+declared_execution_mode_reason: the user asked for it/,
    );
    const promoted = query<{ payload: string }>(
      ws,
      "SELECT payload FROM events WHERE type = 'workflow.promoted'",
    );
    expect(promoted.map((e) => JSON.parse(e.payload))).toEqual([
      expect.objectContaining({
        step_id: "explore",
        from: "code_exec",
        to: "learn_code",
        forced: true,
        successes: 0,
        runs: 0,
      }),
    ]);

    const demote = await ws.run([
      "workflow",
      "config",
      mixed,
      "--step",
      "think",
      "--mode",
      "code_exec",
      "--reason",
      "scripting helps",
      "--json",
    ]);
    expect(demote.status, demote.stderr).toBe(0);
    expect(json(demote)).toMatchObject({ from: "direct", to: "code_exec", forced: false });
    expect(query(ws, "SELECT id FROM events WHERE type = 'workflow.config_changed'")).toHaveLength(1);
    expect(
      (await ws.run(["workflow", "config", mixed, "--step", "think", "--mode", "fast", "--reason", "x"]))
        .status,
    ).toBe(2);
    expect(
      (await ws.run(["workflow", "config", mixed, "--step", "ghost", "--mode", "direct", "--reason", "x"]))
        .status,
    ).toBe(3);
  });

  test("doctor reports the tools and the write protection; exit 8 when python3 or git is missing", async () => {
    const ws = await workspace();
    const r = await ws.run(["doctor", "--json"]);
    expect(r.status, r.stdout).toBe(0);
    const report = json<{
      ok: boolean;
      tools: { name: string; found: boolean }[];
      write_protection: { python: string };
    }>(r);
    expect(report.ok).toBe(true);
    expect(report.tools.map((t) => t.name)).toEqual(["node", "python3", "git", "ratchet-confine", "bwrap"]);
    expect(report.write_protection.python).toBe(
      landlockWorks ? "landlock" : bwrapWorks ? "bubblewrap" : "none",
    );
    const text = await ws.run(["doctor"]);
    expect(text.stdout).toMatch(/^ok\s+python3\s+Python 3/m);
    expect(text.stdout).toMatch(/write protection: python=\S+ javascript=\S+/);

    const broken = await ws.run(["doctor", "--json"], { env: { PATH: "/nonexistent" } });
    expect(broken.status).toBe(8);
    expect(json<{ ok: boolean }>(broken).ok).toBe(false);
  });
});
