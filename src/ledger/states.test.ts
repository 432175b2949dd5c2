import { describe, expect, it } from "vitest";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  checkPlanMove,
  checkStepMove,
  isTerminalStep,
  PLAN_TRANSITIONS,
  PlanStatus,
  STEP_TRANSITIONS,
  STEP_TYPES,
  StepRole,
  StepStatus,
  StepType,
} from "./states.js";

const STEP_STATES = ["PENDING", "IN_PROGRESS", "NEEDS_REVIEW", "COMPLETED", "FAILED"] as const;
const PLAN_STATES = ["IN_PROGRESS", "COMPLETED", "FAILED", "ABANDONED"] as const;

function thrown(fn: () => void): RatchetError {
  try {
    fn();
  } catch (e) {
    if (e instanceof RatchetError) return e;
    throw e;
  }
  throw new Error("expected a RatchetError, nothing was thrown");
}

describe("status and type strings (pinned)", () => {
  it("step statuses", () => {
    expect(StepStatus).toEqual({
      Pending: "PENDING",
      InProgress: "IN_PROGRESS",
      NeedsReview: "NEEDS_REVIEW",
      Completed: "COMPLETED",
      Failed: "FAILED",
    });
  });

  it("plan statuses", () => {
    expect(PlanStatus).toEqual({
      InProgress: "IN_PROGRESS",
      Completed: "COMPLETED",
      Failed: "FAILED",
      Abandoned: "ABANDONED",
    });
  });

  it("step types", () => {
    expect(StepType).toEqual({
      Command: "COMMAND",
      Code: "CODE",
      Test: "TEST",
      Thinking: "THINKING",
      Documentation: "DOCUMENTATION",
      Analysis: "ANALYSIS",
      SubAgent: "SUB_AGENT",
    });
    expect(STEP_TYPES).toEqual([
      "COMMAND",
      "CODE",
      "TEST",
      "THINKING",
      "DOCUMENTATION",
      "ANALYSIS",
      "SUB_AGENT",
    ]);
  });

  it("step roles", () => {
    expect(StepRole).toEqual({ Regular: "regular", Review: "review", ReviewChild: "review_child" });
  });
});

describe("transition tables (pinned)", () => {
  it("STEP_TRANSITIONS", () => {
    expect(STEP_TRANSITIONS).toEqual({
      PENDING: ["IN_PROGRESS", "NEEDS_REVIEW"],
      IN_PROGRESS: ["COMPLETED", "FAILED"],
      NEEDS_REVIEW: ["COMPLETED", "FAILED"],
      COMPLETED: [],
      FAILED: [],
    });
  });

  it("PLAN_TRANSITIONS", () => {
    expect(PLAN_TRANSITIONS).toEqual({
      IN_PROGRESS: ["COMPLETED", "FAILED", "ABANDONED"],
      COMPLETED: [],
      FAILED: [],
      ABANDONED: [],
    });
  });

  it("terminal step states are exactly COMPLETED and FAILED", () => {
    expect(STEP_STATES.filter(isTerminalStep)).toEqual(["COMPLETED", "FAILED"]);
  });
});

const stepPairs = STEP_STATES.flatMap((from) => STEP_STATES.map((to) => ({ from, to })));
const allowedStep = stepPairs.filter(({ from, to }) => STEP_TRANSITIONS[from].includes(to));
const refusedStep = stepPairs.filter(({ from, to }) => !STEP_TRANSITIONS[from].includes(to));

describe("checkStepMove", () => {
  it("covers all 25 pairs: 6 allowed, 19 refused", () => {
    expect(allowedStep).toHaveLength(6);
    expect(refusedStep).toHaveLength(19);
  });

  it.each(allowedStep)("allows $from → $to", ({ from, to }) => {
    expect(() => checkStepMove("p-A", from, to)).not.toThrow();
  });

  it.each(refusedStep)("refuses $from → $to with illegal_transition naming both states", ({ from, to }) => {
    const err = thrown(() => checkStepMove("p-A", from, to));
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(err.exitStatus).toBe(4);
    expect(err.message).toContain(`from ${from} to ${to}`);
    expect(err.message).toContain("p-A");
    expect(err.details).toMatchObject({ stepId: "p-A", from, to });
  });

  it.each([
    ["COMPLETED", "IN_PROGRESS", "COMPLETED is immutable"],
    ["FAILED", "IN_PROGRESS", "recover through a deviation child"],
    ["PENDING", "COMPLETED", "start it first"],
    ["PENDING", "FAILED", "start it first"],
  ] as const)("hints why %s → %s is refused", (from, to, hint) => {
    expect(thrown(() => checkStepMove("p-A", from, to)).message).toContain(hint);
  });

  it("refuses any move out of an unknown state", () => {
    const err = thrown(() => checkStepMove("p-A", "BOGUS", "COMPLETED"));
    expect(err.code).toBe(ErrorCode.IllegalTransition);
    expect(err.message).toContain("from BOGUS to COMPLETED");
  });
});

const planPairs = PLAN_STATES.flatMap((from) => PLAN_STATES.map((to) => ({ from, to })));

describe("checkPlanMove", () => {
  it.each(planPairs.filter(({ from, to }) => PLAN_TRANSITIONS[from].includes(to)))(
    "allows $from → $to",
    ({ from, to }) => {
      expect(() => checkPlanMove("p", from, to)).not.toThrow();
    },
  );

  it.each(planPairs.filter(({ from, to }) => !PLAN_TRANSITIONS[from].includes(to)))(
    "refuses $from → $to naming both states",
    ({ from, to }) => {
      const err = thrown(() => checkPlanMove("p", from, to));
      expect(err.code).toBe(ErrorCode.IllegalTransition);
      expect(err.message).toBe(`plan p cannot move from ${from} to ${to}`);
      expect(err.details).toMatchObject({ planId: "p", from, to });
    },
  );
});
