import { describe, expect, it, onTestFinished } from "vitest";
import { makeLedgerFixture } from "../testing/ledger-fixtures.js";
import { parseOwner, recoverInterruptedRuns } from "./interrupt.js";
import { type RunStore, runStoreOf, summariseEvidence } from "./run-store.js";

function fixture() {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  return { fx, runs: runStoreOf(fx.store, () => new Date(fx.clock.now()).toISOString()) };
}

function startRun(
  fx: ReturnType<typeof makeLedgerFixture>,
  runs: RunStore,
  runId: string,
  owner: string,
  opts: { group?: string; workflow?: string } = {},
) {
  const plan = fx.publish(`run wf ${runId}`, ["CODE", "CODE"]);
  runs.startRun(
    {
      run_id: runId,
      workflow_id: opts.workflow ?? "wf",
      workflow_path: "/w/workflow.yaml",
      plan_id: plan.plan_id,
      trigger: "manual",
      group_name: opts.group ?? null,
      owner,
    },
    [
      { step_id: "fetch", ledger_step_id: plan.step_ids[0] ?? null, mode: "learn_code" },
      { step_id: "report", ledger_step_id: plan.step_ids[1] ?? null, mode: "learn_code" },
    ],
  );
  return plan;
}

describe("RunStore", () => {
  it("records a run and its steps with one event per change", () => {
    const { fx, runs } = fixture();
    const plan = startRun(fx, runs, "run-20260101000000-aaaaaa", "1@h");
    runs.startStep("run-20260101000000-aaaaaa", "fetch", { fast_path: true });
    runs.finishStep("run-20260101000000-aaaaaa", "fetch", {
      outcome: "passed",
      fast_path: true,
      exit_code: 0,
      duration_ms: 12.6,
      error: null,
    });
    runs.finishStep("run-20260101000000-aaaaaa", "report", {
      outcome: "script_failed",
      fast_path: true,
      exit_code: 1,
      duration_ms: 3,
      error: "script exited with 1: boom",
    });
    runs.finishRun("run-20260101000000-aaaaaa", "failed", "1 of 2 steps did not pass");

    const run = runs.getRun("run-20260101000000-aaaaaa");
    expect(run).toMatchObject({
      status: "failed",
      plan_id: plan.plan_id,
      error: "1 of 2 steps did not pass",
    });
    expect(
      runs.stepRuns("run-20260101000000-aaaaaa").map((s) => [s.step_id, s.outcome, s.duration_ms, s.tokens]),
    ).toEqual([
      ["fetch", "passed", 13, 0],
      ["report", "script_failed", 3, 0],
    ]);
    const types = fx
      .events(plan.plan_id)
      .filter((e) => e.entity_kind === "run")
      .map((e) => e.type);
    expect(types).toEqual(["run.started", "run.step_finished", "run.step_finished", "run.finished"]);
  });

  it("summarises promotion evidence: skipped, interrupted and harness-failed runs do not count, groups need a success", () => {
    const ev = summariseEvidence("wf", "fetch", [
      { outcome: "passed", finished_at: "1", run_id: "r1", group_name: "small" },
      { outcome: "script_failed", finished_at: "2", run_id: "r2", group_name: "large" },
      { outcome: "skipped", finished_at: "3", run_id: "r3", group_name: "large" },
      { outcome: "passed", finished_at: "4", run_id: "r4", group_name: null },
      { outcome: "interrupted", finished_at: "5", run_id: "r5", group_name: "small" },
      { outcome: "harness_failed", finished_at: "6", run_id: "r6", group_name: "small" },
    ]);
    expect(ev).toEqual({
      workflow_id: "wf",
      step_id: "fetch",
      runs: 3,
      successes: 2,
      failures: 1,
      groups_covered: ["(none)", "small"],
      by_outcome: { passed: 2, script_failed: 1, skipped: 1, interrupted: 1, harness_failed: 1 },
      last_run: { run_id: "r4", outcome: "passed", at: "4", group_name: null },
    });
  });

  it("finds the newest passing run of a step in a workflow", () => {
    const { fx, runs } = fixture();
    startRun(fx, runs, "run-20260101000000-aaaaaa", "1@h");
    runs.finishStep("run-20260101000000-aaaaaa", "fetch", {
      outcome: "passed",
      fast_path: true,
      exit_code: 0,
      duration_ms: 1,
      error: null,
    });
    fx.clock.advance(1000);
    startRun(fx, runs, "run-20260101000001-bbbbbb", "1@h");
    runs.finishStep("run-20260101000001-bbbbbb", "fetch", {
      outcome: "script_failed",
      fast_path: true,
      exit_code: 1,
      duration_ms: 1,
      error: "x",
    });
    expect(runs.lastPassed("wf", "fetch")).toEqual({ run_id: "run-20260101000000-aaaaaa" });
    expect(runs.lastPassed("wf", "report")).toBeUndefined();
    expect(runs.lastPassed("other", "fetch")).toBeUndefined();
  });
});

describe("recoverInterruptedRuns", () => {
  it("parses owners", () => {
    expect(parseOwner("123@box")).toEqual({ pid: 123, host: "box" });
    expect(parseOwner("x@box")).toBeUndefined();
    expect(parseOwner("nohost")).toBeUndefined();
  });

  it("marks runs of dead owners on this host interrupted and fails their ledger steps", () => {
    const { fx, runs } = fixture();
    const dead = startRun(fx, runs, "run-20260101000000-aaaaaa", "111@here");
    startRun(fx, runs, "run-20260101000000-bbbbbb", "222@here");
    startRun(fx, runs, "run-20260101000000-cccccc", "111@elsewhere");
    fx.ledger.start({ step_id: dead.step_ids[0] as string });
    runs.startStep("run-20260101000000-aaaaaa", "fetch");

    const found = recoverInterruptedRuns(
      { store: fx.store, ledger: fx.ledger },
      { host: "here", isAlive: (pid) => pid === 222 },
    );
    expect(found).toEqual([
      {
        run_id: "run-20260101000000-aaaaaa",
        owner: "111@here",
        reason: "run interrupted: owner process 111@here is gone",
        failed_steps: [dead.step_ids[0], dead.step_ids[1]],
      },
    ]);
    expect(runs.getRun("run-20260101000000-aaaaaa")?.status).toBe("interrupted");
    expect(runs.getRun("run-20260101000000-bbbbbb")?.status).toBe("running");
    expect(runs.getRun("run-20260101000000-cccccc")?.status).toBe("running");
    expect(runs.stepRuns("run-20260101000000-aaaaaa").map((s) => s.outcome)).toEqual([
      "interrupted",
      "skipped",
    ]);
    expect(fx.store.getStep(dead.step_ids[0] as string)).toMatchObject({
      status: "FAILED",
      failure_reason: "run interrupted: owner process 111@here is gone",
    });
    expect(fx.store.getPlan(dead.plan_id)?.status).toBe("FAILED");
    // An interrupted run is never marked twice; a run of another host is never touched.
    const again = recoverInterruptedRuns(
      { store: fx.store, ledger: fx.ledger },
      { host: "here", isAlive: () => false },
    );
    expect(again.map((r) => r.run_id)).toEqual(["run-20260101000000-bbbbbb"]);
  });
});
