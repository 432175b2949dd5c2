import { join } from "node:path";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { headTail, truncationMarker, utf8Length } from "../core/index.js";
import { insertReason, seedProject } from "../provenance/reasons/why-fixture.js";
import { wordStoreOf } from "../provenance/words/index.js";
import { type LedgerFixture, makeLedgerFixture } from "../testing/ledger-fixtures.js";
import { reviewedPlan } from "../testing/prov-repo.js";
import { applyOp, OP_NAMES, type OpOutcome } from "./dispatch.js";
import { loadHeadline } from "./flows/publish-plan.js";
import type { Op } from "./inputs.js";

function setup(): LedgerFixture {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  return fx;
}

/** Applies an op from the fixture's work folder (outside any git repo). */
function apply(fx: LedgerFixture, op: Op, input: unknown): Promise<OpOutcome> {
  return applyOp(fx.ledger, op, input, { cwd: fx.workDir });
}

/** A published plan of `n` THINKING steps. */
function plan(fx: LedgerFixture, n = 2, extra: Parameters<LedgerFixture["publish"]>[2] = {}) {
  const p = fx.publish(
    "dispatch",
    Array.from({ length: n }, () => "THINKING" as const),
    extra,
  );
  return { id: p.plan_id, steps: p.step_ids.slice(0, n), review: p.review_step_id };
}

/**
 * A plan of `billing` on a real git repo, handed off to -REVIEW.1: the analyser's review run found
 * the added `fiscal_week` (its key in `added`).
 */
async function analysed(fx: LedgerFixture) {
  const p = await reviewedPlan(fx.ledger, {
    project: "billing",
    repo: join(fx.dir, "billing"),
    files: { "billing/weeks.py": "def load_orders(path):\n    return path\n" },
    edits: {
      "billing/weeks.py":
        "def load_orders(path):\n    return path\n\n\ndef fiscal_week(day):\n    return day.isocalendar()[1]\n",
    },
  });
  return { id: p.planId, added: p.key("billing.weeks.fiscal_week") };
}

/** One recorded utterance (a reference's anchor). */
function utterance(fx: LedgerFixture): number {
  const words = wordStoreOf(fx.ledger);
  return words.write(() =>
    words.recordUtterance({ text: "words", occurred_at: "2026-11-30T00:00:00.000Z", origin: "agent_cli" }),
  );
}

function handedOff(fx: LedgerFixture) {
  fx.addProject("billing");
  const p = plan(fx, 1, { project: "billing" });
  fx.ledger.start({ step_id: p.steps[0]! });
  fx.ledger.complete({ step_id: p.steps[0]! });
  return p;
}

describe("op names (pinned)", () => {
  it("OP_NAMES", () => {
    expect(OP_NAMES).toEqual([
      "publish-plan",
      "start-step",
      "complete-step",
      "fail-step",
      "append-log",
      "run-step",
      "deviate",
      "record-skill",
      "record-metric",
      "raise-budget",
      "abandon-plan",
      "finish-plan",
      "agent-review-close",
      "heartbeat",
      "sweep",
      "reason-slots",
      "reason-fill",
      "headline-respond",
      "note",
      "reference-add",
      "reference-mark",
    ]);
  });
});

describe("applyOp: ok markers", () => {
  // An in-process publish with declared_targets needs the headline code loaded (the flow loads it).
  beforeAll(() => loadHeadline());
  const rows: { op: Op; input: (fx: LedgerFixture) => unknown; marker: Record<string, unknown> }[] = [
    {
      op: "publish-plan",
      input: () => ({ goal: "Ship", steps: [{ title: "t", type: "THINKING" }] }),
      marker: {
        plan_id: "ship-20260101000000",
        status: "IN_PROGRESS",
        review_step_id: "ship-20260101000000-REVIEW",
      },
    },
    {
      op: "start-step",
      input: (fx) => ({ step_id: plan(fx).steps[0] }),
      marker: { status: "IN_PROGRESS", lease_holder: "test-holder@test-host" },
    },
    {
      op: "complete-step",
      input: (fx) => {
        const p = plan(fx);
        fx.ledger.start({ step_id: p.steps[0]! });
        return { step_id: p.steps[0], summary: "done" };
      },
      marker: { status: "COMPLETED", plan_status: "IN_PROGRESS" },
    },
    {
      op: "fail-step",
      input: (fx) => {
        const p = plan(fx);
        fx.ledger.start({ step_id: p.steps[0]! });
        return { step_id: p.steps[0], reason: "no" };
      },
      marker: { status: "FAILED", reason: "no" },
    },
    {
      op: "append-log",
      input: (fx) => ({ step_id: plan(fx).steps[0], text: "raw" }),
      marker: { bytes: 3 },
    },
    {
      op: "run-step",
      input: (fx) => ({ step_id: plan(fx).steps[0], type: "COMMAND", command: "true" }),
      marker: { status: "COMPLETED", exit_code: 0, truncated: false },
    },
    {
      op: "deviate",
      input: (fx) => {
        const p = plan(fx);
        return { parent_step_id: p.steps[0], justification: "j", sub_steps: [{ title: "t", type: "CODE" }] };
      },
      marker: { depth: 1, revision_count: 1 },
    },
    {
      op: "record-skill",
      input: (fx) => ({ plan_id: plan(fx).id, name: "systematic-debugging", source: "explicit-mention" }),
      marker: { name: "systematic-debugging" },
    },
    {
      op: "record-metric",
      input: (fx) => {
        fx.addProject("demo");
        return { name: "auc", value: 0.9, unit: "ratio", plan_id: plan(fx).id, project: "demo" };
      },
      marker: { name: "auc", value: 0.9, unit: "ratio", project: "demo", source: "record-metric" },
    },
    {
      op: "raise-budget",
      input: (fx) => ({ plan_id: plan(fx).id, new_max: 8, reason: "warranted" }),
      marker: { old_max: 5, new_max: 8, revision_count: 0 },
    },
    {
      op: "abandon-plan",
      input: (fx) => ({ plan_id: plan(fx).id, reason: "mistake" }),
      marker: { status: "ABANDONED" },
    },
    {
      op: "finish-plan",
      input: (fx) => ({ plan_id: plan(fx).id }),
      marker: { status: "COMPLETED", mode: "forced" },
    },
    {
      op: "agent-review-close",
      input: (fx) => ({ plan_id: handedOff(fx).id, outcome: "pass" }),
      marker: { outcome: "pass", status: "COMPLETED" },
    },
    {
      op: "heartbeat",
      input: (fx) => {
        const p = plan(fx);
        fx.ledger.start({ step_id: p.steps[0]! });
        return { step_id: p.steps[0] };
      },
      marker: { status: "IN_PROGRESS" },
    },
    { op: "sweep", input: () => ({}), marker: { count: 0 } },
    { op: "reason-slots", input: async (fx) => ({ plan_id: (await analysed(fx)).id }), marker: {} },
    {
      op: "reason-fill",
      input: async (fx) => {
        const p = await analysed(fx);
        return { plan_id: p.id, reasons: [{ node_key: p.added, unstated: true }] };
      },
      marker: {},
    },
    {
      op: "headline-respond",
      input: (fx) => {
        seedProject(fx.store, "shop", fx.workDir);
        insertReason(fx.store, "shop", { role: "constraint", statement: "weekly grain stays" });
        const p = fx.publish("headline", ["THINKING"], {
          project: "shop",
          declared_targets: ["shop.pipeline.load_orders"],
        });
        return { plan_id: p.plan_id, finding_id: "active_constraint:nk_34676ea5f:1", action: "proceed" };
      },
      marker: { finding_id: "active_constraint:nk_34676ea5f:1", action: "proceed", by: "agent", adopted: 1 },
    },
    {
      op: "note",
      input: () => ({ text: "Finance reconciles weekly", at: "2026-11-30 14:00" }),
      marker: { origin: "agent_cli", occurred_at: "2026-11-30T14:00:00.000Z", reason_id: null },
    },
    {
      op: "reference-add",
      input: (fx) => ({
        kind: "doc",
        label: "spec",
        occurred_at: "2026-11-01",
        utterance: utterance(fx),
        uri: "https://d/1",
      }),
      marker: { verifiability: "linked", stance: "supports" },
    },
    {
      op: "reference-mark",
      input: (fx) => {
        const words = wordStoreOf(fx.ledger);
        const ref = words.write(() => {
          const id = words.addReference({
            kind: "doc",
            label: "spec",
            uri: "https://d/1",
            occurred_at: "2026-11-01T00:00:00.000Z",
          });
          words.link({ reference_id: id, utterance_id: utterance(fx) });
          return id;
        });
        return { reference_id: ref, ok: true };
      },
      marker: { verdict: "ok", checks: 1 },
    },
  ];

  it("covers every op", () => {
    expect(rows.map((r) => r.op)).toEqual(OP_NAMES);
  });

  it.each(rows)("$op", async ({ op, input, marker }) => {
    const fx = setup();
    const out = await apply(fx, op, await input(fx));
    expect(out.error).toBeUndefined();
    expect(out.ok).toBe(true);
    expect(out.op).toBe(op);
    expect(out.exitStatus).toBe(0);
    expect(out.result).toBeDefined();
    expect(out.marker).toMatchObject({ ok: true, op, ...marker });
    expect(Object.keys(out.marker).slice(0, 2)).toEqual(["ok", "op"]);
    // The marker is one flat line: scalars and id lists only.
    for (const v of Object.values(out.marker)) {
      if (Array.isArray(v)) expect(v.every((x) => typeof x === "string")).toBe(true);
      else expect(v === null || typeof v !== "object").toBe(true);
    }
    expect(() => JSON.stringify(out.marker)).not.toThrow();
  });
});

describe("applyOp: refusals", () => {
  const sub = [{ title: "t", type: "CODE" }];
  const rows: {
    name: string;
    op: Op;
    input: (fx: LedgerFixture) => unknown;
    code: string;
    exit: number;
    breaker?: "soft" | "hard";
  }[] = [
    {
      name: "complete on PENDING",
      op: "complete-step",
      input: (fx) => ({ step_id: plan(fx).steps[0] }),
      code: "illegal_transition",
      exit: 4,
      breaker: "soft",
    },
    {
      name: "deviate on COMPLETED",
      op: "deviate",
      input: (fx) => {
        const p = plan(fx);
        fx.ledger.start({ step_id: p.steps[0]! });
        fx.ledger.complete({ step_id: p.steps[0]! });
        return { parent_step_id: p.steps[0], justification: "j", sub_steps: sub };
      },
      code: "soft_breaker",
      exit: 4,
      breaker: "soft",
    },
    {
      name: "complete on a COMMAND step",
      op: "complete-step",
      input: (fx) => {
        const p = fx.publish("x", ["COMMAND"]);
        // A COMMAND step is started by run-step only (start-step refuses it).
        fx.ledger.startForRun(p.step_ids[0]!, "COMMAND", "true");
        return { step_id: p.step_ids[0] };
      },
      code: "complete_on_command",
      exit: 5,
    },
    {
      name: "deviate past the revision budget",
      op: "deviate",
      input: (fx) => ({
        parent_step_id: plan(fx, 1, { max_revisions: 0 }).steps[0],
        justification: "j",
        sub_steps: sub,
      }),
      code: "revision_budget_exhausted",
      exit: 6,
      breaker: "hard",
    },
    {
      name: "finish while awaiting the agent review",
      op: "finish-plan",
      input: (fx) => ({ plan_id: handedOff(fx).id }),
      code: "plan_awaits_review",
      exit: 7,
    },
    {
      name: "run-step on the review step",
      op: "run-step",
      input: (fx) => ({ step_id: plan(fx).review, type: "COMMAND", command: "true" }),
      code: "illegal_transition",
      exit: 4,
      breaker: "soft",
    },
  ];

  it.each(rows)(
    "$name → ok:false, accepted:false, exit $exit",
    async ({ op, input, code, exit, breaker }) => {
      const fx = setup();
      const args = input(fx);
      const before = fx.store.lastEventId();
      const out = await apply(fx, op, args);
      expect(out.ok).toBe(false);
      expect(out.exitStatus).toBe(exit);
      expect(out.result).toBeUndefined();
      expect(out.error?.code).toBe(code);
      expect(out.marker).toMatchObject({ ok: false, op, accepted: false, code, exit_status: exit });
      if (breaker) expect(out.marker.breaker).toBe(breaker);
      else expect(out.marker).not.toHaveProperty("breaker");
      expect(fx.store.lastEventId()).toBe(before);
    },
  );

  it("pins the whole error marker", async () => {
    const fx = setup();
    const p = plan(fx);
    const out = await apply(fx, "complete-step", { step_id: p.steps[0] });
    expect(out.marker).toEqual({
      ok: false,
      op: "complete-step",
      accepted: false,
      code: "illegal_transition",
      error: `step ${p.steps[0]} cannot move from PENDING to COMPLETED (start it first)`,
      exit_status: 4,
      breaker: "soft",
    });
  });

  it.each([
    { name: "unknown step", op: "start-step" as const, input: { step_id: "nope-A" }, code: "step_not_found" },
    { name: "unknown plan", op: "finish-plan" as const, input: { plan_id: "nope" }, code: "plan_not_found" },
    {
      name: "unknown project",
      op: "publish-plan" as const,
      input: { goal: "g", project: "ghost", steps: [{ title: "t", type: "CODE" }] },
      code: "project_not_found",
    },
  ])("$name → exit 3, ok:false, not a refusal (no accepted key)", async ({ op, input, code }) => {
    const fx = setup();
    const out = await apply(fx, op, input);
    expect(out).toMatchObject({ ok: false, exitStatus: 3 });
    expect(out.marker).toMatchObject({ ok: false, op, code, exit_status: 3 });
    expect(out.marker).not.toHaveProperty("accepted");
  });
});

describe("applyOp: schema errors (exit 2, naming the field)", () => {
  const rows: { op: Op; input: unknown; field: string }[] = [
    {
      op: "publish-plan",
      input: { goal: "g", steps: [{ title: "t", type: "BOGUS" }] },
      field: "steps[0].type",
    },
    {
      op: "publish-plan",
      input: { goal: "g", steps: [{ title: "t", type: "CODE" }, { type: "CODE" }] },
      field: "steps[1].title",
    },
    { op: "publish-plan", input: { goal: "g", steps: [] }, field: "steps" },
    { op: "publish-plan", input: { steps: [{ title: "t", type: "CODE" }] }, field: "goal" },
    {
      op: "publish-plan",
      input: { goal: "g", steps: [{ title: "t", type: "CODE" }], bogus: 1 },
      field: "bogus",
    },
    { op: "start-step", input: {}, field: "step_id" },
    { op: "start-step", input: { step_id: "x", lease_seconds: 0 }, field: "lease_seconds" },
    { op: "complete-step", input: { step_id: "x", status: "COMPLETED" }, field: "status" },
    { op: "run-step", input: { step_id: "x", type: "COMMAND" }, field: "command" },
    {
      op: "run-step",
      input: { step_id: "x", type: "COMMAND", command: "true", allow_nonzero: "yes" },
      field: "allow_nonzero",
    },
    {
      op: "deviate",
      input: { parent_step_id: "x", justification: "j", sub_steps: [{ title: "t", type: "BOGUS" }] },
      field: "sub_steps[0].type",
    },
    { op: "record-metric", input: { name: "m", value: "one" }, field: "value" },
    { op: "record-metric", input: { name: "m", value: true }, field: "value" },
    { op: "record-metric", input: { name: "m", value: "NaN" }, field: "value" },
    { op: "record-skill", input: { plan_id: "p", name: "n", source: "builtin" }, field: "source" },
    { op: "raise-budget", input: { plan_id: "p", new_max: 2.5, reason: "r" }, field: "new_max" },
    { op: "agent-review-close", input: { plan_id: "p", outcome: "maybe" }, field: "outcome" },
    { op: "finish-plan", input: null, field: "(input)" },
    { op: "finish-plan", input: [], field: "(input)" },
  ];

  it.each(rows)("$op: `$field`", async ({ op, input, field }) => {
    const fx = setup();
    const out = await apply(fx, op, input);
    expect(out.ok).toBe(false);
    expect(out.exitStatus).toBe(2);
    expect(out.marker).toMatchObject({ ok: false, op, code: "schema_violation", exit_status: 2, field });
    expect(out.marker).not.toHaveProperty("accepted");
    expect(String(out.marker.error)).toContain(`\`${field}\``);
    expect(fx.store.lastEventId()).toBe(0);
  });
});

describe("run-step with a real command", () => {
  const FOOTER = /--- exit_code=(\d+), runtime=\d+\.\d\ds ---$/;

  function lastLog(fx: LedgerFixture, stepId: string) {
    const logs = fx.store.logsOfStep(stepId);
    return logs[logs.length - 1]!;
  }

  it("a failing command fails the step and reports its own exit status", async () => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    const out = await apply(fx, "run-step", { step_id: A, type: "COMMAND", command: "echo hi; exit 3" });
    expect(out.ok).toBe(true);
    expect(out.exitStatus).toBe(3);
    expect(out.marker).toMatchObject({
      ok: true,
      op: "run-step",
      step_id: A,
      status: "FAILED",
      exit_code: 3,
      truncated: false,
      output_bytes: 3,
      timed_out: false,
      cancelled: false,
      plan_status: "IN_PROGRESS",
    });
    expect(fx.step(A)).toMatchObject({
      status: "FAILED",
      type: "COMMAND",
      exit_code: 3,
      failure_reason: "command exited with 3",
      lease_holder: null,
    });
    const logs = fx.store.logsOfStep(A);
    expect(logs.map((l) => l.kind)).toEqual(["start", "run"]);
    expect(logs[0]!.text).toBe(`[run-step] kickoff 2026-01-01T00:00:00.000Z\n$ echo hi; exit 3`);
    const log = logs[1]!;
    expect(log.text).toMatch(/^hi\n--- exit_code=3, runtime=\d+\.\d\ds ---$/);
    expect(log.text.match(FOOTER)?.[1]).toBe("3");
    expect(log).toMatchObject({ truncated: 0, blob: null });
  });

  it("a passing command completes the step; the last one closes the plan", async () => {
    const fx = setup();
    const p = plan(fx, 1);
    const out = await apply(fx, "run-step", { step_id: p.steps[0], type: "TEST", command: "printf ok" });
    expect(out.exitStatus).toBe(0);
    expect(out.marker).toMatchObject({ status: "COMPLETED", exit_code: 0, plan_status: "COMPLETED" });
    expect(fx.step(p.steps[0]!)).toMatchObject({ status: "COMPLETED", type: "TEST", exit_code: 0 });
    // No trailing newline in the output: the footer goes on a line of its own.
    expect(lastLog(fx, p.steps[0]!).text).toMatch(/^ok\n--- exit_code=0, runtime=/);
  });

  it("passes the NEEDS_REVIEW hand-off on in its marker", async () => {
    const fx = setup();
    fx.addProject("billing");
    const p = plan(fx, 1, { project: "billing" });
    const out = await apply(fx, "run-step", { step_id: p.steps[0], type: "COMMAND", command: "true" });
    expect(out.marker).toMatchObject({
      ok: true,
      op: "run-step",
      exit_code: 0,
      needs_agent_review: true,
      project: "billing",
      review_step_id: p.review,
      review_child_step_id: `${p.review}.1`,
    });
  });

  it("output over 16 KiB is cut once (8 KiB head + marker + 8 KiB tail); the blob holds all of it", async () => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    const full = Array.from({ length: 10_000 }, (_, i) => `${i + 1}\n`).join("");
    const out = await apply(fx, "run-step", { step_id: A, type: "COMMAND", command: "seq 1 10000" });
    expect(out.exitStatus).toBe(0);
    expect(out.marker).toMatchObject({ truncated: true, output_bytes: full.length, status: "COMPLETED" });

    const log = lastLog(fx, A);
    const omitted = full.length - 16 * 1024;
    const cut = `${full.slice(0, 8192)}${truncationMarker(omitted)}${full.slice(-8192)}`;
    expect(cut).toBe(headTail(full, 8192, 8192).text);
    expect(log.text.startsWith(cut)).toBe(true);
    expect(log.text.slice(cut.length)).toMatch(/^--- exit_code=0, runtime=\d+\.\d\ds ---$/);
    expect(log.text.match(/--- TRUNCATED \d+ BYTES ---/g)).toEqual([`--- TRUNCATED ${omitted} BYTES ---`]);
    expect(log.truncated).toBe(1);
    expect(log.blob).toMatch(/^[0-9a-f]{64}$/);
    const blob = fx.blobs.getText(log.blob!);
    expect(blob.startsWith(full)).toBe(true);
    expect(blob.slice(full.length)).toMatch(/^--- exit_code=0, runtime=\d+\.\d\ds ---$/);
    expect(log.bytes).toBe(utf8Length(blob));
  });

  it("allow_nonzero completes the step but still reports the command's exit status", async () => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    const out = await apply(fx, "run-step", {
      step_id: A,
      type: "COMMAND",
      command: "echo partial; exit 2",
      allow_nonzero: true,
    });
    expect(out.ok).toBe(true);
    expect(out.exitStatus).toBe(2);
    expect(out.marker).toMatchObject({ status: "COMPLETED", exit_code: 2 });
    expect(fx.step(A)).toMatchObject({ status: "COMPLETED", exit_code: 2 });
    expect(lastLog(fx, A).text).toMatch(/^partial\n--- exit_code=2, runtime=/);
  });

  it("metrics_from_stdout records the stdout metric lines against the step", async () => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    const command = [
      'echo "metric name=auc value=0.93 unit=ratio"',
      'echo "metric name=broken"',
      'echo "metric name=from_stderr value=1" >&2',
      'echo "metric name=rows value=1200"',
    ].join("; ");
    const out = await apply(fx, "run-step", {
      step_id: A,
      type: "COMMAND",
      command,
      metrics_from_stdout: true,
    });
    expect(out.marker).toMatchObject({ status: "COMPLETED", metrics_recorded: 2 });
    expect(fx.store.metricsOfPlan(p.id).map((m) => [m.name, m.value, m.unit, m.step_id, m.plan_id])).toEqual([
      ["auc", 0.93, "ratio", A, p.id],
      ["rows", 1200, null, A, p.id],
    ]);
  });

  it("without metrics_from_stdout no metric is recorded", async () => {
    const fx = setup();
    const p = plan(fx, 2);
    const out = await apply(fx, "run-step", {
      step_id: p.steps[0],
      type: "COMMAND",
      command: 'echo "metric name=auc value=1"',
    });
    expect(out.marker).toMatchObject({ metrics_recorded: 0 });
    expect(fx.store.metricsOfPlan(p.id)).toEqual([]);
  });
});
