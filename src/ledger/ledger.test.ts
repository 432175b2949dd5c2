import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { ErrorCode, RatchetError, Redactor, truncationMarker } from "../core/index.js";
import {
  type LedgerFixture,
  type LedgerFixtureOptions,
  makeLedgerFixture,
} from "../testing/ledger-fixtures.js";

function setup(opts: LedgerFixtureOptions = {}): LedgerFixture {
  const fx = makeLedgerFixture(opts);
  onTestFinished(() => fx.dispose());
  return fx;
}

/** Runs `fn`, which must throw a RatchetError, and returns it. */
function refusal(fn: () => unknown): RatchetError {
  try {
    fn();
  } catch (e) {
    if (e instanceof RatchetError) return e;
    throw e;
  }
  throw new Error("expected a RatchetError, the call succeeded");
}

/** Everything a write could touch for one plan: compare before/after to prove nothing was written. */
function snapshot(fx: LedgerFixture, planId: string) {
  return {
    lastEvent: fx.store.lastEventId(),
    plan: fx.store.getPlan(planId),
    steps: fx.store.stepsOfPlan(planId),
    logs: fx.store.logsOfPlan(planId),
    deviations: fx.store.deviationsOfPlan(planId),
    metrics: fx.store.metricsOfPlan(planId),
    skills: fx.store.skillsOfPlan(planId),
  };
}

/** `<type> <entity_id>` of every event after `since`, oldest first. */
function eventsSince(fx: LedgerFixture, since: number): string[] {
  return fx.store.listEvents({ since }).map((e) => `${e.type} ${e.entity_id}`);
}

/** Runs `fn` and returns its result with the events it appended. */
function withEvents<T>(fx: LedgerFixture, fn: () => T): { result: T; events: string[] } {
  const since = fx.store.lastEventId();
  const result = fn();
  return { result, events: eventsSince(fx, since) };
}

const T0 = "2026-01-01T00:00:00.000Z";

/** Publishes `n` THINKING steps; returns the plan id, the regular step ids and the review id. */
function plan(fx: LedgerFixture, n = 2, extra: Parameters<LedgerFixture["publish"]>[2] = {}) {
  const p = fx.publish(
    "ship it",
    Array.from({ length: n }, () => "THINKING" as const),
    extra,
  );
  return { id: p.plan_id, steps: p.step_ids.slice(0, n), review: p.review_step_id, published: p };
}

function done(fx: LedgerFixture, stepId: string) {
  fx.ledger.start({ step_id: stepId });
  return fx.ledger.complete({ step_id: stepId });
}

function failed(fx: LedgerFixture, stepId: string, reason = "broke") {
  fx.ledger.start({ step_id: stepId });
  return fx.ledger.fail({ step_id: stepId, reason });
}

describe("publish", () => {
  it("inserts the plan, steps A, B, C and the review step, with one event", () => {
    const fx = setup();
    const { result: p, events } = withEvents(fx, () =>
      fx.publish("Ship it", [
        "COMMAND",
        "THINKING",
        { title: "write docs", type: "DOCUMENTATION", description: "d" },
      ]),
    );
    const id = "ship-it-20260101000000";
    expect(p).toMatchObject({
      plan_id: id,
      project: null,
      project_source: null,
      status: "IN_PROGRESS",
      max_revisions: 5,
      // Regular steps only (the original's shape); the review step has its own key.
      step_ids: [`${id}-A`, `${id}-B`, `${id}-C`],
      review_step_id: `${id}-REVIEW`,
    });
    expect(events).toEqual([`plan.published ${id}`]);
    expect(fx.store.getPlan(id)).toMatchObject({
      goal: "Ship it",
      kind: "plan",
      status: "IN_PROGRESS",
      revision_count: 0,
      max_revisions: 5,
      source_cwd: fx.workDir,
      created_at: T0,
      finished_at: null,
    });
    const rows = fx.store.stepsOfPlan(id).map((s) => ({
      id: s.step_id,
      seq: s.seq,
      role: s.role,
      depth: s.depth,
      type: s.type,
      status: s.status,
      parent: s.parent_step_id,
    }));
    expect(rows).toEqual([
      { id: `${id}-A`, seq: 1, role: "regular", depth: 0, type: "COMMAND", status: "PENDING", parent: null },
      { id: `${id}-B`, seq: 2, role: "regular", depth: 0, type: "THINKING", status: "PENDING", parent: null },
      {
        id: `${id}-C`,
        seq: 3,
        role: "regular",
        depth: 0,
        type: "DOCUMENTATION",
        status: "PENDING",
        parent: null,
      },
      {
        id: `${id}-REVIEW`,
        seq: 4,
        role: "review",
        depth: 0,
        type: "SUB_AGENT",
        status: "PENDING",
        parent: null,
      },
    ]);
    expect(fx.step(`${id}-C`)).toMatchObject({ title: "write docs", description: "d" });
  });

  it("keeps the revision budget it is given", () => {
    const fx = setup();
    const p = fx.publish("x", ["THINKING"], { max_revisions: 2 });
    expect(fx.store.getPlan(p.plan_id)?.max_revisions).toBe(2);
  });

  it("gives a second plan with the same goal in the same second a distinct id", () => {
    const fx = setup();
    const a = fx.publish("same", ["THINKING"]);
    const b = fx.publish("same", ["THINKING"]);
    expect(a.plan_id).toBe("same-20260101000000");
    expect(b.plan_id).toBe("same-20260101000000-2");
    expect(b.step_ids).toEqual(["same-20260101000000-2-A"]);
    expect(b.review_step_id).toBe("same-20260101000000-2-REVIEW");
  });

  it("refuses an unknown project with project_not_found and writes nothing", () => {
    const fx = setup();
    const err = refusal(() => fx.publish("x", ["THINKING"], { project: "ghost" }));
    expect(err.code).toBe(ErrorCode.ProjectNotFound);
    expect(err.exitStatus).toBe(3);
    expect(err.details.field).toBe("project");
    expect(err.message).toContain("ghost");
    expect(fx.store.listPlans({})).toEqual([]);
    expect(fx.store.lastEventId()).toBe(0);
  });

  it("records a declared project", () => {
    const fx = setup();
    fx.addProject("billing");
    const p = fx.publish("x", ["THINKING"], { project: "billing" });
    expect(p).toMatchObject({ project: "billing", project_source: "declared" });
    expect(fx.store.getPlan(p.plan_id)).toMatchObject({ project: "billing", project_source: "declared" });
  });

  it("derives the project from the registered repo it is published from", () => {
    const fx = setup();
    const repo = join(fx.dir, "repo");
    mkdirSync(join(repo, ".git"), { recursive: true });
    mkdirSync(join(repo, "src", "deep"), { recursive: true });
    fx.addProject("billing", repo);

    const inside = fx.publish("from inside", ["THINKING"], {}, join(repo, "src", "deep"));
    expect(inside).toMatchObject({ project: "billing", project_source: "cwd" });
    expect(fx.store.getPlan(inside.plan_id)).toMatchObject({ project: "billing", project_source: "cwd" });

    const atRoot = fx.publish("from the root", ["THINKING"], {}, repo);
    expect(atRoot.project).toBe("billing");

    const outside = fx.publish("from outside", ["THINKING"]);
    expect(outside).toMatchObject({ project: null, project_source: null });
  });

  it("does not derive a project from an unregistered repo", () => {
    const fx = setup();
    const repo = join(fx.dir, "other");
    mkdirSync(join(repo, ".git"), { recursive: true });
    fx.addProject("billing", join(fx.dir, "elsewhere"));
    expect(fx.publish("x", ["THINKING"], {}, repo).project).toBeNull();
  });
});

describe("start, complete, fail, log", () => {
  it("start: IN_PROGRESS with a lease, agent_input and a start log; one event", () => {
    const fx = setup();
    const p = plan(fx);
    const A = p.steps[0]!;
    const { result, events } = withEvents(fx, () =>
      fx.ledger.start({ step_id: A, agent_input: "the prompt", log_context: "kickoff" }),
    );
    expect(result).toEqual({
      step_id: A,
      plan_id: p.id,
      status: "IN_PROGRESS",
      type: "THINKING",
      lease_holder: "test-holder@test-host",
      lease_expires_at: "2026-01-01T00:15:00.000Z",
    });
    expect(events).toEqual([`step.in_progress ${A}`]);
    expect(fx.step(A)).toMatchObject({
      status: "IN_PROGRESS",
      agent_input: "the prompt",
      started_at: T0,
      heartbeat_at: T0,
      lease_holder: "test-holder@test-host",
      lease_expires_at: Date.parse("2026-01-01T00:15:00.000Z"),
    });
    expect(fx.store.logsOfStep(A).map((l) => [l.kind, l.text, l.truncated, l.blob])).toEqual([
      ["start", "kickoff", 0, null],
    ]);
    expect(JSON.parse(fx.events(p.id).at(-1)!.payload)).toMatchObject({ from: "PENDING", to: "IN_PROGRESS" });
  });

  it("start may change the step type and take a custom lease", () => {
    const fx = setup();
    const p = plan(fx);
    const r = fx.ledger.start({ step_id: p.steps[0]!, type: "ANALYSIS", lease_seconds: 60 });
    expect(r).toMatchObject({ type: "ANALYSIS", lease_expires_at: "2026-01-01T00:01:00.000Z" });
    expect(fx.step(p.steps[0]!).type).toBe("ANALYSIS");
  });

  it("complete: COMPLETED with summary, output, log, duration; lease released; one event", () => {
    const fx = setup();
    const p = plan(fx);
    const A = p.steps[0]!;
    fx.ledger.start({ step_id: A });
    fx.clock.advance(5000);
    const { result, events } = withEvents(fx, () =>
      fx.ledger.complete({ step_id: A, summary: "did it", agent_output: "out", log_context: "raw" }),
    );
    expect(result).toEqual({
      step_id: A,
      plan_id: p.id,
      status: "COMPLETED",
      plan_status: "IN_PROGRESS",
      review_status: "PENDING",
    });
    expect(events).toEqual([`step.completed ${A}`]);
    expect(fx.step(A)).toMatchObject({
      status: "COMPLETED",
      summary: "did it",
      agent_output: "out",
      duration_ms: 5000,
      finished_at: "2026-01-01T00:00:05.000Z",
      lease_holder: null,
      lease_expires_at: null,
    });
    expect(fx.store.logsOfStep(A).map((l) => [l.kind, l.text])).toEqual([["complete", "raw"]]);
  });

  it("fail: FAILED with the reason; one event carrying it", () => {
    const fx = setup();
    const p = plan(fx);
    const A = p.steps[0]!;
    fx.ledger.start({ step_id: A });
    const { result, events } = withEvents(fx, () =>
      fx.ledger.fail({ step_id: A, reason: "tests red", log_context: "trace" }),
    );
    expect(result).toMatchObject({
      step_id: A,
      status: "FAILED",
      reason: "tests red",
      plan_status: "IN_PROGRESS",
    });
    expect(events).toEqual([`step.failed ${A}`]);
    expect(fx.step(A)).toMatchObject({ status: "FAILED", failure_reason: "tests red", lease_holder: null });
    expect(JSON.parse(fx.events(p.id).at(-1)!.payload)).toEqual({
      from: "IN_PROGRESS",
      to: "FAILED",
      reason: "tests red",
    });
    // The log context, then the original's `[FAILED] <reason>` line.
    expect(fx.store.logsOfStep(A).map((l) => [l.kind, l.text.slice(0, 18)])).toEqual([
      ["fail", expect.any(String)],
      ["fail", "[FAILED] tests red"],
    ]);
  });

  it("log: appends to any step, even a COMPLETED one; one event", () => {
    const fx = setup();
    const p = plan(fx);
    const A = p.steps[0]!;
    done(fx, A);
    const { result, events } = withEvents(fx, () => fx.ledger.log({ step_id: A, text: "after the fact é" }));
    expect(result).toEqual({ step_id: A, plan_id: p.id, status: "COMPLETED", bytes: 17 });
    expect(events).toEqual([`step.log_appended ${A}`]);
    expect(fx.store.logsOfStep(A).map((l) => [l.kind, l.text, l.bytes])).toEqual([
      ["log", "after the fact é", 17],
    ]);
  });

  it("complete on a COMMAND step → complete_on_command (exit 5), nothing written", () => {
    const fx = setup();
    const p = fx.publish("x", ["COMMAND", "THINKING"]);
    const A = p.step_ids[0]!;
    fx.ledger.startForRun(A, "COMMAND", "true");
    const before = snapshot(fx, p.plan_id);
    const err = refusal(() => fx.ledger.complete({ step_id: A, summary: "s", log_context: "l" }));
    expect(err.code).toBe(ErrorCode.CompleteOnCommand);
    expect(err.exitStatus).toBe(5);
    expect(err.isRefusal).toBe(true);
    expect(snapshot(fx, p.plan_id)).toEqual(before);
  });

  it("complete on a PENDING step → illegal_transition naming both states, NOTHING written", () => {
    const fx = setup();
    const p = plan(fx);
    const A = p.steps[0]!;
    const before = snapshot(fx, p.id);
    const err = refusal(() =>
      fx.ledger.complete({ step_id: A, summary: "s", agent_output: "o", log_context: "would be a log" }),
    );
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(err.exitStatus).toBe(4);
    expect(err.message).toContain("PENDING");
    expect(err.message).toContain("COMPLETED");
    expect(snapshot(fx, p.id)).toEqual(before);
    expect(fx.step(A).status).toBe("PENDING");
  });

  it.each([
    { name: "fail on PENDING", prep: "none", act: "fail" },
    { name: "start on IN_PROGRESS", prep: "start", act: "start" },
    { name: "complete on COMPLETED", prep: "complete", act: "complete" },
    { name: "start on COMPLETED", prep: "complete", act: "start" },
    { name: "fail on COMPLETED", prep: "complete", act: "fail" },
    { name: "start on FAILED", prep: "fail", act: "start" },
    { name: "complete on FAILED", prep: "fail", act: "complete" },
  ] as const)("$name → illegal_transition, nothing written", ({ prep, act }) => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    if (prep === "start") fx.ledger.start({ step_id: A });
    if (prep === "complete") done(fx, A);
    if (prep === "fail") failed(fx, A);
    const before = snapshot(fx, p.id);
    const err = refusal(() =>
      act === "start"
        ? fx.ledger.start({ step_id: A, log_context: "x" })
        : act === "complete"
          ? fx.ledger.complete({ step_id: A, log_context: "x" })
          : fx.ledger.fail({ step_id: A, log_context: "x" }),
    );
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it.each(["start", "complete", "fail", "log", "heartbeat"] as const)(
    "%s on an unknown step → step_not_found (exit 3)",
    (op) => {
      const fx = setup();
      const input = { step_id: "nope-A" };
      const err = refusal(() =>
        op === "start"
          ? fx.ledger.start(input)
          : op === "complete"
            ? fx.ledger.complete(input)
            : op === "fail"
              ? fx.ledger.fail(input)
              : op === "log"
                ? fx.ledger.log({ ...input, text: "t" })
                : fx.ledger.heartbeat(input),
      );
      expect(err.code).toBe(ErrorCode.StepNotFound);
      expect(err.exitStatus).toBe(3);
      expect(fx.store.lastEventId()).toBe(0);
    },
  );

  it.each(["start", "complete", "fail"] as const)(
    "%s on the review step is refused, nothing written",
    (op) => {
      const fx = setup();
      const p = plan(fx, 1);
      const before = snapshot(fx, p.id);
      const err = refusal(() =>
        op === "start"
          ? fx.ledger.start({ step_id: p.review })
          : op === "complete"
            ? fx.ledger.complete({ step_id: p.review })
            : fx.ledger.fail({ step_id: p.review }),
      );
      expect(err.code).toBe(ErrorCode.IllegalTransition);
      expect(err.message).toContain("review step");
      expect(snapshot(fx, p.id)).toEqual(before);
    },
  );

  it("a write and its events commit together: a transaction that throws leaves neither", () => {
    const fx = setup();
    const p = plan(fx, 1);
    const A = p.steps[0]!;
    fx.ledger.start({ step_id: A });
    const before = snapshot(fx, p.id);
    expect(() =>
      fx.store.tx(() => {
        fx.ledger.complete({ step_id: A, log_context: "x" });
        throw new Error("crash after the write");
      }),
    ).toThrow("crash after the write");
    expect(snapshot(fx, p.id)).toEqual(before);
  });
});

describe("roll-up through the ledger", () => {
  it("the last completion closes review and plan as COMPLETED, one event per transition", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const [A, B] = p.steps as [string, string];
    done(fx, A);
    fx.ledger.start({ step_id: B });
    const { result, events } = withEvents(fx, () => fx.ledger.complete({ step_id: B }));
    expect(result).toEqual({
      step_id: B,
      plan_id: p.id,
      status: "COMPLETED",
      plan_status: "COMPLETED",
      review_status: "COMPLETED",
    });
    expect(events).toEqual([
      `step.completed ${B}`,
      `step.in_progress ${p.review}`,
      `step.completed ${p.review}`,
      `plan.completed ${p.id}`,
    ]);
    expect(fx.store.getPlan(p.id)).toMatchObject({ status: "COMPLETED", finished_at: T0 });
    expect(fx.step(p.review)).toMatchObject({ status: "COMPLETED", summary: "all steps completed" });
  });

  it("an unrecovered failure closes review and plan as FAILED, naming the step", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const [A, B] = p.steps as [string, string];
    done(fx, A);
    fx.ledger.start({ step_id: B });
    const { result, events } = withEvents(fx, () => fx.ledger.fail({ step_id: B, reason: "r" }));
    expect(result).toMatchObject({ plan_status: "FAILED", review_status: "FAILED", unrecovered: [B] });
    expect(events).toEqual([
      `step.failed ${B}`,
      `step.in_progress ${p.review}`,
      `step.failed ${p.review}`,
      `plan.failed ${p.id}`,
    ]);
    expect(fx.step(p.review).failure_reason).toBe(`unrecovered failed steps: ${B}`);
    expect(fx.store.getPlan(p.id)?.status).toBe("FAILED");
  });

  it("a failure recovered by a deviation child lets the plan complete", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const [D, E] = p.steps as [string, string];
    fx.ledger.start({ step_id: D });
    fx.ledger.deviate({
      parent_step_id: D,
      justification: "retry",
      sub_steps: [{ title: "retry", type: "CODE" }],
    });
    expect(fx.ledger.fail({ step_id: D, reason: "r" })).toMatchObject({ plan_status: "IN_PROGRESS" });
    expect(done(fx, `${D}.1`)).toMatchObject({ plan_status: "IN_PROGRESS" });
    expect(done(fx, E)).toMatchObject({ plan_status: "COMPLETED" });
  });

  it("a retry as a sibling never recovers: FAILED D.1 beside COMPLETED D.2 fails naming D.1", () => {
    const fx = setup();
    const p = plan(fx, 1);
    const D = p.steps[0]!;
    fx.ledger.start({ step_id: D });
    fx.ledger.deviate({
      parent_step_id: D,
      justification: "two tries",
      sub_steps: [
        { title: "try 1", type: "CODE" },
        { title: "try 2", type: "CODE" },
      ],
    });
    fx.ledger.fail({ step_id: D });
    failed(fx, `${D}.1`);
    expect(done(fx, `${D}.2`)).toMatchObject({ plan_status: "FAILED", unrecovered: [`${D}.1`] });
  });
});

describe("deviate", () => {
  it("adds numbered children one level down, bumps the revision, records a deviation, one event", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const D = p.steps[0]!;
    const { result, events } = withEvents(fx, () =>
      fx.ledger.deviate({
        parent_step_id: D,
        justification: "needs a migration",
        sub_steps: [
          { title: "write migration", type: "CODE" },
          { title: "run it", type: "COMMAND", description: "carefully" },
        ],
      }),
    );
    expect(result).toMatchObject({
      plan_id: p.id,
      parent_step_id: D,
      sub_step_ids: [`${D}.1`, `${D}.2`],
      depth: 1,
      revision_count: 1,
      max_revisions: 5,
    });
    expect(events).toEqual([`plan.deviated ${p.id}`]);
    expect(fx.step(`${D}.2`)).toMatchObject({
      parent_step_id: D,
      depth: 1,
      seq: 2,
      role: "regular",
      type: "COMMAND",
      status: "PENDING",
      description: "carefully",
    });
    expect(fx.store.getPlan(p.id)?.revision_count).toBe(1);
    expect(fx.store.deviationsOfPlan(p.id)).toMatchObject([
      {
        kind: "deviate",
        parent_step_id: D,
        justification: "needs a migration",
        sub_step_ids: JSON.stringify([`${D}.1`, `${D}.2`]),
        old_max: null,
        new_max: null,
      },
    ]);
    // A second deviation under the same parent continues the numbering.
    const again = fx.ledger.deviate({
      parent_step_id: D,
      justification: "more",
      sub_steps: [{ title: "t", type: "TEST" }],
    });
    expect(again.sub_step_ids).toEqual([`${D}.3`]);
    expect(again.revision_count).toBe(2);
  });

  it("on a COMPLETED step → soft_breaker (breaker soft, exit 4), nothing written", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const A = p.steps[0]!;
    done(fx, A);
    const before = snapshot(fx, p.id);
    const err = refusal(() =>
      fx.ledger.deviate({
        parent_step_id: A,
        justification: "redo",
        sub_steps: [{ title: "t", type: "CODE" }],
      }),
    );
    expect(err.code).toBe(ErrorCode.SoftBreaker);
    expect(err.details.breaker).toBe("soft");
    expect(err.exitStatus).toBe(4);
    expect(err.message).toContain("COMPLETED");
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("on a FAILED step is allowed while the plan is open (that is how recovery works)", () => {
    const fx = setup();
    const p = plan(fx, 2);
    failed(fx, p.steps[0]!);
    const r = fx.ledger.deviate({
      parent_step_id: p.steps[0]!,
      justification: "recover",
      sub_steps: [{ title: "t", type: "CODE" }],
    });
    expect(r.sub_step_ids).toEqual([`${p.steps[0]}.1`]);
  });

  it("depth: D.1.1.1 is allowed, D.1.1.1.1 is refused (soft), nothing written", () => {
    const fx = setup();
    const p = plan(fx, 1);
    let parent = p.steps[0]!;
    for (const depth of [1, 2, 3]) {
      const r = fx.ledger.deviate({
        parent_step_id: parent,
        justification: "j",
        sub_steps: [{ title: "t", type: "CODE" }],
      });
      expect(r.depth).toBe(depth);
      parent = r.sub_step_ids[0]!;
    }
    expect(parent).toBe(`${p.steps[0]}.1.1.1`);
    expect(fx.step(parent).depth).toBe(3);
    const before = snapshot(fx, p.id);
    const err = refusal(() =>
      fx.ledger.deviate({
        parent_step_id: parent,
        justification: "j",
        sub_steps: [{ title: "t", type: "CODE" }],
      }),
    );
    expect(err.code).toBe(ErrorCode.SoftBreaker);
    expect(err.details.breaker).toBe("soft");
    expect(err.message).toContain("depth 4");
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("unknown parent → step_not_found naming parent_step_id", () => {
    const fx = setup();
    const err = refusal(() =>
      fx.ledger.deviate({
        parent_step_id: "ghost-A",
        justification: "j",
        sub_steps: [{ title: "t", type: "CODE" }],
      }),
    );
    expect(err.code).toBe(ErrorCode.StepNotFound);
    expect(err.details.field).toBe("parent_step_id");
  });

  it("on a closed plan → illegal_transition (only a FAILED step of a FAILED plan takes recovery retries)", () => {
    const fx = setup();
    const p = plan(fx, 2);
    done(fx, p.steps[1]!);
    failed(fx, p.steps[0]!);
    expect(fx.store.getPlan(p.id)?.status).toBe("FAILED");
    const err = refusal(() =>
      fx.ledger.deviate({
        parent_step_id: p.review,
        justification: "j",
        sub_steps: [{ title: "t", type: "CODE" }],
      }),
    );
    expect(err.code).toBe(ErrorCode.IllegalTransition);
  });
});

describe("revision budget", () => {
  const sub = [{ title: "t", type: "CODE" as const }];

  it("after max_revisions deviations the next is revision_budget_exhausted (hard); raise-budget lifts it", () => {
    const fx = setup();
    const p = plan(fx, 1, { max_revisions: 2 });
    const D = p.steps[0]!;
    fx.ledger.deviate({ parent_step_id: D, justification: "1", sub_steps: sub });
    fx.ledger.deviate({ parent_step_id: D, justification: "2", sub_steps: sub });

    const before = snapshot(fx, p.id);
    const err = refusal(() => fx.ledger.deviate({ parent_step_id: D, justification: "3", sub_steps: sub }));
    expect(err.code).toBe(ErrorCode.RevisionBudget);
    expect(err.exitStatus).toBe(6);
    expect(err.details).toMatchObject({ breaker: "hard", revision_count: 2, max_revisions: 2 });
    expect(snapshot(fx, p.id)).toEqual(before);

    // Not above the current ceiling → invalid_value, nothing written.
    for (const new_max of [1, 2]) {
      const bad = refusal(() => fx.ledger.raiseBudget({ plan_id: p.id, new_max, reason: "more" }));
      expect(bad.code).toBe(ErrorCode.InvalidValue);
      expect(bad.exitStatus).toBe(2);
      expect(bad.details.field).toBe("new_max");
      expect(snapshot(fx, p.id)).toEqual(before);
    }

    const { result, events } = withEvents(fx, () =>
      fx.ledger.raiseBudget({ plan_id: p.id, new_max: 4, reason: "the schema changed twice" }),
    );
    expect(result).toMatchObject({ plan_id: p.id, old_max: 2, new_max: 4, revision_count: 2 });
    expect(events).toEqual([`plan.budget_raised ${p.id}`]);
    expect(fx.store.getPlan(p.id)).toMatchObject({ max_revisions: 4, revision_count: 2 });
    expect(
      fx.store.deviationsOfPlan(p.id).map((d) => [d.kind, d.justification, d.old_max, d.new_max]),
    ).toEqual([
      ["deviate", "1", null, null],
      ["deviate", "2", null, null],
      ["raise_budget", "the schema changed twice", 2, 4],
    ]);

    expect(fx.ledger.deviate({ parent_step_id: D, justification: "3", sub_steps: sub }).revision_count).toBe(
      3,
    );
  });

  it("max_revisions 0 refuses the first deviation", () => {
    const fx = setup();
    const p = plan(fx, 1, { max_revisions: 0 });
    const err = refusal(() =>
      fx.ledger.deviate({ parent_step_id: p.steps[0]!, justification: "j", sub_steps: sub }),
    );
    expect(err.code).toBe(ErrorCode.RevisionBudget);
  });

  it("raise-budget on a closed plan → illegal_transition; on an unknown plan → plan_not_found", () => {
    const fx = setup();
    const p = plan(fx, 1);
    done(fx, p.steps[0]!);
    expect(refusal(() => fx.ledger.raiseBudget({ plan_id: p.id, new_max: 9, reason: "r" })).code).toBe(
      ErrorCode.IllegalTransition,
    );
    expect(refusal(() => fx.ledger.raiseBudget({ plan_id: "ghost", new_max: 9, reason: "r" })).code).toBe(
      ErrorCode.PlanNotFound,
    );
  });
});

describe("NEEDS_REVIEW hand-off (registered-project plan)", () => {
  function projectPlan(fx: LedgerFixture, n = 2) {
    fx.addProject("billing");
    return plan(fx, n, { project: "billing" });
  }

  /** Completes every regular step; returns the last completion's result. */
  function handOff(fx: LedgerFixture, p: ReturnType<typeof projectPlan>) {
    for (const s of p.steps.slice(0, -1)) done(fx, s);
    const last = p.steps.at(-1)!;
    fx.ledger.start({ step_id: last });
    return withEvents(fx, () => fx.ledger.complete({ step_id: last }));
  }

  it("the last completion flips the review to NEEDS_REVIEW, creates REVIEW.1, revision +1", () => {
    const fx = setup();
    const p = projectPlan(fx);
    const last = p.steps.at(-1)!;
    const { result, events } = handOff(fx, p);
    const child = `${p.id}-REVIEW.1`;
    expect(result).toEqual({
      step_id: last,
      plan_id: p.id,
      status: "COMPLETED",
      plan_status: "IN_PROGRESS",
      review_status: "NEEDS_REVIEW",
      needs_agent_review: true,
      project: "billing",
      review_step_id: p.review,
      review_child_step_id: child,
    });
    expect(events).toEqual([
      `step.completed ${last}`,
      `step.needs_review ${p.review}`,
      `plan.needs_review ${p.id}`,
    ]);
    expect(fx.step(p.review).status).toBe("NEEDS_REVIEW");
    expect(fx.step(child)).toMatchObject({
      parent_step_id: p.review,
      role: "review_child",
      type: "SUB_AGENT",
      status: "PENDING",
      depth: 1,
      seq: 1,
    });
    expect(fx.store.getPlan(p.id)).toMatchObject({ status: "IN_PROGRESS", revision_count: 1 });
  });

  it("steps closing newest first, then a parent before its deviation child: only the last closing hands off, once", () => {
    // complete/fail read the roll-up's cheap exit with the step, before its move (one statement):
    // the step itself must not count as open, and every other open step must.
    const fx = setup();
    const p = projectPlan(fx, 3);
    const [a, b, c] = p.steps as [string, string, string];
    const since = fx.store.lastEventId();
    expect(done(fx, c)).toMatchObject({ plan_status: "IN_PROGRESS", review_status: "PENDING" });
    expect(done(fx, a)).not.toHaveProperty("needs_agent_review");
    fx.ledger.start({ step_id: b });
    fx.ledger.deviate({
      parent_step_id: b,
      justification: "one more",
      sub_steps: [{ title: "x", type: "CODE" }],
    });
    // B closes while its child B.1 (the newest row) is open: no hand-off.
    expect(fx.ledger.complete({ step_id: b })).toEqual({
      step_id: b,
      plan_id: p.id,
      status: "COMPLETED",
      plan_status: "IN_PROGRESS",
      review_status: "PENDING",
    });
    expect(done(fx, `${b}.1`)).toMatchObject({ needs_agent_review: true, review_status: "NEEDS_REVIEW" });
    expect(eventsSince(fx, since).filter((e) => e.startsWith("plan.needs_review"))).toEqual([
      `plan.needs_review ${p.id}`,
    ]);
    expect(fx.store.getPlan(p.id)?.revision_count).toBe(2);
  });

  it("a failure read before its move: the last open step failing fails the plan; an earlier one does not", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const [a, b] = p.steps as [string, string];
    expect(failed(fx, b)).toMatchObject({
      status: "FAILED",
      plan_status: "IN_PROGRESS",
      review_status: "PENDING",
    });
    expect(failed(fx, a)).toMatchObject({ plan_status: "FAILED", review_status: "FAILED" });
    expect(fx.store.getPlan(p.id)?.status).toBe("FAILED");
  });

  it("child start + complete → review and plan COMPLETED", () => {
    const fx = setup();
    const p = projectPlan(fx);
    const child = handOff(fx, p).result.review_child_step_id!;
    fx.ledger.start({ step_id: child, agent_input: "review this" });
    const { result, events } = withEvents(fx, () => fx.ledger.complete({ step_id: child, summary: "clean" }));
    expect(result).toMatchObject({
      status: "COMPLETED",
      plan_status: "COMPLETED",
      review_status: "COMPLETED",
    });
    expect(events).toEqual([
      `step.completed ${child}`,
      `step.completed ${p.review}`,
      `plan.completed ${p.id}`,
    ]);
    expect(fx.step(p.review).status).toBe("COMPLETED");
    expect(fx.store.getPlan(p.id)?.status).toBe("COMPLETED");
  });

  it("child fail → review and plan FAILED", () => {
    const fx = setup();
    const p = projectPlan(fx);
    const child = handOff(fx, p).result.review_child_step_id!;
    fx.ledger.start({ step_id: child });
    const { result, events } = withEvents(fx, () => fx.ledger.fail({ step_id: child, reason: "gap" }));
    expect(result).toMatchObject({ plan_status: "FAILED", review_status: "FAILED", unrecovered: [child] });
    expect(events).toEqual([`step.failed ${child}`, `step.failed ${p.review}`, `plan.failed ${p.id}`]);
    expect(fx.store.getPlan(p.id)?.status).toBe("FAILED");
  });

  it("an unrecovered failure is not deferred to the review: the plan fails, no hand-off", () => {
    const fx = setup();
    const p = projectPlan(fx, 2);
    done(fx, p.steps[0]!);
    expect(failed(fx, p.steps[1]!)).toMatchObject({ plan_status: "FAILED" });
    expect(fx.store.getStep(`${p.id}-REVIEW.1`)).toBeUndefined();
    expect(fx.store.getPlan(p.id)?.revision_count).toBe(0);
  });

  it("the review step itself stays closed to direct writes while NEEDS_REVIEW", () => {
    const fx = setup();
    const p = projectPlan(fx, 1);
    handOff(fx, p);
    const before = snapshot(fx, p.id);
    expect(refusal(() => fx.ledger.complete({ step_id: p.review })).code).toBe(ErrorCode.IllegalTransition);
    expect(refusal(() => fx.ledger.fail({ step_id: p.review })).code).toBe(ErrorCode.IllegalTransition);
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("finish on a NEEDS_REVIEW plan → plan_awaits_review (exit 7) naming the child, nothing written", () => {
    const fx = setup();
    const p = projectPlan(fx, 1);
    handOff(fx, p);
    const before = snapshot(fx, p.id);
    const err = refusal(() => fx.ledger.finish({ plan_id: p.id }));
    expect(err.code).toBe(ErrorCode.AwaitsReview);
    expect(err.exitStatus).toBe(7);
    expect(err.message).toContain(`${p.id}-REVIEW.1`);
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("a deviation under the review step does not take the tracked child's id", () => {
    const fx = setup();
    const p = projectPlan(fx, 1);
    const dev = fx.ledger.deviate({
      parent_step_id: p.review,
      justification: "one more check",
      sub_steps: [{ title: "extra check", type: "TEST" }],
    });
    expect(dev.sub_step_ids).not.toContain(`${p.id}-REVIEW.1`);
    done(fx, p.steps[0]!);
    const r = done(fx, dev.sub_step_ids[0]!);
    expect(r).toMatchObject({ needs_agent_review: true, review_child_step_id: `${p.id}-REVIEW.1` });
    expect(fx.step(`${p.id}-REVIEW.1`)).toMatchObject({ role: "review_child", type: "SUB_AGENT" });
    expect(done(fx, `${p.id}-REVIEW.1`)).toMatchObject({ plan_status: "COMPLETED" });
  });

  describe("review-close", () => {
    it.each([
      { outcome: "pass", status: "COMPLETED" },
      { outcome: "fail", status: "FAILED" },
    ] as const)("$outcome closes review, child and plan as $status", ({ outcome, status }) => {
      const fx = setup();
      const p = projectPlan(fx, 1);
      const child = handOff(fx, p).result.review_child_step_id!;
      const { result, events } = withEvents(fx, () =>
        fx.ledger.reviewClose({ plan_id: p.id, outcome, summary: "verdict", log_context: "notes" }),
      );
      expect(result).toEqual({
        plan_id: p.id,
        outcome,
        status,
        review_step_id: p.review,
        review_child_step_id: child,
      });
      const lower = status.toLowerCase();
      expect(events).toEqual([
        `step.in_progress ${child}`,
        `step.${lower} ${child}`,
        `step.${lower} ${p.review}`,
        `plan.${lower} ${p.id}`,
      ]);
      expect(fx.step(child).status).toBe(status);
      expect(fx.step(p.review)).toMatchObject({ status, summary: "verdict" });
      expect(fx.store.getPlan(p.id)?.status).toBe(status);
      expect(fx.store.logsOfStep(p.review).map((l) => [l.kind, l.text])).toEqual([
        ["review", "notes"],
        ["review", `[AGENT-REVIEW ${status === "COMPLETED" ? "PASS" : "FAIL"}] verdict`],
      ]);
    });

    it("keeps an already started child in sync", () => {
      const fx = setup();
      const p = projectPlan(fx, 1);
      const child = handOff(fx, p).result.review_child_step_id!;
      fx.ledger.start({ step_id: child });
      const { events } = withEvents(fx, () => fx.ledger.reviewClose({ plan_id: p.id, outcome: "pass" }));
      expect(events).toEqual([
        `step.completed ${child}`,
        `step.completed ${p.review}`,
        `plan.completed ${p.id}`,
      ]);
    });

    it("is refused (illegal_transition) when the review step is not NEEDS_REVIEW, nothing written", () => {
      const fx = setup();
      const p = plan(fx, 2);
      const before = snapshot(fx, p.id);
      const err = refusal(() => fx.ledger.reviewClose({ plan_id: p.id, outcome: "pass" }));
      expect(err.code).toBe(ErrorCode.IllegalTransition);
      expect(err.message).toContain("PENDING");
      expect(err.message).toContain("NEEDS_REVIEW");
      expect(snapshot(fx, p.id)).toEqual(before);
    });

    it("refuses a pass while a deviation under the review step is still open, nothing written", () => {
      const fx = setup();
      const p = projectPlan(fx, 1);
      handOff(fx, p);
      const dev = fx.ledger.deviate({
        parent_step_id: p.review,
        justification: "reviewer found a gap",
        sub_steps: [{ title: "close the gap", type: "CODE" }],
      });
      const before = snapshot(fx, p.id);
      const err = refusal(() => fx.ledger.reviewClose({ plan_id: p.id, outcome: "pass" }));
      expect(err.code).toBe(ErrorCode.SoftBreaker);
      expect(err.message).toContain(dev.sub_step_ids[0]!);
      expect(snapshot(fx, p.id)).toEqual(before);
      expect(fx.ledger.reviewClose({ plan_id: p.id, outcome: "fail" }).status).toBe("FAILED");
    });

    it("is refused once the plan is closed", () => {
      const fx = setup();
      const p = projectPlan(fx, 1);
      handOff(fx, p);
      fx.ledger.reviewClose({ plan_id: p.id, outcome: "pass" });
      expect(refusal(() => fx.ledger.reviewClose({ plan_id: p.id, outcome: "fail" })).code).toBe(
        ErrorCode.IllegalTransition,
      );
    });
  });
});

describe("finish", () => {
  it("force-completes a partial plan, leaving the open steps as they are; one event", () => {
    const fx = setup();
    const p = plan(fx, 3);
    const [A, B, C] = p.steps as [string, string, string];
    done(fx, A);
    fx.ledger.start({ step_id: B });
    const { result, events } = withEvents(fx, () => fx.ledger.finish({ plan_id: p.id }));
    expect(result).toEqual({
      plan_id: p.id,
      mode: "forced",
      status: "COMPLETED",
      plan_status: "COMPLETED",
      open_steps: [B, C],
    });
    expect(events).toEqual([`plan.completed ${p.id}`]);
    expect(JSON.parse(fx.events(p.id).at(-1)!.payload)).toMatchObject({ forced: true, open_steps: [B, C] });
    expect(fx.step(C).status).toBe("PENDING");
    expect(fx.step(p.review).status).toBe("PENDING");
    // Nothing more can move on the closed plan.
    expect(refusal(() => fx.ledger.complete({ step_id: B })).code).toBe(ErrorCode.IllegalTransition);
  });

  it.each(["COMPLETED", "FAILED"] as const)(
    "on a %s plan → an idempotent no-op, nothing written",
    (status) => {
      const fx = setup();
      const p = plan(fx, 1);
      if (status === "COMPLETED") done(fx, p.steps[0]!);
      if (status === "FAILED") failed(fx, p.steps[0]!);
      const before = snapshot(fx, p.id);
      const r = fx.ledger.finish({ plan_id: p.id });
      expect(r).toMatchObject({
        plan_id: p.id,
        status,
        mode: "noop",
        completed_at: fx.store.getPlan(p.id)?.finished_at,
        review_outcome: { reason: "review step already terminal (idempotent no-op)" },
      });
      expect(snapshot(fx, p.id)).toEqual(before);
    },
  );

  it("on an ABANDONED plan → illegal_transition", () => {
    const status = "ABANDONED";
    const fx = setup();
    const p = plan(fx, 1);
    fx.ledger.abandon({ plan_id: p.id, reason: "r" });
    expect(fx.store.getPlan(p.id)?.status).toBe(status);
    const before = snapshot(fx, p.id);
    const err = refusal(() => fx.ledger.finish({ plan_id: p.id }));
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(err.message).toContain(status);
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("completes a legacy plan without a review row unconditionally", () => {
    const fx = setup();
    const p = plan(fx, 1);
    // Make it look like a pre-review plan: drop the review row.
    fx.store.db.prepare("DELETE FROM steps WHERE step_id = ?").run(p.review);
    const r = fx.ledger.finish({ plan_id: p.id });
    expect(r).toMatchObject({ mode: "legacy", status: "COMPLETED", open_steps: [p.steps[0]] });
  });

  it("unknown plan → plan_not_found", () => {
    const fx = setup();
    expect(refusal(() => fx.ledger.finish({ plan_id: "ghost" })).code).toBe(ErrorCode.PlanNotFound);
  });
});

describe("abandon", () => {
  it("puts down a plan nobody started; one event", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const { result, events } = withEvents(fx, () =>
      fx.ledger.abandon({ plan_id: p.id, reason: "published by mistake" }),
    );
    expect(result).toEqual({
      plan_id: p.id,
      status: "ABANDONED",
      reason: "published by mistake",
      deviation_id: 1,
      revision_count: 0,
    });
    expect(fx.store.deviationsOfPlan(p.id)).toMatchObject([
      { kind: "abandon", parent_step_id: null, justification: "[ABANDONED] published by mistake" },
    ]);
    expect(fx.store.getPlan(p.id)).toMatchObject({
      abandon_reason: "published by mistake",
      revision_count: 0,
    });
    expect(events).toEqual([`plan.abandoned ${p.id}`]);
    expect(fx.store.getPlan(p.id)).toMatchObject({ status: "ABANDONED", finished_at: T0 });
    expect(refusal(() => fx.ledger.start({ step_id: p.steps[0]! })).code).toBe(ErrorCode.IllegalTransition);
  });

  it("is refused (soft) once any step started, naming it; nothing written", () => {
    const fx = setup();
    const p = plan(fx, 2);
    fx.ledger.start({ step_id: p.steps[1]! });
    const before = snapshot(fx, p.id);
    const err = refusal(() => fx.ledger.abandon({ plan_id: p.id, reason: "r" }));
    expect(err.code).toBe(ErrorCode.SoftBreaker);
    expect(err.message).toContain(`${p.steps[1]} IN_PROGRESS`);
    expect(snapshot(fx, p.id)).toEqual(before);
  });
});

describe("leases: heartbeat and sweep", () => {
  it("heartbeat renews the lease from now; one event", () => {
    const fx = setup();
    const p = plan(fx, 1);
    const A = p.steps[0]!;
    fx.ledger.start({ step_id: A, lease_seconds: 60 });
    fx.clock.advance(30_000);
    const { result, events } = withEvents(fx, () => fx.ledger.heartbeat({ step_id: A, lease_seconds: 60 }));
    expect(result).toEqual({
      step_id: A,
      plan_id: p.id,
      status: "IN_PROGRESS",
      lease_holder: "test-holder@test-host",
      lease_expires_at: "2026-01-01T00:01:30.000Z",
    });
    expect(events).toEqual([`step.heartbeat ${A}`]);
    expect(fx.step(A)).toMatchObject({
      lease_expires_at: Date.parse("2026-01-01T00:01:30.000Z"),
      heartbeat_at: "2026-01-01T00:00:30.000Z",
    });
    // Past the first lease but inside the renewed one: the sweep leaves it alone.
    fx.clock.advance(45_000);
    expect(fx.ledger.sweep({})).toMatchObject({ count: 0, swept: [] });
    expect(fx.step(A).status).toBe("IN_PROGRESS");
  });

  it.each(["PENDING", "COMPLETED"] as const)("heartbeat on a %s step → illegal_transition", (status) => {
    const fx = setup();
    const p = plan(fx, 2);
    if (status === "COMPLETED") done(fx, p.steps[0]!);
    const before = snapshot(fx, p.id);
    const err = refusal(() => fx.ledger.heartbeat({ step_id: p.steps[0]! }));
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(err.message).toContain(status);
    expect(snapshot(fx, p.id)).toEqual(before);
  });

  it("sweep fails only expired leases, with a reason naming the lease, and runs the roll-up", () => {
    const fx = setup();
    const p = plan(fx, 2);
    const [A, B] = p.steps as [string, string];
    fx.ledger.start({ step_id: A, lease_seconds: 60 });
    fx.ledger.start({ step_id: B, lease_seconds: 600 });

    // Exactly at expiry: not yet expired.
    fx.clock.advance(60_000);
    expect(fx.ledger.sweep({}).count).toBe(0);

    fx.clock.advance(1);
    const since = fx.store.lastEventId();
    const first = fx.ledger.sweep({});
    expect(first.count).toBe(1);
    const reason =
      "lease expired at 2026-01-01T00:01:00.000Z (held by test-holder@test-host, last heartbeat 2026-01-01T00:00:00.000Z); failed by sweep";
    expect(first.swept).toEqual([
      {
        step_id: A,
        plan_id: p.id,
        lease_holder: "test-holder@test-host",
        expired_at: "2026-01-01T00:01:00.000Z",
        reason,
        plan_status: "IN_PROGRESS",
        review_status: "PENDING",
      },
    ]);
    expect(eventsSince(fx, since)).toEqual([`step.failed ${A}`]);
    expect(fx.step(A)).toMatchObject({ status: "FAILED", failure_reason: reason, lease_holder: null });
    expect(fx.step(B).status).toBe("IN_PROGRESS");

    // B expires too: the roll-up fails the plan, naming A (B is unrecovered as well).
    fx.clock.advance(600_000);
    const second = fx.ledger.sweep({ plan_id: p.id });
    expect(second.swept).toMatchObject([{ step_id: B, plan_status: "FAILED", unrecovered: [A, B] }]);
    expect(fx.store.getPlan(p.id)?.status).toBe("FAILED");
  });

  it("sweep only looks at the given plan", () => {
    const fx = setup();
    const p1 = plan(fx, 1);
    const p2 = fx.publish("other", ["THINKING"]);
    fx.ledger.start({ step_id: p1.steps[0]!, lease_seconds: 1 });
    fx.ledger.start({ step_id: p2.step_ids[0]!, lease_seconds: 1 });
    fx.clock.advance(10_000);
    expect(fx.ledger.sweep({ plan_id: p2.plan_id }).swept.map((s) => s.step_id)).toEqual([p2.step_ids[0]]);
    expect(fx.step(p1.steps[0]!).status).toBe("IN_PROGRESS");
    expect(refusal(() => fx.ledger.sweep({ plan_id: "ghost" })).code).toBe(ErrorCode.PlanNotFound);
  });

  it("sweep releases the lease of a step on a force-finished plan without failing it", () => {
    const fx = setup();
    const p = plan(fx, 2);
    fx.ledger.start({ step_id: p.steps[0]!, lease_seconds: 1 });
    fx.ledger.finish({ plan_id: p.id });
    fx.clock.advance(10_000);
    expect(fx.ledger.sweep({}).count).toBe(0);
    expect(fx.step(p.steps[0]!)).toMatchObject({
      status: "IN_PROGRESS",
      lease_holder: null,
      lease_expires_at: null,
    });
  });
});

describe("logs: 16 KiB inline limit", () => {
  it("a log at the limit is stored whole", () => {
    const fx = setup();
    const p = plan(fx, 1);
    const text = "x".repeat(16 * 1024);
    fx.ledger.log({ step_id: p.steps[0]!, text });
    expect(fx.store.logsOfStep(p.steps[0]!)).toMatchObject([
      { text, bytes: 16384, truncated: 0, blob: null },
    ]);
  });

  it("a longer log is cut (head 8 KiB + marker + tail 8 KiB) and the full text kept as a blob", () => {
    const fx = setup();
    const p = plan(fx, 1);
    const text = `${"h".repeat(8192)}${"m".repeat(4000)}${"t".repeat(8192)}`;
    fx.ledger.log({ step_id: p.steps[0]!, text });
    const [row] = fx.store.logsOfStep(p.steps[0]!);
    expect(row).toMatchObject({ bytes: text.length, truncated: 1 });
    expect(row!.text).toBe(`${"h".repeat(8192)}${truncationMarker(4000)}${"t".repeat(8192)}`);
    expect(row!.blob).toMatch(/^[0-9a-f]{64}$/);
    expect(fx.blobs.getText(row!.blob!)).toBe(text);
  });
});

describe("redaction", () => {
  const SECRET = "s3cr3t-deploy-value-xyz";
  const MASK = "[REDACTED:SECRET_DEPLOY_KEY]";

  /** Every row of every table, and every blob, as `[where, text]` pairs. */
  function everything(fx: LedgerFixture): [string, string][] {
    const tables = fx.store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
      name: string;
    }[];
    const out: [string, string][] = [];
    for (const t of tables) {
      const rows = fx.store.db.prepare(`SELECT * FROM "${t.name}"`).all() as Record<string, unknown>[];
      rows.forEach((r, i) => {
        for (const [col, v] of Object.entries(r)) out.push([`${t.name}[${i}].${col}`, String(v)]);
      });
    }
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else out.push([`blob ${e.name}`, readFileSync(join(d, e.name), "utf8")]);
      }
    };
    walk(fx.blobs.dir);
    return out;
  }

  it("SECRET_* values never reach a stored row, event or blob", () => {
    const fx = setup({ redactor: new Redactor().addFromEnv({ SECRET_DEPLOY_KEY: SECRET, HOME: "/home/x" }) });
    const p = fx.publish(`deploy with ${SECRET}`, [
      { title: `use ${SECRET}`, type: "THINKING" },
      "THINKING",
      "THINKING",
    ]);
    const [A, B, C] = p.step_ids as [string, string, string];
    fx.ledger.start({ step_id: A, agent_input: `key=${SECRET}`, log_context: `start ${SECRET}` });
    fx.ledger.log({ step_id: A, text: `token ${SECRET}` });
    fx.ledger.log({ step_id: A, text: `${SECRET} ${"a".repeat(20_000)} ${SECRET}` });
    fx.ledger.complete({
      step_id: A,
      summary: `done with ${SECRET}`,
      agent_output: `out ${SECRET}`,
      log_context: `complete ${SECRET}`,
    });
    fx.ledger.start({ step_id: B });
    fx.ledger.deviate({
      parent_step_id: B,
      justification: `because ${SECRET}`,
      sub_steps: [{ title: `retry ${SECRET}`, type: "CODE", description: SECRET }],
    });
    fx.ledger.fail({ step_id: B, reason: `leaked ${SECRET}`, log_context: SECRET });
    fx.ledger.raiseBudget({ plan_id: p.plan_id, new_max: 9, reason: `why ${SECRET}` });
    fx.ledger.recordSkill({
      plan_id: p.plan_id,
      name: "skill",
      source: "explicit-mention",
      reason: `r ${SECRET}`,
    });
    fx.ledger.start({ step_id: C });

    const all = everything(fx);
    expect(all.filter(([, text]) => text.includes(SECRET)).map(([where]) => where)).toEqual([]);
    expect(all.some(([where, text]) => where.startsWith("blob") && text.includes(MASK))).toBe(true);
    expect(all.some(([where, text]) => where.startsWith("events") && text.includes(MASK))).toBe(true);
    expect(fx.store.getPlan(p.plan_id)?.goal).toBe(`deploy with ${MASK}`);
    expect(fx.step(A)).toMatchObject({
      title: `use ${MASK}`,
      summary: `done with ${MASK}`,
      agent_input: `key=${MASK}`,
      agent_output: `out ${MASK}`,
    });
    expect(fx.step(B).failure_reason).toBe(`leaked ${MASK}`);
    expect(fx.store.logsOfStep(A).map((l) => l.text.includes(MASK))).toEqual([true, true, true, true]);
  });
});
