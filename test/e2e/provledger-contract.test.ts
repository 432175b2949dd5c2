/**
 * The original ledger's user-facing contract (../shared/specs/provledger-contract.md), driven the
 * way an agent written for the original drives it: through scripts named like the original's
 * (`publish-plan.sh`, `start-step.sh`, `run-step.sh`, …) written by `ratchet shims`, with the
 * database named by `ORCH_DB`, and the input as a file path (or stdin). Each test names the
 * contract section it covers. The store is inspected read-only afterwards.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  childEnv,
  type Marker,
  makeTempDir,
  makeWorkspace,
  parseMarker,
  query,
  snapshot,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

interface ShimResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  marker: Marker | undefined;
  /** The pretty JSON document printed before the marker (undefined when there is none). */
  body: Record<string, unknown> | undefined;
}

interface Env {
  ws: TestWorkspace;
  /** The folder `ratchet shims` wrote into. */
  scripts: string;
  /** A folder outside any workspace: the shims find the store through ORCH_DB only. */
  cwd: string;
}

const cleanups: (() => void)[] = [];
const pgids = new Set<number>();

beforeAll(() => {
  assertBuilt();
});
afterAll(() => {
  for (const g of pgids) {
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const c of cleanups) c();
});

async function env(): Promise<Env> {
  const ws = await makeWorkspace("ratchet-e2e-contract-");
  cleanups.push(() => ws.remove());
  const scripts = join(ws.dir, "scripts");
  const r = await ws.run(["shims", scripts]);
  expect(r.status, r.stderr).toBe(0);
  expect(r.marker).toMatchObject({ ok: true, op: "shims" });
  const cwd = makeTempDir("ratchet-e2e-contract-cwd-");
  cleanups.push(() => execFileSync("rm", ["-rf", cwd]));
  return { ws, scripts, cwd };
}

function bodyOf(stdout: string): Record<string, unknown> | undefined {
  const cut = stdout.lastIndexOf("\n{");
  if (cut <= 0) return undefined;
  try {
    return JSON.parse(stdout.slice(0, cut)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

let inputs = 0;
/** Writes `input` to a file (`ext` default .json) and runs `bash <scripts>/<script> <file>`. */
function startShim(
  e: Env,
  script: string,
  input: unknown,
  opts: { ext?: string; stdin?: boolean; cwd?: string; env?: Record<string, string | undefined> } = {},
) {
  const text = typeof input === "string" ? input : JSON.stringify(input);
  const args = [join(e.scripts, script)];
  if (!opts.stdin) {
    const dir = join(e.cwd, "in");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${inputs++}-${script.replace(/\.sh$/, "")}${opts.ext ?? ".json"}`);
    writeFileSync(file, text);
    args.push(file);
  }
  const child = spawn("bash", args, {
    cwd: opts.cwd ?? e.cwd,
    env: childEnv({ ORCH_DB: e.ws.dbPath, ...opts.env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  child.stdin.on("error", () => {});
  child.stdin.end(opts.stdin ? text : undefined);
  const done = new Promise<ShimResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} did not finish\n${stderr}`));
    }, 60_000);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, marker: parseMarker(stdout), body: bodyOf(stdout) });
    });
  });
  return { child, done };
}

function shim(e: Env, script: string, input: unknown, opts: Parameters<typeof startShim>[3] = {}) {
  return startShim(e, script, input, opts).done;
}

async function okShim(e: Env, script: string, input: unknown, opts: Parameters<typeof startShim>[3] = {}) {
  const r = await shim(e, script, input, opts);
  expect(r.status, `${script}: ${r.stderr}${r.stdout}`).toBe(0);
  expect(r.marker).toMatchObject({ ok: true });
  return { ...r, result: r.body ?? {}, marker: r.marker as Marker };
}

/** Asserts a refusal: the status, `❌` on stderr, the ok:false marker, and nothing written. */
async function refused(
  e: Env,
  script: string,
  input: unknown,
  status: number,
  message: RegExp,
  opts: Parameters<typeof startShim>[3] = {},
) {
  const before = snapshot(e.ws);
  const r = await shim(e, script, input, opts);
  expect(r.status, `${script}: ${r.stderr}${r.stdout}`).toBe(status);
  expect(r.stderr).toMatch(/^❌ /m);
  expect(r.stderr).toMatch(message);
  expect(r.marker).toMatchObject({ ok: false, exit_status: status });
  expect(snapshot(e.ws)).toEqual(before);
  return r;
}

function plan(e: Env, planId: string) {
  return query(e.ws, "SELECT * FROM plans WHERE plan_id = ?", planId)[0] as Record<string, unknown>;
}
function step(e: Env, stepId: string) {
  return query(e.ws, "SELECT * FROM steps WHERE step_id = ?", stepId)[0] as Record<string, unknown>;
}
function logs(e: Env, stepId: string): string[] {
  return query<{ text: string }>(
    e.ws,
    "SELECT text FROM step_logs WHERE step_id = ? ORDER BY id",
    stepId,
  ).map((l) => l.text);
}

async function publish(e: Env, input: Record<string, unknown>, opts: Parameters<typeof startShim>[3] = {}) {
  const r = await okShim(e, "publish-plan.sh", input, opts);
  return {
    ...r,
    planId: r.marker.plan_id as string,
    stepIds: r.marker.step_ids as string[],
    review: r.marker.review_step_id as string,
  };
}

/** A git repo registered as project `name` (its plans hand off to an agent review). */
async function project(e: Env, name: string): Promise<string> {
  const repo = join(e.cwd, name);
  mkdirSync(repo, { recursive: true });
  execFileSync("git", ["init", "-q", repo]);
  const r = await e.ws.run(["project", "add", name, "--repo", repo]);
  expect(r.status, r.stderr).toBe(0);
  return repo;
}

describe("§1 input and output conventions", () => {
  test("inputs parse by extension (.json, .yaml, .yml; - for stdin); anything else is refused naming them", async () => {
    const e = await env();
    const p = await publish(e, { goal: "ext", prefix: "ext", steps: ["think"] });
    const A = p.stepIds[0] as string;
    await refused(e, "start-step.sh", { step_id: A }, 2, /\.json, \.yaml or \.yml/, { ext: ".txt" });
    await okShim(e, "start-step.sh", `step_id: ${A}\ntype: THINKING\n`, { ext: ".yaml" });
    await okShim(e, "append-log.sh", `step_id: ${A}\ntext: "from yml"\n`, { ext: ".yml" });
    await okShim(e, "complete-step.sh", { step_id: A, summary: "done" }, { stdin: true });
    expect(step(e, A)).toMatchObject({ status: "COMPLETED", type: "THINKING" });
  });

  test("`_`-prefixed annotation keys are ignored in every op; other unknown keys are still refused", async () => {
    const e = await env();
    const p = await publish(e, {
      _comment: "an example plan",
      goal: "annotated",
      steps: [{ _comment: "first", description: "think" }],
    });
    const A = p.stepIds[0] as string;
    await okShim(e, "start-step.sh", { _note: "x", step_id: A, type: "THINKING" });
    await refused(e, "complete-step.sh", { step_id: A, bogus: 1 }, 2, /bogus/);
  });

  test("success: pretty JSON, then the compact marker last; failure: one ❌ line and an ok:false marker", async () => {
    const e = await env();
    const p = await publish(e, { goal: "out", steps: ["a"] });
    const r = await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    expect(r.result).toMatchObject({ step_id: p.stepIds[0], status: "IN_PROGRESS" });
    expect(r.marker).toMatchObject({ ok: true, op: "start-step", step_id: p.stepIds[0] });
    const bad = await refused(e, "start-step.sh", { step_id: "nope-A" }, 3, /nope-A/);
    expect(bad.marker).toMatchObject({ ok: false, op: "start-step" });
  });

  test('a soft refusal prints its pretty body (`"accepted": false`, reason, breaker) before the marker', async () => {
    const e = await env();
    const p = await publish(e, { goal: "soft", steps: ["a", "b"] });
    const [A] = p.stepIds as [string];
    await okShim(e, "start-step.sh", { step_id: A });
    await okShim(e, "complete-step.sh", { step_id: A });
    const r = await refused(
      e,
      "deviate.sh",
      { parent_step_id: A, justification: "redo", sub_steps: ["x"] },
      4,
      /rejected/,
    );
    expect(r.stdout).toContain('"accepted": false');
    expect(r.body).toMatchObject({ accepted: false, breaker: "soft" });
    expect(r.marker).toMatchObject({ ok: false, accepted: false, breaker: "soft" });
  });
});

describe("§2 publish-plan", () => {
  test("`prefix` gives <prefix>-<YYYYMMDDHHMMSS>; a clash gets -2; a bad prefix is refused naming it", async () => {
    const e = await env();
    const a = await publish(e, { goal: "g", prefix: "fix-login", steps: ["a"] });
    expect(a.planId).toMatch(/^fix-login-\d{14}$/);
    const b = await publish(e, { goal: "g", prefix: "fix-login", steps: ["a"] });
    expect(b.planId).toMatch(/^fix-login-\d{14}(-2)?$/);
    expect(b.planId).not.toBe(a.planId);
    await refused(e, "publish-plan.sh", { goal: "g", prefix: "Fix_Login", steps: ["a"] }, 2, /prefix/);
    // Without it, Ratchet's slug of the goal.
    const c = await publish(e, { goal: "Ship it", steps: ["a"] });
    expect(c.planId).toMatch(/^ship-it-\d{14}$/);
  });

  test("steps as bare strings, {description, type?} or {title, type}; untyped until start sets a type", async () => {
    const e = await env();
    const p = await publish(e, {
      goal: "shapes",
      prefix: "shapes",
      steps: [
        "Read the code",
        { description: "Write the fix", type: "CODE", ctx_estimate_k: 12 },
        { title: "Docs", type: "DOCUMENTATION", description: "d" },
      ],
    });
    const [A, B, C] = p.stepIds as [string, string, string];
    expect(step(e, A)).toMatchObject({ title: "Read the code", description: "Read the code", type: "" });
    expect(step(e, B)).toMatchObject({ title: "Write the fix", type: "CODE" });
    expect(step(e, C)).toMatchObject({ title: "Docs", type: "DOCUMENTATION" });
    expect((p.result.steps as { type: unknown }[])[0]?.type).toBeNull();
    await okShim(e, "start-step.sh", { step_id: A, type: "ANALYSIS" });
    expect(step(e, A).type).toBe("ANALYSIS");
  });

  test("`user_query` is stored on the plan; `skills` are recorded with no step; a bad source names `source`", async () => {
    const e = await env();
    const p = await publish(e, {
      goal: "q",
      user_query: "please fix the login bug, keep it small",
      skills: [
        { name: "systematic-debugging", source: "iron-law" },
        { name: "tdd", source: "auto-search" },
      ],
      steps: ["a"],
    });
    expect(plan(e, p.planId).user_query).toBe("please fix the login bug, keep it small");
    expect(p.marker.skills_recorded).toBe(2);
    expect(query(e.ws, "SELECT name, source, step_id FROM skills WHERE plan_id = ?", p.planId)).toEqual([
      { name: "systematic-debugging", source: "iron-law", step_id: null },
      { name: "tdd", source: "auto-search", step_id: null },
    ]);
    await refused(
      e,
      "publish-plan.sh",
      { goal: "q", steps: ["a"], skills: [{ name: "x", source: "whim" }] },
      2,
      /source.*iron-law, auto-search, explicit-mention, deferred-load/,
    );
  });

  test('`project: "none"` is an explicit no-project plan: declared, a notice, never reviewed', async () => {
    const e = await env();
    const p = await publish(e, { goal: "none", project: "none", steps: ["a"] });
    expect(p.result).toMatchObject({ project: "none", project_source: "declared" });
    expect(String(p.result.notice)).toContain("no state-graph review");
    expect(p.stderr).toContain("no state-graph review");
    await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    const done = await okShim(e, "complete-step.sh", { step_id: p.stepIds[0] });
    expect(done.marker).toMatchObject({ plan_status: "COMPLETED" });
    expect(done.marker).not.toHaveProperty("needs_agent_review");
    expect(plan(e, p.planId)).toMatchObject({ status: "COMPLETED", review_state: "skipped" });
    expect(String(plan(e, p.planId).review_skip_reason)).toContain("no state-graph review");
    expect(logs(e, p.review).some((l) => l.startsWith("[REVIEW SKIPPED] "))).toBe(true);
  });

  test("omitted project: the cwd's registered repo (`project_source: cwd`); a nested unregistered repo or no repo is not attributed", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    const inRepo = await publish(e, { goal: "in repo", steps: ["a"] }, { cwd: repo });
    expect(inRepo.result).toMatchObject({ project: "shop", project_source: "cwd" });
    const nested = join(repo, "vendor", "lib");
    mkdirSync(nested, { recursive: true });
    execFileSync("git", ["init", "-q", nested]);
    const n = await publish(e, { goal: "nested", steps: ["a"] }, { cwd: nested });
    expect(n.result).toMatchObject({ project: null, project_source: null });
    expect(String(n.result.notice)).toContain("not attributed");
    const none = await publish(e, { goal: "nowhere", steps: ["a"] });
    expect(none.result.project).toBeNull();
    expect(String(none.result.notice)).toContain("not attributed");
  });

  test("a declared project other than the cwd's is refused (`pick one`), nothing written", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    await project(e, "billing");
    await refused(e, "publish-plan.sh", { goal: "g", project: "billing", steps: ["a"] }, 2, /pick one/, {
      cwd: repo,
    });
    const same = await publish(e, { goal: "g", project: "shop", steps: ["a"] }, { cwd: repo });
    expect(same.result).toMatchObject({ project: "shop", project_source: "declared" });
  });

  test("`declared_targets`, `expectations`, `headline_notes` are accepted and stored", async () => {
    const e = await env();
    const p = await publish(e, {
      goal: "ext",
      steps: ["a"],
      declared_targets: ["src/login.ts"],
      expectations: [{ metric: "auc", op: ">=", value: 0.9 }],
      headline_notes: ["watch the cache"],
    });
    expect(p.result.expectations_recorded).toBe(1);
    expect(JSON.parse(String(plan(e, p.planId).extensions))).toEqual({
      declared_targets: ["src/login.ts"],
      expectations: [{ metric: "auc", op: ">=", value: 0.9 }],
      headline_notes: ["watch the cache"],
    });
  });

  test("result: `step_ids` are the regular steps only; the review step is `review_step_id` (and in `steps`)", async () => {
    const e = await env();
    const p = await publish(e, { goal: "ids", prefix: "ids", steps: ["a", "b", "c"] });
    expect(p.stepIds).toEqual(["A", "B", "C"].map((l) => `${p.planId}-${l}`));
    expect(p.review).toBe(`${p.planId}-REVIEW`);
    expect((p.result.steps as { step_id: string }[]).map((s) => s.step_id)).toContain(p.review);
    expect(p.result).toMatchObject({ project: null, project_source: null });
  });

  test("refusal wording: a missing field is named with the original's phrase; empty steps names `steps`", async () => {
    const e = await env();
    await refused(e, "publish-plan.sh", { steps: ["a"] }, 2, /missing required field: 'goal'/);
    await refused(e, "publish-plan.sh", { goal: "g" }, 2, /missing required field: 'steps'/);
    await refused(e, "publish-plan.sh", { goal: "g", steps: [] }, 2, /`steps`/);
  });
});

describe("§3 step flows", () => {
  test("start-step on a COMMAND step (type given or stored) is refused naming run-step, exit 5, nothing written", async () => {
    const e = await env();
    const p = await publish(e, { goal: "cmd", steps: [{ description: "build", type: "COMMAND" }, "think"] });
    const [A, B] = p.stepIds as [string, string];
    await refused(e, "start-step.sh", { step_id: A }, 5, /run-step/);
    await refused(e, "start-step.sh", { step_id: B, type: "COMMAND" }, 5, /run-step/);
    const run = await shim(e, "run-step.sh", { step_id: A, type: "COMMAND", command: "echo built" });
    expect(run.status).toBe(0);
    expect(run.marker).toMatchObject({ ok: true, op: "run-step", exit_code: 0, step_id: A });
    expect(logs(e, A)[0]).toMatch(/^\[run-step\] kickoff /);
  });

  test("complete-step on a COMMAND step is accepted with run-step's `--- exit_code=` footer, else exit 5 naming run-step", async () => {
    const e = await env();
    const p = await publish(e, { goal: "footer", steps: [{ description: "build", type: "COMMAND" }] });
    const [A] = p.stepIds as [string];
    // A run-step whose process died mid-command leaves the step IN_PROGRESS (kickoff log only).
    const pidFile = join(e.cwd, "cmd.pgid");
    const run = startShim(e, "run-step.sh", {
      step_id: A,
      type: "COMMAND",
      command: `echo $$ > ${JSON.stringify(pidFile)}; exec sleep 30`,
    });
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command");
    pgids.add(Number(readFileSync(pidFile, "utf8").trim()));
    await waitFor(() => step(e, A).status === "IN_PROGRESS", "the step to start");
    run.child.kill("SIGKILL");
    await run.done;
    // The launcher's supervisor ends the command when Ratchet dies; without one, kill it here.
    const cmdPid = Number(readFileSync(pidFile, "utf8").trim());
    try {
      process.kill(cmdPid, "SIGKILL");
    } catch {
      // already gone
    }
    await refused(e, "complete-step.sh", { step_id: A, log_context: "it built" }, 5, /run-step/);
    const ok = await okShim(e, "complete-step.sh", {
      step_id: A,
      summary: "built by hand",
      log_context: "make\n--- exit_code=0, runtime=1s ---",
    });
    expect(ok.marker).toMatchObject({ op: "complete-step", status: "COMPLETED" });
  });

  test("run-step stopped by a signal fails the step with a reason containing `stopped`, exit 130", async () => {
    const e = await env();
    const p = await publish(e, { goal: "stop", steps: [{ description: "long", type: "COMMAND" }] });
    const [A] = p.stepIds as [string];
    const pidFile = join(e.cwd, "stop.pgid");
    const run = startShim(e, "run-step.sh", {
      step_id: A,
      type: "COMMAND",
      command: `echo $$ > ${JSON.stringify(pidFile)}; sleep 30`,
    });
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command");
    pgids.add(Number(readFileSync(pidFile, "utf8").trim()));
    await waitFor(() => step(e, A).status === "IN_PROGRESS", "the step to start");
    run.child.kill("SIGTERM");
    const r = await run.done;
    expect(r.status).toBe(130);
    expect(String(step(e, A).failure_reason)).toContain("stopped");
  });
});

describe("§4 deviate", () => {
  test("string and {description, step_type} sub-steps; `new_step_ids` beside `sub_step_ids`; ids continue after existing children", async () => {
    const e = await env();
    const p = await publish(e, { goal: "dev", steps: ["a", "b"] });
    const [A] = p.stepIds as [string];
    const first = await okShim(e, "deviate.sh", {
      parent_step_id: A,
      justification: "split it",
      sub_steps: ["look", { description: "fix", step_type: "CODE" }],
    });
    expect(first.result).toMatchObject({
      accepted: true,
      new_step_ids: [`${A}.1`, `${A}.2`],
      sub_step_ids: [`${A}.1`, `${A}.2`],
      justification_logged: true,
      revision_count: 1,
    });
    expect(first.result.deviation_id).toEqual(expect.any(Number));
    expect(step(e, `${A}.1`)).toMatchObject({ type: "", title: "look" });
    expect(step(e, `${A}.2`)).toMatchObject({ type: "CODE", title: "fix" });
    const second = await okShim(e, "deviate.sh", {
      parent_step_id: A,
      justification: "one more",
      sub_steps: [{ title: "check", type: "TEST" }],
    });
    expect(second.result.new_step_ids).toEqual([`${A}.3`]);
  });

  test('deviate on a COMPLETED parent: exit 4, stderr `rejected` + `immutable`, stdout `"accepted": false`', async () => {
    const e = await env();
    const p = await publish(e, { goal: "imm", steps: ["a", "b"] });
    const [A] = p.stepIds as [string];
    await okShim(e, "start-step.sh", { step_id: A });
    await okShim(e, "complete-step.sh", { step_id: A });
    const r = await refused(
      e,
      "deviate.sh",
      { parent_step_id: A, justification: "j", sub_steps: ["x"] },
      4,
      /immutab/,
    );
    expect(r.stderr).toContain("rejected");
    expect(r.stdout).toContain('"accepted": false');
  });

  test("an exhausted revision budget is a hard stop naming raise-budget; raise-budget lifts it (`raised: true`)", async () => {
    const e = await env();
    const p = await publish(e, { goal: "budget", max_revisions: 1, steps: ["a"] });
    const [A] = p.stepIds as [string];
    await okShim(e, "deviate.sh", { parent_step_id: A, justification: "1", sub_steps: ["x"] });
    await refused(
      e,
      "deviate.sh",
      { parent_step_id: A, justification: "2", sub_steps: ["y"] },
      6,
      /raise-budget/,
    );
    const raised = await okShim(e, "raise-budget.sh", { plan_id: p.planId, new_max: 3, reason: "worth it" });
    expect(raised.result).toMatchObject({ raised: true, new_max: 3, old_max: 1 });
    await okShim(e, "deviate.sh", { parent_step_id: A, justification: "2", sub_steps: ["y"] });
  });

  test("FL-022: a FAILED step of a FAILED plan takes retries; the plan is re-judged and closes when they complete", async () => {
    const e = await env();
    const p = await publish(e, { goal: "recover", steps: ["a"] });
    const [A] = p.stepIds as [string];
    await okShim(e, "start-step.sh", { step_id: A });
    const f = await okShim(e, "fail-step.sh", { step_id: A, reason: "flaky" });
    expect(f.marker).toMatchObject({ plan_status: "FAILED" });
    expect(logs(e, A)).toContain("[FAILED] flaky");
    const d = await okShim(e, "deviate.sh", {
      parent_step_id: A,
      justification: "retry",
      sub_steps: ["again"],
    });
    expect(d.result).toMatchObject({ accepted: true, new_step_ids: [`${A}.1`] });
    expect(plan(e, p.planId).status).toBe("IN_PROGRESS");
    expect(step(e, p.review).status).toBe("PENDING");
    await okShim(e, "start-step.sh", { step_id: `${A}.1` });
    const c = await okShim(e, "complete-step.sh", { step_id: `${A}.1` });
    expect(c.marker).toMatchObject({ plan_status: "COMPLETED" });
  });
});

describe("§5 plan flows, skills, metrics", () => {
  test("finish-plan on a COMPLETED or FAILED plan: exit 0, nothing written, `review_outcome.reason`, `completed_at` unchanged", async () => {
    const e = await env();
    for (const outcome of ["complete", "fail"] as const) {
      const p = await publish(e, { goal: `finish ${outcome}`, steps: ["a"] });
      const [A] = p.stepIds as [string];
      await okShim(e, "start-step.sh", { step_id: A });
      await okShim(e, `${outcome}-step.sh`, { step_id: A, ...(outcome === "fail" ? { reason: "r" } : {}) });
      const closedAt = plan(e, p.planId).finished_at;
      const before = snapshot(e.ws);
      const r = await okShim(e, "finish-plan.sh", { plan_id: p.planId });
      expect(r.result).toMatchObject({
        plan_id: p.planId,
        completed_at: closedAt,
        review_outcome: { reason: "review step already terminal (idempotent no-op)" },
      });
      expect(snapshot(e.ws)).toEqual(before);
    }
  });

  test("finish-plan on NEEDS_REVIEW: exit 7 naming NEEDS_REVIEW and <plan>-REVIEW.1", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    const p = await publish(e, { goal: "review", steps: ["a"] }, { cwd: repo });
    await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    const c = await okShim(e, "complete-step.sh", { step_id: p.stepIds[0] });
    expect(c.marker).toMatchObject({
      needs_agent_review: true,
      project: "shop",
      review_step_id: p.review,
      review_child_step_id: `${p.review}.1`,
    });
    const r = await refused(e, "finish-plan.sh", { plan_id: p.planId }, 7, /NEEDS_REVIEW/);
    expect(r.stderr).toContain(`${p.planId}-REVIEW.1`);
  });

  test("abandon-plan: blank reason and started steps refused by name; a deviation row `[ABANDONED] <reason>`, reason on the plan", async () => {
    const e = await env();
    const p = await publish(e, { goal: "abandon", steps: ["a", "b"] });
    await refused(e, "abandon-plan.sh", { plan_id: p.planId, reason: "  " }, 2, /reason/);
    const started = await publish(e, { goal: "started", steps: ["a"] });
    await okShim(e, "start-step.sh", { step_id: started.stepIds[0] });
    await refused(
      e,
      "abandon-plan.sh",
      { plan_id: started.planId, reason: "r" },
      4,
      new RegExp(String(started.stepIds[0])),
    );
    const r = await okShim(e, "abandon-plan.sh", { plan_id: p.planId, reason: "published by mistake" });
    expect(r.result).toMatchObject({ status: "ABANDONED", revision_count: 0 });
    expect(plan(e, p.planId)).toMatchObject({
      status: "ABANDONED",
      revision_count: 0,
      abandon_reason: "published by mistake",
    });
    expect(
      query(e.ws, "SELECT kind, parent_step_id, justification FROM deviations WHERE plan_id = ?", p.planId),
    ).toEqual([{ kind: "abandon", parent_step_id: null, justification: "[ABANDONED] published by mistake" }]);
  });

  test("FL-019: a failed review re-opens through a deviation under -REVIEW.1 and closes COMPLETED (`[REVIEW REOPENED]`)", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    const p = await publish(e, { goal: "reopen", steps: ["a"] }, { cwd: repo });
    const child = `${p.review}.1`;
    await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    await okShim(e, "complete-step.sh", { step_id: p.stepIds[0] });
    expect(plan(e, p.planId).review_state).toBe("awaiting_agent");
    await okShim(e, "start-step.sh", { step_id: child });
    const f = await okShim(e, "fail-step.sh", { step_id: child, reason: "state graph gap" });
    expect(f.marker).toMatchObject({ plan_status: "FAILED" });
    // Passing the failed review before recovering it is refused, naming recovery.
    await refused(e, "agent-review-close.sh", { plan_id: p.planId, outcome: "pass" }, 4, /recover/);
    const d = await okShim(e, "deviate.sh", {
      parent_step_id: child,
      justification: "fill the gap",
      sub_steps: ["update graph"],
    });
    expect(d.result.new_step_ids).toEqual([`${child}.1`]);
    expect(step(e, p.review).status).toBe("NEEDS_REVIEW");
    await okShim(e, "start-step.sh", { step_id: `${child}.1` });
    const c = await okShim(e, "complete-step.sh", { step_id: `${child}.1` });
    expect(c.marker).toMatchObject({ plan_status: "COMPLETED" });
    expect(plan(e, p.planId)).toMatchObject({ status: "COMPLETED", review_state: "reviewed" });
    expect(step(e, p.review).status).toBe("COMPLETED");
    expect(logs(e, p.review).some((l) => l.startsWith("[REVIEW REOPENED]"))).toBe(true);
  });

  test("review bookkeeping: `review_state`, `[AGENT-REVIEW PASS] <summary>`, exposed by `plan show --json`", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    const p = await publish(e, { goal: "bookkeeping", steps: ["a"] }, { cwd: repo });
    await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    await okShim(e, "complete-step.sh", { step_id: p.stepIds[0] });
    const r = await okShim(e, "agent-review-close.sh", {
      plan_id: p.planId,
      outcome: "pass",
      summary: "graph ok",
    });
    expect(r.result).toMatchObject({ outcome: "pass", status: "COMPLETED" });
    expect(logs(e, p.review)).toContain("[AGENT-REVIEW PASS] graph ok");
    const show = await e.ws.run(["plan", "show", p.planId, "--json"]);
    expect(JSON.parse(show.stdout).plan).toMatchObject({
      review_state: "reviewed",
      review_skip_reason: null,
    });
  });

  test("record-skill: `source` must be one of the four; result `{recorded: true, plan_id, skill}`", async () => {
    const e = await env();
    const p = await publish(e, { goal: "skills", steps: ["a"] });
    const r = await okShim(e, "record-skill.sh", { plan_id: p.planId, name: "tdd", source: "deferred-load" });
    expect(r.result).toMatchObject({ recorded: true, plan_id: p.planId, skill: "tdd" });
    await refused(
      e,
      "record-skill.sh",
      { plan_id: p.planId, name: "tdd", source: "vibes" },
      2,
      /source.*deferred-load/,
    );
  });

  test("record-metric: project from the plan (or step), `none` is none, none at all refused; numeric strings; `source`", async () => {
    const e = await env();
    const repo = await project(e, "shop");
    const withProject = await publish(e, { goal: "m", steps: ["a"] }, { cwd: repo });
    const noProject = await publish(e, { goal: "m2", project: "none", steps: ["a"] });
    const m = await okShim(e, "record-metric.sh", {
      name: "auc",
      value: " 0.91 ",
      step_id: withProject.stepIds[0],
    });
    expect(m.result).toMatchObject({
      project: "shop",
      value: 0.91,
      plan_id: withProject.planId,
      source: "record-metric",
    });
    await okShim(e, "record-metric.sh", {
      name: "n",
      value: 3,
      plan_id: withProject.planId,
      source: "nightly",
    });
    expect(query(e.ws, "SELECT source FROM metrics ORDER BY id").map((r) => r.source)).toEqual([
      "record-metric",
      "nightly",
    ]);
    await refused(
      e,
      "record-metric.sh",
      { name: "auc", value: 1, plan_id: noProject.planId },
      2,
      /'project' is required/,
    );
    await refused(
      e,
      "record-metric.sh",
      { name: "auc", value: 1, project: "none" },
      2,
      /'project' is required/,
    );
    for (const value of [true, null, "", "abc", "NaN", "Infinity"])
      await refused(e, "record-metric.sh", { name: "auc", value, project: "shop" }, 2, /value/);
  });
});

describe("§6 the provenance ops of update-input.schema.json", () => {
  test("reason-slots, reason-fill and headline-respond through their shims: refusals with the original's wording, then a fill", async () => {
    const e = await env();
    for (const s of ["reason-slots.sh", "reason-fill.sh", "headline-respond.sh"])
      expect(existsSync(join(e.scripts, s)), s).toBe(true);
    const repo = await project(e, "shop");
    const py = join(repo, "pipeline.py");
    writeFileSync(py, "def load_orders(rows):\n    return [r for r in rows if r]\n");
    // Registered before the file existed: refresh the state graph so the baseline sees it.
    const g = await e.ws.run(["graph", "refresh", "--project", "shop"]);
    expect(g.status, g.stderr).toBe(0);
    const p = await publish(e, { goal: "fiscal weeks", project: "shop", steps: ["a"] }, { cwd: repo });
    await okShim(e, "start-step.sh", { step_id: p.stepIds[0] });
    writeFileSync(py, "def load_orders(rows, week):\n    return [r for r in rows if r.week == week]\n");
    await okShim(e, "complete-step.sh", { step_id: p.stepIds[0] });
    // Starting -REVIEW.1 refreshes the graph for the plan: load_orders changed.
    await okShim(e, "start-step.sh", { step_id: `${p.review}.1` });
    const slots = await okShim(e, "reason-slots.sh", { plan_id: p.planId, project: "shop" });
    expect(slots.marker).toMatchObject({ op: "reason-slots", plan_id: p.planId });
    const slot = (slots.result.slots as { node_key: string; qualified_name: string }[]).find(
      (x) => x.qualified_name === "pipeline.load_orders",
    );
    expect(slot, JSON.stringify(slots.result)).toBeDefined();
    const key = slot!.node_key;
    await refused(
      e,
      "reason-fill.sh",
      { plan_id: p.planId, project: "shop", reasons: [{ node_key: key, text: "fiscal weeks" }] },
      2,
      /"text" is not accepted/,
    );
    await refused(
      e,
      "reason-fill.sh",
      { plan_id: p.planId, project: "shop", reasons: [{ node_key: "nk_000000000000", unstated: true }] },
      10,
      /nk_000000000000/,
    );
    await refused(
      e,
      "headline-respond.sh",
      { plan_id: p.planId, finding_id: "active_constraint:x:1", action: "proceed" },
      2,
      /headline/,
    );
    const fill = await okShim(e, "reason-fill.sh", {
      plan_id: p.planId,
      project: "shop",
      reasons: [{ node_key: key, interpretation: "finance reconciles by fiscal week" }],
    });
    expect(fill.marker).toEqual({ ok: true, op: "reason-fill", plan_id: p.planId });
    expect(fill.result).toMatchObject({ filled: 1, asserted: 1, unknown_keys: [] });
  });

  test("reason-slots of a project without a state graph exits 10 naming `no state graph`", async () => {
    const e = await env();
    const r = await e.ws.run(["project", "add", "bare"]);
    expect(r.status, r.stderr).toBe(0);
    const p = await publish(e, { goal: "no graph", project: "bare", steps: ["a"] });
    await refused(e, "reason-slots.sh", { plan_id: p.planId, project: "bare" }, 10, /no state graph/);
  });
});

describe("drop-in", () => {
  test("ORCH_DB names the store when RATCHET_DB is unset; an original orchestrator.db is refused untouched", async () => {
    const e = await env();
    const p = await publish(e, { goal: "env", steps: ["a"] });
    expect(plan(e, p.planId)).toBeDefined();
    const orig = join(e.cwd, "orchestrator.db");
    const db = new Database(orig);
    db.exec("CREATE TABLE Plans (plan_id TEXT PRIMARY KEY); CREATE TABLE Steps (step_id TEXT PRIMARY KEY);");
    db.close();
    const before = readFileSync(orig);
    const r = await shim(e, "publish-plan.sh", { goal: "g", steps: ["a"] }, { env: { ORCH_DB: orig } });
    expect(r.status).toBe(3);
    expect(r.stderr).toContain("ratchet import provledger");
    expect(readFileSync(orig).equals(before)).toBe(true);
    expect(existsSync(`${orig}-wal`)).toBe(false);
  });

  test("`ratchet shims` writes one executable script per op of the original", async () => {
    const e = await env();
    for (const s of [
      "publish-plan.sh",
      "start-step.sh",
      "complete-step.sh",
      "fail-step.sh",
      "append-log.sh",
      "run-step.sh",
      "deviate.sh",
      "record-skill.sh",
      "record-metric.sh",
      "raise-budget.sh",
      "abandon-plan.sh",
      "finish-plan.sh",
      "agent-review-close.sh",
    ])
      expect(existsSync(join(e.scripts, s)), s).toBe(true);
  });
});
