/**
 * The ledger's write flows and reads, driven through the BUILT `ratchet` CLI as an agent would:
 * JSON (or YAML) input from a file or from stdin, the result on stdout with a one-line JSON marker
 * last, and the exit statuses of DESIGN.md §6. The store is inspected read-only afterwards.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  type CliResult,
  eventsByType,
  type Marker,
  makeTempDir,
  makeWorkspace,
  ok,
  publish,
  query,
  type RunOptions,
  ratchet,
  snapshot,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

type Via = "file" | "stdin";

const workspaces: TestWorkspace[] = [];
async function workspace(opts: { demo?: boolean } = {}): Promise<TestWorkspace> {
  const ws = await makeWorkspace("ratchet-e2e-ledger-");
  workspaces.push(ws);
  // A metric names a project (the original's rule): "demo" has no repo, so no plan joins it.
  if (opts.demo) expect((await ws.run(["project", "add", "demo"])).status).toBe(0);
  return ws;
}

beforeAll(() => {
  assertBuilt();
});
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** Runs a write flow with its input from a file or from stdin (`-`). */
function flow(
  ws: TestWorkspace,
  via: Via,
  args: readonly string[],
  input: unknown,
  extra: Partial<RunOptions> = {},
): Promise<CliResult> {
  const text = typeof input === "string" ? input : JSON.stringify(input);
  if (via === "file") return ws.run([...args, ws.input(`${args.join("-")}.json`, text)], extra);
  return ws.run([...args, "-"], { ...extra, input: text });
}

/** Asserts a successful flow: exit 0 and a last stdout line `{"ok":true,"op":op,…}`. */
function expectOk(r: CliResult, op: string): Marker {
  expect(r.status, `${op} failed: ${r.stderr}${r.stdout}`).toBe(0);
  expect(r.marker).toMatchObject({ ok: true, op });
  return r.marker as Marker;
}

/** Asserts a refused/failed flow: the status, an `ok:false` marker naming the op, a stderr message. */
function expectError(r: CliResult, op: string, status: number, message: RegExp | string): Marker {
  expect(r.status, `${op}: ${r.stderr}${r.stdout}`).toBe(status);
  expect(r.marker).toMatchObject({ ok: false, op, exit_status: status });
  if (status >= 4 && status <= 7) expect(r.marker).toMatchObject({ accepted: false });
  expect(r.stderr).toMatch(typeof message === "string" ? new RegExp(escapeRe(message)) : message);
  return r.marker as Marker;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function stepRow(ws: TestWorkspace, stepId: string): Record<string, unknown> {
  const rows = query(ws, "SELECT * FROM steps WHERE step_id = ?", stepId);
  expect(rows, `step ${stepId} exists`).toHaveLength(1);
  return rows[0] as Record<string, unknown>;
}

function planRow(ws: TestWorkspace, planId: string): Record<string, unknown> {
  const rows = query(ws, "SELECT * FROM plans WHERE plan_id = ?", planId);
  expect(rows, `plan ${planId} exists`).toHaveLength(1);
  return rows[0] as Record<string, unknown>;
}

describe.each<Via>(["file", "stdin"])("write flows with JSON input from %s", (via) => {
  test("publish, start, heartbeat, log, complete, run, fail, deviate, record-skill, record-metric: the last completion closes the plan", async () => {
    const ws = await workspace({ demo: true });
    const pub = await flow(ws, via, ["plan", "publish"], {
      goal: `Ship the login fix (${via})`,
      steps: [
        { title: "Think it through", type: "THINKING", description: "why it broke" },
        { title: "Build", type: "COMMAND" },
        { title: "Analyse", type: "ANALYSIS" },
        { title: "Hand to a sub-agent", type: "SUB_AGENT" },
      ],
    });
    const pm = expectOk(pub, "publish-plan");
    const planId = pm.plan_id as string;
    expect(planId).toMatch(new RegExp(`^ship-the-login-fix-${via}-\\d{14}$`));
    const [A, B, C, D] = ["A", "B", "C", "D"].map((l) => `${planId}-${l}`) as [
      string,
      string,
      string,
      string,
    ];
    // Regular steps only (the original's shape); the review step is review_step_id.
    expect(pm.step_ids).toEqual([A, B, C, D]);
    expect(pm).toMatchObject({ status: "IN_PROGRESS", max_revisions: 5, review_step_id: `${planId}-REVIEW` });
    // The pretty result precedes the marker.
    expect(JSON.parse(pub.stdout.slice(0, pub.stdout.lastIndexOf("\n{"))).plan_id).toBe(planId);

    const st = expectOk(
      await flow(ws, via, ["step", "start"], {
        step_id: A,
        agent_input: "the prompt",
        log_context: "kickoff notes",
        lease_seconds: 600,
      }),
      "start-step",
    );
    expect(st).toMatchObject({ step_id: A, plan_id: planId, status: "IN_PROGRESS", type: "THINKING" });
    expect(st.lease_holder).toMatch(/^\d+@/);
    expect(stepRow(ws, A)).toMatchObject({ status: "IN_PROGRESS", agent_input: "the prompt" });
    expect(stepRow(ws, A).lease_expires_at).toEqual(expect.any(Number));

    const hb = expectOk(
      await flow(ws, via, ["step", "heartbeat"], { step_id: A, lease_seconds: 900 }),
      "heartbeat",
    );
    expect(hb).toMatchObject({ step_id: A, status: "IN_PROGRESS" });
    expect(Date.parse(hb.lease_expires_at as string)).toBeGreaterThan(
      Date.parse(st.lease_expires_at as string),
    );

    const lg = expectOk(
      await flow(ws, via, ["step", "log"], { step_id: A, text: "raw output\n" }),
      "append-log",
    );
    expect(lg).toMatchObject({ step_id: A, bytes: 11 });

    const done = expectOk(
      await flow(ws, via, ["step", "complete"], { step_id: A, summary: "understood", agent_output: "notes" }),
      "complete-step",
    );
    expect(done).toMatchObject({ step_id: A, status: "COMPLETED", plan_status: "IN_PROGRESS" });
    expect(stepRow(ws, A)).toMatchObject({
      status: "COMPLETED",
      summary: "understood",
      agent_output: "notes",
      lease_holder: null,
    });

    const run = await flow(ws, via, ["step", "run"], {
      step_id: B,
      type: "COMMAND",
      command: "echo building; echo 'metric name=build_seconds value=12.5 unit=s'",
      summary: "built",
      metrics_from_stdout: true,
    });
    const rm = expectOk(run, "run-step");
    expect(rm).toMatchObject({ step_id: B, status: "COMPLETED", exit_code: 0, metrics_recorded: 1 });
    expect(stepRow(ws, B)).toMatchObject({ status: "COMPLETED", exit_code: 0, summary: "built" });

    expectOk(await flow(ws, via, ["step", "start"], { step_id: C }), "start-step");
    const fl = expectOk(
      await flow(ws, via, ["step", "fail"], { step_id: C, reason: "numbers disagree", log_context: "diff…" }),
      "fail-step",
    );
    expect(fl).toMatchObject({
      step_id: C,
      status: "FAILED",
      reason: "numbers disagree",
      plan_status: "IN_PROGRESS",
    });

    const dv = expectOk(
      await flow(ws, via, ["step", "deviate"], {
        parent_step_id: C,
        justification: "retry with the right data",
        sub_steps: [{ title: "Analyse again", type: "ANALYSIS" }],
      }),
      "deviate",
    );
    expect(dv).toMatchObject({ parent_step_id: C, sub_step_ids: [`${C}.1`], depth: 1, revision_count: 1 });

    const sk = expectOk(
      await flow(ws, via, ["plan", "record-skill"], {
        plan_id: planId,
        step_id: C,
        name: "systematic-debugging",
        source: "explicit-mention",
        reason: "a failed analysis",
      }),
      "record-skill",
    );
    expect(sk).toMatchObject({ plan_id: planId, name: "systematic-debugging", skill_id: expect.any(Number) });

    const mt = expectOk(
      await flow(ws, via, ["metric", "record"], {
        name: "auc",
        value: 0.91,
        plan_id: planId,
        step_id: C,
        project: "demo",
      }),
      "record-metric",
    );
    expect(mt).toMatchObject({ name: "auc", value: 0.91, plan_id: planId, step_id: C, project: "demo" });

    expectOk(await flow(ws, via, ["step", "start"], { step_id: `${C}.1` }), "start-step");
    expectOk(await flow(ws, via, ["step", "complete"], { step_id: `${C}.1` }), "complete-step");
    expectOk(await flow(ws, via, ["step", "start"], { step_id: D }), "start-step");
    const last = expectOk(await flow(ws, via, ["step", "complete"], { step_id: D }), "complete-step");
    // C failed but its deviation child recovered it: the roll-up closes review and plan.
    expect(last).toMatchObject({ plan_status: "COMPLETED", review_status: "COMPLETED" });
    expect(last.needs_agent_review).toBeUndefined();

    expect(planRow(ws, planId)).toMatchObject({ status: "COMPLETED", revision_count: 1 });
    expect(stepRow(ws, `${planId}-REVIEW`)).toMatchObject({ status: "COMPLETED" });
    const snap = snapshot(ws);
    expect(snap.counts).toMatchObject({ plans: 1, steps: 6, deviations: 1, skills: 1, metrics: 2 });
    // start log, appended log, B's kickoff + run log, C's fail log and its [FAILED] line, the
    // review's [REVIEW SKIPPED].
    expect(snap.counts.step_logs).toBe(7);
    const types = eventsByType(ws);
    expect(types).toMatchObject({
      "plan.published": 1,
      "step.in_progress": 6, // A, B, C, C.1, D, and the review (by the roll-up)
      "step.completed": 5, // A, B, C.1, D, review
      "step.failed": 1,
      "step.heartbeat": 1,
      "step.log_appended": 1,
      "plan.deviated": 1,
      "plan.skill_recorded": 1,
      "metric.recorded": 2,
      "plan.completed": 1,
    });
  });

  test("publish accepts YAML (a .yaml file, or YAML text on stdin)", async () => {
    const ws = await workspace();
    const yaml = [
      "goal: Migrate the schema in YAML",
      "max_revisions: 2",
      "steps:",
      "  - title: Write the migration",
      "    type: CODE",
      "  - title: Run it",
      "    type: COMMAND",
      "    description: |",
      "      two lines",
      "      of description",
      "",
    ].join("\n");
    const r =
      via === "file"
        ? await ws.run(["plan", "publish", ws.input("plan.yaml", yaml)])
        : await ws.run(["plan", "publish", "-"], { input: yaml });
    const m = expectOk(r, "publish-plan");
    expect(m).toMatchObject({ goal: "Migrate the schema in YAML", max_revisions: 2 });
    const planId = m.plan_id as string;
    expect(
      query(ws, "SELECT title, type, description FROM steps WHERE plan_id = ? ORDER BY seq", planId),
    ).toEqual([
      { title: "Write the migration", type: "CODE", description: null },
      { title: "Run it", type: "COMMAND", description: "two lines\nof description\n" },
      { title: "Review and close the plan", type: "SUB_AGENT", description: null },
    ]);
    // A .yml file holding JSON text is read as YAML too (JSON is YAML).
    if (via === "file") {
      const again = await ws.run([
        "plan",
        "publish",
        ws.input(
          "plan.yml",
          JSON.stringify({ goal: "JSON in a yml file", steps: [{ title: "x", type: "TEST" }] }),
        ),
      ]);
      expectOk(again, "publish-plan");
    }
  });

  test("raise-budget lifts the hard revision breaker; abandon; finish (forced and roll-up); sweep", async () => {
    const ws = await workspace();
    const p = await publish(ws, {
      goal: `Budgeted ${via}`,
      max_revisions: 1,
      steps: [
        { title: "a", type: "THINKING" },
        { title: "b", type: "THINKING" },
      ],
    });
    const [A, B] = p.step_ids as [string, string];
    const sub = { justification: "need more", sub_steps: [{ title: "more", type: "CODE" }] };
    expectOk(await flow(ws, via, ["step", "deviate"], { parent_step_id: A, ...sub }), "deviate");
    const before = snapshot(ws);
    const refused = expectError(
      await flow(ws, via, ["step", "deviate"], { parent_step_id: A, ...sub }),
      "deviate",
      6,
      /revision budget \(1\/1\)/,
    );
    expect(refused).toMatchObject({ breaker: "hard", code: "revision_budget_exhausted" });
    expect(snapshot(ws)).toEqual(before);

    const rb = expectOk(
      await flow(ws, via, ["plan", "raise-budget"], { plan_id: p.plan_id, new_max: 3, reason: "scope grew" }),
      "raise-budget",
    );
    expect(rb).toMatchObject({ plan_id: p.plan_id, old_max: 1, new_max: 3, revision_count: 1 });
    expect(
      query(ws, "SELECT kind, justification, old_max, new_max FROM deviations WHERE kind = 'raise_budget'"),
    ).toEqual([{ kind: "raise_budget", justification: "scope grew", old_max: 1, new_max: 3 }]);
    expectOk(await flow(ws, via, ["step", "deviate"], { parent_step_id: A, ...sub }), "deviate");
    expect(planRow(ws, p.plan_id)).toMatchObject({ revision_count: 2, max_revisions: 3 });

    // finish with PENDING steps: a forced finish.
    const fin = expectOk(await flow(ws, via, ["plan", "finish"], { plan_id: p.plan_id }), "finish-plan");
    expect(fin).toMatchObject({
      mode: "forced",
      status: "COMPLETED",
      open_steps: [A, B, `${A}.1`, `${A}.2`],
    });
    expect(planRow(ws, p.plan_id)).toMatchObject({ status: "COMPLETED" });

    // abandon a plan nobody started.
    const q = await publish(ws, { goal: `Abandon me ${via}`, steps: [{ title: "a", type: "CODE" }] });
    const ab = expectOk(
      await flow(ws, via, ["plan", "abandon"], { plan_id: q.plan_id, reason: "published by mistake" }),
      "abandon-plan",
    );
    expect(ab).toMatchObject({ plan_id: q.plan_id, status: "ABANDONED" });
    expect(planRow(ws, q.plan_id)).toMatchObject({ status: "ABANDONED" });

    // finish on a plan whose steps are all terminal runs the roll-up.
    const r = await publish(ws, { goal: `Roll me up ${via}`, steps: [{ title: "a", type: "THINKING" }] });
    const [RA] = r.step_ids as [string];
    expectOk(await flow(ws, via, ["step", "start"], { step_id: RA }), "start-step");
    expectOk(await flow(ws, via, ["step", "fail"], { step_id: RA, reason: "no" }), "fail-step");
    expect(planRow(ws, r.plan_id)).toMatchObject({ status: "FAILED" });
    // finish on a closed plan is the original's idempotent no-op.
    const noop = expectOk(await flow(ws, via, ["plan", "finish"], { plan_id: r.plan_id }), "finish-plan");
    expect(noop).toMatchObject({ status: "FAILED", mode: "noop" });

    // sweep: with an input naming the plan, and with no input at all; nothing is expired.
    const s = await publish(ws, { goal: `Sweep me ${via}`, steps: [{ title: "a", type: "THINKING" }] });
    expectOk(
      await flow(ws, via, ["step", "start"], { step_id: s.step_ids[0], lease_seconds: 3600 }),
      "start-step",
    );
    const sw = expectOk(await flow(ws, via, ["plan", "sweep"], { plan_id: s.plan_id }), "sweep");
    expect(sw).toMatchObject({ count: 0 });
    expectOk(await ws.run(["plan", "sweep"]), "sweep");
    expect(stepRow(ws, s.step_ids[0] as string)).toMatchObject({ status: "IN_PROGRESS" });
  });

  test("a registered-project plan hands off to an agent review: finish exits 7, review-close finalizes", async () => {
    const ws = await workspace();
    const add = await ws.run(["project", "add", "billing"]);
    expectOk(add, "project-add");
    const p = await publish(ws, {
      goal: `Billing change ${via}`,
      project: "billing",
      steps: [{ title: "a", type: "CODE" }],
    });
    expect(p.marker).toMatchObject({ project: "billing", project_source: "declared" });
    const [A] = p.step_ids as [string];
    expectOk(await flow(ws, via, ["step", "start"], { step_id: A }), "start-step");
    const c = expectOk(await flow(ws, via, ["step", "complete"], { step_id: A }), "complete-step");
    expect(c).toMatchObject({
      needs_agent_review: true,
      project: "billing",
      plan_status: "IN_PROGRESS",
      review_status: "NEEDS_REVIEW",
      review_step_id: `${p.plan_id}-REVIEW`,
      review_child_step_id: `${p.plan_id}-REVIEW.1`,
    });
    expect(stepRow(ws, `${p.plan_id}-REVIEW.1`)).toMatchObject({
      status: "PENDING",
      type: "SUB_AGENT",
      role: "review_child",
    });
    expect(planRow(ws, p.plan_id)).toMatchObject({ status: "IN_PROGRESS", revision_count: 1 });

    const before = snapshot(ws);
    const fin = expectError(
      await flow(ws, via, ["plan", "finish"], { plan_id: p.plan_id }),
      "finish-plan",
      7,
      `awaits its agent review: complete or fail ${p.plan_id}-REVIEW.1`,
    );
    expect(fin).toMatchObject({ code: "plan_awaits_review" });
    expect(snapshot(ws)).toEqual(before);

    const rc = expectOk(
      await flow(ws, via, ["plan", "review-close"], {
        plan_id: p.plan_id,
        outcome: "pass",
        summary: "graph updated",
        log_context: "review notes",
      }),
      "agent-review-close",
    );
    expect(rc).toMatchObject({ plan_id: p.plan_id, outcome: "pass", status: "COMPLETED" });
    expect(planRow(ws, p.plan_id)).toMatchObject({ status: "COMPLETED" });
    expect(stepRow(ws, `${p.plan_id}-REVIEW`)).toMatchObject({
      status: "COMPLETED",
      summary: "graph updated",
    });
    expect(stepRow(ws, `${p.plan_id}-REVIEW.1`)).toMatchObject({ status: "COMPLETED" });
  });
});

describe("exit statuses", () => {
  let ws: TestWorkspace;
  beforeAll(async () => {
    ws = await workspace();
  });

  test("3: unknown plan, step, project; no workspace at all", async () => {
    const before = snapshot(ws);
    expectError(
      await ws.run(["plan", "finish", "-"], { input: '{"plan_id":"no-such-plan"}' }),
      "finish-plan",
      3,
      "plan no-such-plan not found",
    );
    expectError(
      await ws.run(["step", "start", "-"], { input: '{"step_id":"no-such-step"}' }),
      "start-step",
      3,
      "step no-such-step not found",
    );
    expectError(
      await ws.run(["plan", "publish", "-"], {
        input: JSON.stringify({ goal: "g", project: "ghost", steps: [{ title: "t", type: "CODE" }] }),
      }),
      "publish-plan",
      3,
      "project ghost is not registered",
    );
    expect(snapshot(ws)).toEqual(before);

    const empty = makeTempDir("ratchet-e2e-noworkspace-");
    try {
      const r = await ratchet(["step", "start", "-"], { cwd: empty, input: '{"step_id":"x"}' });
      expectError(r, "start-step", 3, "no Ratchet workspace");
      const list = await ratchet(["plan", "list"], { cwd: empty });
      expect(list.status).toBe(3);
      expect(list.stderr).toMatch(/no Ratchet workspace/);
    } finally {
      execFileSync("rm", ["-rf", empty]);
    }
  });

  test("4: illegal transition, deviate on COMPLETED, depth > 3, abandon after start — nothing written", async () => {
    const p = await publish(ws, {
      goal: "Refusals",
      steps: [
        { title: "a", type: "THINKING" },
        { title: "b", type: "THINKING" },
        { title: "c", type: "THINKING" },
      ],
    });
    const [A, B] = p.step_ids as [string, string];
    const refuse = async (args: string[], input: unknown, op: string, message: string | RegExp) => {
      const before = snapshot(ws);
      const m = expectError(await ws.run([...args, "-"], { input: JSON.stringify(input) }), op, 4, message);
      expect(m.breaker).toBe("soft");
      expect(snapshot(ws)).toEqual(before);
      return m;
    };
    await refuse(
      ["step", "complete"],
      { step_id: A },
      "complete-step",
      `cannot move from PENDING to COMPLETED`,
    );
    await refuse(["step", "heartbeat"], { step_id: A }, "heartbeat", "holds no lease");
    await refuse(["step", "start"], { step_id: p.review_step_id }, "start-step", "is the review step");

    await ok(ws, ["step", "start"], { step_id: A });
    await ok(ws, ["step", "complete"], { step_id: A });
    await refuse(["step", "start"], { step_id: A }, "start-step", "COMPLETED is immutable");
    const dev = await refuse(
      ["step", "deviate"],
      { parent_step_id: A, justification: "redo", sub_steps: [{ title: "x", type: "CODE" }] },
      "deviate",
      `step ${A} is COMPLETED (immutable)`,
    );
    expect(dev.code).toBe("soft_breaker");

    // depth: B (0) → B.1 (1) → B.1.1 (2) → B.1.1.1 (3) → refused at 4.
    let parent = B;
    for (let d = 1; d <= 3; d++) {
      const m = await ok(ws, ["step", "deviate"], {
        parent_step_id: parent,
        justification: `level ${d}`,
        sub_steps: [{ title: `level ${d}`, type: "CODE" }],
      });
      expect(m.depth).toBe(d);
      parent = `${parent}.1`;
    }
    expect(parent).toBe(`${B}.1.1.1`);
    await refuse(
      ["step", "deviate"],
      { parent_step_id: parent, justification: "deeper", sub_steps: [{ title: "x", type: "CODE" }] },
      "deviate",
      "would reach depth 4 (limit 3)",
    );

    await refuse(
      ["plan", "abandon"],
      { plan_id: p.plan_id, reason: "changed my mind" },
      "abandon-plan",
      "has started steps",
    );
  });

  test("5: complete on a COMMAND step (shell work goes through step run)", async () => {
    const p = await publish(ws, { goal: "Command step", steps: [{ title: "build", type: "COMMAND" }] });
    const [A] = p.step_ids as [string];
    // start-step refuses a COMMAND step too (5, naming run-step).
    const st = expectError(
      await ws.run(["step", "start", "-"], { input: JSON.stringify({ step_id: A }) }),
      "start-step",
      5,
      "shell work starts through run-step",
    );
    expect(st.code).toBe("complete_on_command");
    const before = snapshot(ws);
    const m = expectError(
      await ws.run(["step", "complete", "-"], { input: JSON.stringify({ step_id: A }) }),
      "complete-step",
      5,
      "is a COMMAND step: shell work completes through run-step",
    );
    expect(m.code).toBe("complete_on_command");
    expect(snapshot(ws)).toEqual(before);
  });

  test("7: finish on a plan awaiting review, for a plan published from inside a registered repo", async () => {
    const repo = join(ws.dir, "repos", "shop");
    mkdirSync(repo, { recursive: true });
    execFileSync("git", ["init", "-q", repo]);
    const sub = join(repo, "src");
    mkdirSync(sub);
    expectOk(await ws.run(["project", "add", "shop", "--repo", repo]), "project-add");
    const listed = await ws.run(["project", "list", "--json"]);
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({ name: "shop", repo_path: realpathSync(repo) }),
    );
    // Publish from a sub-folder of the repo: the workspace is found walking up, the project from git.
    const r = await ratchet(["plan", "publish", "-"], {
      cwd: sub,
      input: JSON.stringify({ goal: "Shop change", steps: [{ title: "a", type: "DOCUMENTATION" }] }),
    });
    const pm = expectOk(r, "publish-plan");
    expect(pm).toMatchObject({ project: "shop", project_source: "cwd" });
    const planId = pm.plan_id as string;
    await ok(ws, ["step", "start"], { step_id: `${planId}-A` });
    const c = await ok(ws, ["step", "complete"], { step_id: `${planId}-A` });
    expect(c).toMatchObject({ needs_agent_review: true, project: "shop" });
    const before = snapshot(ws);
    expectError(
      await ws.run(["plan", "finish", "-"], { input: JSON.stringify({ plan_id: planId }) }),
      "finish-plan",
      7,
      "awaits its agent review",
    );
    expect(snapshot(ws)).toEqual(before);
    // Driving the tracked child closes the plan.
    await ok(ws, ["step", "start"], { step_id: `${planId}-REVIEW.1` });
    const closed = await ok(ws, ["step", "complete"], { step_id: `${planId}-REVIEW.1` });
    expect(closed).toMatchObject({ plan_status: "COMPLETED" });
  });

  test("step run exits with the command's status (0, 3, 127) and logs the exit footer", async () => {
    const p = await publish(ws, {
      goal: "Run statuses",
      steps: [
        { title: "ok", type: "COMMAND" },
        { title: "three", type: "COMMAND" },
        { title: "missing", type: "COMMAND" },
        { title: "allowed", type: "TEST" },
      ],
    });
    const [A, B, C, D] = p.step_ids as [string, string, string, string];
    const run = (input: Record<string, unknown>) =>
      ws.run(["step", "run", "-"], { input: JSON.stringify({ type: "COMMAND", ...input }) });

    const r0 = await run({ step_id: A, command: "echo fine" });
    expect(r0.status).toBe(0);
    expect(r0.marker).toMatchObject({ ok: true, op: "run-step", exit_code: 0, status: "COMPLETED" });

    const r3 = await run({ step_id: B, command: "echo failing >&2; exit 3" });
    expect(r3.status).toBe(3);
    expect(r3.marker).toMatchObject({ ok: true, op: "run-step", exit_code: 3, status: "FAILED" });
    expect(r3.stderr).toContain("failing"); // live output goes to stderr

    const r127 = await run({ step_id: C, command: "definitely-not-a-command-xyz --flag" });
    expect(r127.status).toBe(127);
    expect(r127.marker).toMatchObject({ ok: true, op: "run-step", exit_code: 127, status: "FAILED" });

    const rd = await run({ step_id: D, type: "TEST", command: "exit 1", allow_nonzero: true });
    expect(rd.status).toBe(1);
    expect(rd.marker).toMatchObject({ ok: true, op: "run-step", exit_code: 1, status: "COMPLETED" });

    const logs = query<{ step_id: string; text: string }>(
      ws,
      "SELECT step_id, text FROM step_logs WHERE plan_id = ? AND kind = 'run' ORDER BY id",
      p.plan_id,
    );
    expect(logs.map((l) => l.step_id)).toEqual([A, B, C, D]);
    const footer = (n: number) => new RegExp(`--- exit_code=${n}, runtime=\\d+\\.\\d+s ---$`);
    expect(logs[0]?.text).toMatch(/^fine\n/);
    expect(logs[0]?.text).toMatch(footer(0));
    expect(logs[1]?.text).toMatch(/^failing\n/);
    expect(logs[1]?.text).toMatch(footer(3));
    expect(logs[2]?.text).toMatch(/definitely-not-a-command-xyz: command not found/);
    expect(logs[2]?.text).toMatch(footer(127));
    expect(logs[3]?.text).toMatch(footer(1));
    expect(stepRow(ws, C)).toMatchObject({
      status: "FAILED",
      exit_code: 127,
      failure_reason: "command exited with 127",
    });
    // B and C failed without recovery: the roll-up failed the plan.
    expect(planRow(ws, p.plan_id)).toMatchObject({ status: "FAILED" });
  });

  test("step run passes needs_agent_review through on the run that triggered the hand-off", async () => {
    expectOk(await ws.run(["project", "add", "runproj"]), "project-add");
    const p = await publish(ws, {
      goal: "Run into review",
      project: "runproj",
      steps: [
        { title: "a", type: "COMMAND" },
        { title: "b", type: "COMMAND" },
      ],
    });
    const [A, B] = p.step_ids as [string, string];
    const first = await ws.run(["step", "run", "-"], {
      input: JSON.stringify({ step_id: A, type: "COMMAND", command: "true" }),
    });
    expect(first.status).toBe(0);
    expect(first.marker?.needs_agent_review).toBeUndefined();
    const second = await ws.run(["step", "run", "-"], {
      input: JSON.stringify({ step_id: B, type: "COMMAND", command: "true" }),
    });
    expect(second.status).toBe(0);
    expect(second.marker).toMatchObject({
      ok: true,
      op: "run-step",
      exit_code: 0,
      needs_agent_review: true,
      project: "runproj",
      review_step_id: `${p.plan_id}-REVIEW`,
      review_child_step_id: `${p.plan_id}-REVIEW.1`,
    });
    expect(
      query(
        ws,
        "SELECT COUNT(*) AS n FROM events WHERE type = 'plan.needs_review' AND plan_id = ?",
        p.plan_id,
      ),
    ).toEqual([{ n: 1 }]);
  });
});

describe("step apply (a batch of JSON lines)", () => {
  test("one result line per op, a final summary, the exit status of the first failure; from a file and stdin", async () => {
    const ws = await workspace({ demo: true });
    const p = await publish(ws, {
      goal: "Batch",
      steps: [
        { title: "a", type: "THINKING" },
        { title: "b", type: "COMMAND" },
        { title: "c", type: "THINKING" },
      ],
    });
    const [A, B, C] = p.step_ids as [string, string, string];
    const lines = [
      { op: "start-step", step_id: A },
      { op: "append-log", step_id: A, text: "hello" },
      "# a comment and a blank line are skipped",
      "",
      { op: "complete-step", step_id: B }, // 5: COMMAND step → 5 (first failure)
      { op: "complete-step", step_id: A },
      { op: "start-step", step_id: "nope" }, // 3
      { op: "record-metric", name: "m", value: 1, plan_id: p.plan_id, project: "demo" },
      "{not json",
      { op: "teleport", step_id: A },
      { op: "run-step", step_id: B, type: "COMMAND", command: "echo ran" },
    ];
    const text = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
    const r = await ws.run(["step", "apply", ws.input("ops.jsonl", text)]);
    expect(r.status).toBe(5);
    const out = r.lines.map((l) => JSON.parse(l) as Marker);
    expect(out).toHaveLength(10); // 9 ops + summary
    expect(out.slice(0, 9)).toEqual([
      expect.objectContaining({ line: 1, ok: true, op: "start-step", step_id: A }),
      expect.objectContaining({ line: 2, ok: true, op: "append-log" }),
      expect.objectContaining({ line: 5, ok: false, op: "complete-step", accepted: false, exit_status: 5 }),
      expect.objectContaining({ line: 6, ok: true, op: "complete-step", step_id: A }),
      expect.objectContaining({ line: 7, ok: false, op: "start-step", exit_status: 3 }),
      expect.objectContaining({ line: 8, ok: true, op: "record-metric" }),
      expect.objectContaining({ line: 9, ok: false, exit_status: 2, code: "malformed_input" }),
      expect.objectContaining({ line: 10, ok: false, exit_status: 2, field: "op" }),
      expect.objectContaining({ line: 11, ok: true, op: "run-step", exit_code: 0 }),
    ]);
    expect(out[9]).toMatchObject({ ok: false, op: "apply", applied: 5, failed: 4 });
    expect(out[8]?.error ?? "").toBe("");
    expect(String(out[6]?.error)).toMatch(/line 9 is not valid JSON/);
    expect(String(out[7]?.error)).toMatch(/field `op` must be one of .*"teleport"/);
    expect(stepRow(ws, A)).toMatchObject({ status: "COMPLETED" });
    expect(stepRow(ws, B)).toMatchObject({ status: "COMPLETED", exit_code: 0 });

    // From stdin, all good: exit 0, summary ok:true.
    const good = [
      { op: "start-step", step_id: C },
      { op: "complete-step", step_id: C, summary: "done" },
    ];
    const r2 = await ws.run(["step", "apply", "-"], { input: good.map((l) => JSON.stringify(l)).join("\n") });
    expect(r2.status).toBe(0);
    expect(r2.lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ line: 1, ok: true, op: "start-step" }),
      expect.objectContaining({ line: 2, ok: true, op: "complete-step", plan_status: "COMPLETED" }),
      expect.objectContaining({ ok: true, op: "apply", applied: 2, failed: 0 }),
    ]);
  });

  test('a line labelled "as" lends its result to later lines: publish and drive a plan in one batch', async () => {
    const ws = await workspace({ demo: true });
    const lines = [
      {
        op: "publish-plan",
        as: "p",
        goal: "Publish and run in one batch",
        steps: [
          { title: "a", type: "THINKING" },
          { title: "b", type: "THINKING" },
        ],
      },
      { op: "start-step", step_id: "{{p.step_ids.0}}" },
      { op: "complete-step", as: "done-a", step_id: "{{ p.plan_id }}-A", summary: "a of {{p.plan_id}}" },
      { op: "record-metric", name: "m", value: 1, plan_id: "{{p.plan_id}}", project: "demo" },
      { op: "start-step", step_id: "{{q.plan_id}}-B" }, // unknown label: refused, nothing written
      { op: "start-step", step_id: "{{p.nothing}}" }, // unknown field
      { op: "start-step", as: "p", step_id: "{{p.step_ids.1}}" }, // label used twice
      { op: "start-step", step_id: "{{p.step_ids.1}}" },
    ];
    const r = await ws.run(["step", "apply", "-"], { input: lines.map((l) => JSON.stringify(l)).join("\n") });
    expect(r.status, r.stdout).toBe(2);
    const out = r.lines.map((l) => JSON.parse(l) as Marker);
    const planId = String(out[0]?.plan_id);
    expect(planId).toMatch(/^publish-and-run-in-one-batch-/);
    expect(out.slice(0, 8)).toEqual([
      expect.objectContaining({ line: 1, ok: true, op: "publish-plan" }),
      expect.objectContaining({ line: 2, ok: true, op: "start-step", step_id: `${planId}-A` }),
      expect.objectContaining({ line: 3, ok: true, op: "complete-step", step_id: `${planId}-A` }),
      expect.objectContaining({ line: 4, ok: true, op: "record-metric" }),
      expect.objectContaining({ line: 5, ok: false, exit_status: 2, field: "as" }),
      expect.objectContaining({ line: 6, ok: false, exit_status: 2, field: "as" }),
      expect.objectContaining({ line: 7, ok: false, exit_status: 2, field: "as" }),
      expect.objectContaining({ line: 8, ok: true, op: "start-step", step_id: `${planId}-B` }),
    ]);
    expect(String(out[4]?.error)).toMatch(/\{\{q\.plan_id\}\} refers to no earlier line with "as": "q"/);
    expect(String(out[5]?.error)).toMatch(/has no string or number there \(its fields: .*plan_id/);
    expect(String(out[6]?.error)).toMatch(/already used/);
    expect(stepRow(ws, `${planId}-A`)).toMatchObject({ status: "COMPLETED", summary: `a of ${planId}` });
    expect(stepRow(ws, `${planId}-B`)).toMatchObject({ status: "IN_PROGRESS" });
  });

  test("--stop-on-error stops at the first failure; the ops before it stay applied", async () => {
    const ws = await workspace();
    const p = await publish(ws, {
      goal: "Stop early",
      steps: [
        { title: "a", type: "THINKING" },
        { title: "b", type: "THINKING" },
      ],
    });
    const [A, B] = p.step_ids as [string, string];
    const ops = [
      { op: "start-step", step_id: A },
      { op: "complete-step", step_id: B }, // PENDING → COMPLETED: 4
      { op: "complete-step", step_id: A },
      { op: "record-metric", name: "never", value: 1 },
    ];
    const r = await ws.run(["step", "apply", "--stop-on-error", "-"], {
      input: ops.map((o) => JSON.stringify(o)).join("\n"),
    });
    expect(r.status).toBe(4);
    expect(r.lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ line: 1, ok: true, op: "start-step" }),
      expect.objectContaining({ line: 2, ok: false, op: "complete-step", accepted: false, exit_status: 4 }),
      expect.objectContaining({ ok: false, op: "apply", applied: 1, failed: 1 }),
    ]);
    expect(stepRow(ws, A)).toMatchObject({ status: "IN_PROGRESS" });
    expect(snapshot(ws).counts.metrics).toBe(0);
  });
});

describe("reads", () => {
  let ws: TestWorkspace;
  let planId: string;
  let otherPlanId: string;
  beforeAll(async () => {
    ws = await workspace({ demo: true });
    const p = await publish(ws, {
      goal: "Readable plan",
      steps: [
        { title: "first", type: "THINKING" },
        { title: "second", type: "ANALYSIS" },
      ],
    });
    planId = p.plan_id;
    const [A, B] = p.step_ids as [string, string];
    const ops = [
      { op: "start-step", step_id: A },
      { op: "append-log", step_id: A, text: "a log line" },
      { op: "fail-step", step_id: A, reason: "bad" },
      {
        op: "deviate",
        parent_step_id: A,
        justification: "retry",
        sub_steps: [{ title: "again", type: "CODE" }],
      },
      { op: "start-step", step_id: `${A}.1` },
      { op: "complete-step", step_id: `${A}.1`, summary: "fixed" },
      { op: "record-metric", name: "latency", value: 42, unit: "ms", plan_id: planId, project: "demo" },
      { op: "record-skill", plan_id: planId, name: "tdd", source: "explicit-mention" },
      { op: "start-step", step_id: B },
      { op: "complete-step", step_id: B },
    ];
    const r = await ws.run(["step", "apply", "-"], { input: ops.map((o) => JSON.stringify(o)).join("\n") });
    expect(r.status, r.stdout).toBe(0);
    otherPlanId = (await publish(ws, { goal: "Other plan", steps: [{ title: "x", type: "CODE" }] })).plan_id;
  });

  test("plan show: text, --json in tree order, --step, --full; unknown plan/step → 3", async () => {
    const text = await ws.run(["plan", "show", planId]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`${planId}  COMPLETED  revisions 1/5`);
    expect(text.stdout).toContain(`✗ ${planId}-A [THINKING] FAILED  first`);
    expect(text.stdout).toContain(`✓ ${planId}-A.1 [CODE] COMPLETED  again`);
    expect(text.stdout).toContain("│ a log line");
    expect(text.stdout).toContain("latency = 42 ms");
    expect(text.stdout).toContain("tdd (explicit-mention)");
    expect(text.stdout).toMatch(/deviations:\n\s+#1 under .*-A → .*-A\.1: retry/);

    const js = await ws.run(["plan", "show", planId, "--json"]);
    expect(js.status).toBe(0);
    const view = JSON.parse(js.stdout) as {
      plan: { plan_id: string; status: string };
      steps: { step_id: string; children: string[]; logs: { text: string; full?: string }[] }[];
      deviations: unknown[];
      metrics: unknown[];
      skills: unknown[];
    };
    expect(view.plan).toMatchObject({ plan_id: planId, status: "COMPLETED" });
    expect(view.steps.map((s) => s.step_id)).toEqual([
      `${planId}-A`,
      `${planId}-A.1`,
      `${planId}-B`,
      `${planId}-REVIEW`,
    ]);
    expect(view.steps[0]?.children).toEqual([`${planId}-A.1`]);
    expect(view.deviations).toHaveLength(1);
    expect(view.metrics).toHaveLength(1);
    expect(view.skills).toHaveLength(1);

    const one = JSON.parse(
      (await ws.run(["plan", "show", planId, "--json", "--step", `${planId}-A`])).stdout,
    ) as {
      steps: { step_id: string }[];
    };
    expect(one.steps.map((s) => s.step_id)).toEqual([`${planId}-A`, `${planId}-A.1`]);

    const full = JSON.parse(
      (await ws.run(["plan", "show", planId, "--json", "--full"])).stdout,
    ) as typeof view;
    // Short logs have no blob, so --full changes nothing for them.
    expect(full.steps[0]?.logs.map((l) => l.text)).toEqual(["a log line", "[FAILED] bad"]);
    expect(full.steps[0]?.logs[0]?.full).toBeUndefined();

    const missingPlan = await ws.run(["plan", "show", "nope"]);
    expect(missingPlan.status).toBe(3);
    expect(missingPlan.stderr).toMatch(/plan nope not found/);
    const missingStep = await ws.run(["plan", "show", planId, "--step", "nope"]);
    expect(missingStep.status).toBe(3);
    expect(missingStep.stderr).toMatch(/step nope not found/);
  });

  test("plan list: text, --status, --json; a bad --status is a usage error (2)", async () => {
    const all = await ws.run(["plan", "list"]);
    expect(all.status).toBe(0);
    expect(all.lines).toHaveLength(2);
    expect(all.lines[0]).toMatch(new RegExp(`^${otherPlanId}  IN_PROGRESS  `)); // newest first
    expect(all.lines[1]).toMatch(new RegExp(`^${planId}  COMPLETED  .*Readable plan$`));

    const done = await ws.run(["plan", "list", "--status", "completed", "--json"]);
    expect(done.status).toBe(0);
    const rows = JSON.parse(done.stdout) as { plan_id: string; status: string }[];
    expect(rows.map((r) => [r.plan_id, r.status])).toEqual([[planId, "COMPLETED"]]);

    const none = await ws.run(["plan", "list", "--status", "ABANDONED"]);
    expect(none.stdout.trim()).toBe("no plans");

    const bad = await ws.run(["plan", "list", "--status", "sideways"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--status must be one of/);
  });

  test("events: text, --json, --since, --plan", async () => {
    const all = await ws.run(["events", "--json"]);
    expect(all.status).toBe(0);
    const evs = all.lines.map((l) => JSON.parse(l) as { id: number; type: string; plan_id: string | null });
    expect(evs.length).toBe(snapshot(ws).counts.events);
    expect(evs.map((e) => e.id)).toEqual([...evs.map((e) => e.id)].sort((a, b) => a - b));
    // The first is the registration of "demo" (metrics name a project), then the publish.
    expect(evs[0]).toMatchObject({ type: "project.added", plan_id: null });
    expect(evs[1]).toMatchObject({ type: "plan.published", plan_id: planId, payload: expect.any(Object) });

    const since = evs[4]?.id as number;
    const later = (await ws.run(["events", "--json", "--since", String(since)])).lines.map(
      (l) => JSON.parse(l) as { id: number },
    );
    expect(later.map((e) => e.id)).toEqual(evs.filter((e) => e.id > since).map((e) => e.id));

    const other = (await ws.run(["events", "--json", "--plan", otherPlanId])).lines.map(
      (l) => JSON.parse(l) as { plan_id: string; type: string },
    );
    expect(other).toEqual([expect.objectContaining({ plan_id: otherPlanId, type: "plan.published" })]);

    const text = await ws.run(["events", "--plan", otherPlanId]);
    expect(text.stdout).toMatch(new RegExp(`^#\\d+ \\S+ plan\\.published plan:${otherPlanId} \\{`));

    const bad = await ws.run(["events", "--since", "yesterday"]);
    expect(bad.status).toBe(2);
  });

  test("events --follow --timeout sees an event written by another process", async () => {
    const last = snapshot(ws).lastEventId;
    // Start one event back, so the first line printed shows the follower is up.
    const follower = startRatchet(
      ["events", "--follow", "--json", "--timeout", "30", "--since", String(last - 1)],
      { cwd: ws.dir },
    );
    await waitFor(() => follower.stdoutSoFar().includes("\n"), "the follower's first event");
    await ok(ws, ["metric", "record"], { name: "followed", value: 7, project: "demo" });
    await waitFor(() => follower.stdoutSoFar().includes('"followed"'), "the follower to print the new event");
    follower.child.kill("SIGTERM"); // a follower stops cleanly on a signal
    const r = await follower.done;
    expect(r.status).toBe(0);
    const seen = r.lines.map(
      (l) => JSON.parse(l) as { id: number; type: string; payload: { name?: string } },
    );
    expect(seen.map((e) => e.id)).toEqual([last, last + 1]);
    expect(seen[1]).toMatchObject({ type: "metric.recorded", payload: { name: "followed" } });

    // With nothing new, --timeout ends the follow by itself.
    const quiet = await ws.run(["events", "--follow", "--timeout", "1", "--since", String(last + 1)], {
      timeoutMs: 30_000,
    });
    expect(quiet.status).toBe(0);
    expect(quiet.stdout).toBe("");
  });

  test("project add / list: text and --json; duplicates and bad names are refused", async () => {
    const w = await workspace();
    expect((await w.run(["project", "list"])).stdout.trim()).toBe("no projects");
    const a = await w.run(["project", "add", "alpha"]);
    expect(a.marker).toMatchObject({ ok: true, op: "project-add", name: "alpha", repo_path: null });
    const dup = await w.run(["project", "add", "alpha"]);
    expect(dup.status).toBe(2);
    expect(dup.stderr).toMatch(/project alpha is already registered/);
    const bad = await w.run(["project", "add", "no spaces"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/project name "no spaces"/);
    const missingRepo = await w.run(["project", "add", "beta", "--repo", join(w.dir, "nope")]);
    expect(missingRepo.status).toBe(2);
    expect(missingRepo.stderr).toMatch(/no such folder/);
    expect((await w.run(["project", "list"])).stdout.trim()).toBe("alpha");
    expect(JSON.parse((await w.run(["project", "list", "--json"])).stdout)).toEqual([
      expect.objectContaining({ name: "alpha", repo_path: null }),
    ]);
    expect(eventsByType(w)).toEqual({ "project.added": 1 });
  });

  test("init is idempotent and --version/--help exit 0", async () => {
    const again = await ws.run(["init"]);
    expect(again.marker).toMatchObject({ ok: true, op: "init", created: false });
    expect((await ws.run(["--version"])).status).toBe(0);
    const help = await ws.run(["step", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("run");
  });
});
