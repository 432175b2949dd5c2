import { describe, expect, it } from "vitest";
import { isSound, type RollupDecision, type RollupStep, rollUp } from "./rollup.js";

type S = "PENDING" | "IN_PROGRESS" | "NEEDS_REVIEW" | "COMPLETED" | "FAILED";

/** A regular step `p-<id>`; a dotted id hangs under its prefix (`D.1` under `D`). */
function reg(id: string, status: S): RollupStep {
  const dot = id.lastIndexOf(".");
  return {
    step_id: `p-${id}`,
    parent_step_id: dot > 0 ? `p-${id.slice(0, dot)}` : null,
    role: "regular",
    status,
  };
}
const review = (status: S): RollupStep => ({
  step_id: "p-REVIEW",
  parent_step_id: null,
  role: "review",
  status,
});
const reviewChild = (status: S): RollupStep => ({
  step_id: "p-REVIEW.1",
  parent_step_id: "p-REVIEW",
  role: "review_child",
  status,
});
/** A regular deviation child under the review step. */
const underReview = (n: number, status: S): RollupStep => ({
  step_id: `p-REVIEW.${n}`,
  parent_step_id: "p-REVIEW",
  role: "regular",
  status,
});

const open = { planOpen: true, hasProject: false };
const openProject = { planOpen: true, hasProject: true };

interface Row {
  name: string;
  steps: RollupStep[];
  opts?: { planOpen: boolean; hasProject: boolean };
  want: RollupDecision;
}

describe("rollUp: the spec's decision table", () => {
  const rows: Row[] = [
    {
      name: "a PENDING step → wait",
      steps: [reg("A", "COMPLETED"), reg("B", "PENDING"), review("PENDING")],
      want: { kind: "wait" },
    },
    {
      name: "an IN_PROGRESS step → wait",
      steps: [reg("A", "IN_PROGRESS"), reg("B", "COMPLETED"), review("PENDING")],
      want: { kind: "wait" },
    },
    {
      name: "an open step beside an unrecovered failure → wait (failure not yet decided)",
      steps: [reg("A", "FAILED"), reg("B", "PENDING"), review("PENDING")],
      want: { kind: "wait" },
    },
    {
      name: "all COMPLETED → complete",
      steps: [reg("A", "COMPLETED"), reg("B", "COMPLETED"), review("PENDING")],
      want: { kind: "complete" },
    },
    {
      name: "all COMPLETED + registered project → handoff",
      steps: [reg("A", "COMPLETED"), reg("B", "COMPLETED"), review("PENDING")],
      opts: openProject,
      want: { kind: "handoff" },
    },
    {
      name: "every failure recovered by deviation children → complete",
      steps: [reg("A", "COMPLETED"), reg("D", "FAILED"), reg("D.1", "COMPLETED"), review("PENDING")],
      want: { kind: "complete" },
    },
    {
      name: "every failure recovered + registered project → handoff",
      steps: [reg("D", "FAILED"), reg("D.1", "COMPLETED"), review("PENDING")],
      opts: openProject,
      want: { kind: "handoff" },
    },
    {
      name: "an unrecovered failure → fail naming the step",
      steps: [reg("A", "COMPLETED"), reg("B", "FAILED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-B"] },
    },
    {
      name: "an unrecovered failure is never deferred to the review (project plan fails too)",
      steps: [reg("A", "COMPLETED"), reg("B", "FAILED"), review("PENDING")],
      opts: openProject,
      want: { kind: "fail", unrecovered: ["p-B"] },
    },
    {
      name: "NEEDS_REVIEW + tracked child COMPLETED → complete",
      steps: [reg("A", "COMPLETED"), review("NEEDS_REVIEW"), reviewChild("COMPLETED")],
      opts: openProject,
      want: { kind: "complete" },
    },
    {
      name: "NEEDS_REVIEW + tracked child FAILED → fail naming the child",
      steps: [reg("A", "COMPLETED"), review("NEEDS_REVIEW"), reviewChild("FAILED")],
      opts: openProject,
      want: { kind: "fail", unrecovered: ["p-REVIEW.1"] },
    },
    {
      name: "NEEDS_REVIEW + tracked child PENDING → wait",
      steps: [reg("A", "COMPLETED"), review("NEEDS_REVIEW"), reviewChild("PENDING")],
      opts: openProject,
      want: { kind: "wait" },
    },
    {
      name: "NEEDS_REVIEW + tracked child IN_PROGRESS → wait",
      steps: [reg("A", "COMPLETED"), review("NEEDS_REVIEW"), reviewChild("IN_PROGRESS")],
      opts: openProject,
      want: { kind: "wait" },
    },
    {
      name: "NEEDS_REVIEW without a tracked child (legacy) → wait",
      steps: [reg("A", "COMPLETED"), review("NEEDS_REVIEW")],
      opts: openProject,
      want: { kind: "wait" },
    },
  ];

  it.each(rows)("$name", ({ steps, opts, want }) => {
    expect(rollUp(steps, opts ?? open)).toEqual(want);
  });
});

describe("rollUp: recovery", () => {
  const rows: Row[] = [
    {
      name: "recursive: D FAILED, D.1 FAILED, D.1.1 COMPLETED → complete",
      steps: [reg("D", "FAILED"), reg("D.1", "FAILED"), reg("D.1.1", "COMPLETED"), review("PENDING")],
      want: { kind: "complete" },
    },
    {
      name: "recursive to the depth limit: D, D.1, D.1.1 FAILED, D.1.1.1 COMPLETED → complete",
      steps: [
        reg("D", "FAILED"),
        reg("D.1", "FAILED"),
        reg("D.1.1", "FAILED"),
        reg("D.1.1.1", "COMPLETED"),
        review("PENDING"),
      ],
      want: { kind: "complete" },
    },
    {
      name: "recursive, deepest attempt failed → fail naming the deepest failed leaf",
      steps: [reg("D", "FAILED"), reg("D.1", "FAILED"), reg("D.1.1", "FAILED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-D.1.1"] },
    },
    {
      name: "retry as a sibling: FAILED D.1 beside COMPLETED D.2 → fail naming D.1",
      steps: [reg("D", "FAILED"), reg("D.1", "FAILED"), reg("D.2", "COMPLETED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-D.1"] },
    },
    {
      name: "retry as a child: D.1 FAILED, D.1.1 COMPLETED → complete",
      steps: [reg("D", "FAILED"), reg("D.1", "FAILED"), reg("D.1.1", "COMPLETED"), review("PENDING")],
      want: { kind: "complete" },
    },
    {
      name: "a FAILED leaf with no children poisons the plan",
      steps: [reg("A", "COMPLETED"), reg("B", "COMPLETED"), reg("C", "FAILED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-C"] },
    },
    {
      name: "a COMPLETED step with a failed child is not sound → fail naming the child",
      steps: [reg("D", "COMPLETED"), reg("D.1", "FAILED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-D.1"] },
    },
    {
      name: "several unrecovered failures are all named, in step order",
      steps: [reg("A", "FAILED"), reg("B", "COMPLETED"), reg("C", "FAILED"), review("PENDING")],
      want: { kind: "fail", unrecovered: ["p-A", "p-C"] },
    },
    {
      name: "an open deviation child under a FAILED step → wait",
      steps: [reg("D", "FAILED"), reg("D.1", "IN_PROGRESS"), review("PENDING")],
      want: { kind: "wait" },
    },
    {
      name: "a recovered failure with a registered project still hands off",
      steps: [reg("D", "FAILED"), reg("D.1", "FAILED"), reg("D.1.1", "COMPLETED"), review("PENDING")],
      opts: openProject,
      want: { kind: "handoff" },
    },
    {
      name: "NEEDS_REVIEW + child COMPLETED but an unrecovered failure → fail",
      steps: [reg("D", "FAILED"), review("NEEDS_REVIEW"), reviewChild("COMPLETED")],
      opts: openProject,
      want: { kind: "fail", unrecovered: ["p-D"] },
    },
  ];

  it.each(rows)("$name", ({ steps, opts, want }) => {
    expect(rollUp(steps, opts ?? open)).toEqual(want);
  });
});

describe("rollUp: deviation children under the review step count as regular work", () => {
  const rows: Row[] = [
    {
      name: "PENDING child under the review → wait",
      steps: [reg("A", "COMPLETED"), review("PENDING"), underReview(1, "PENDING")],
      want: { kind: "wait" },
    },
    {
      name: "COMPLETED child under the review → complete",
      steps: [reg("A", "COMPLETED"), review("PENDING"), underReview(1, "COMPLETED")],
      want: { kind: "complete" },
    },
    {
      name: "FAILED child under the review → fail naming it",
      steps: [reg("A", "COMPLETED"), review("PENDING"), underReview(1, "FAILED")],
      want: { kind: "fail", unrecovered: ["p-REVIEW.1"] },
    },
    {
      name: "open child under a NEEDS_REVIEW review, tracked child COMPLETED → wait",
      steps: [
        reg("A", "COMPLETED"),
        review("NEEDS_REVIEW"),
        reviewChild("COMPLETED"),
        underReview(2, "IN_PROGRESS"),
      ],
      opts: openProject,
      want: { kind: "wait" },
    },
  ];

  it.each(rows)("$name", ({ steps, opts, want }) => {
    expect(rollUp(steps, opts ?? open)).toEqual(want);
  });
});

describe("rollUp: closed", () => {
  const rows: Row[] = [
    {
      name: "plan not open → closed",
      steps: [reg("A", "COMPLETED"), review("PENDING")],
      opts: { planOpen: false, hasProject: false },
      want: { kind: "closed" },
    },
    {
      name: "closed plan with open work → closed",
      steps: [reg("A", "PENDING"), review("PENDING")],
      opts: { planOpen: false, hasProject: true },
      want: { kind: "closed" },
    },
    {
      name: "no review step (legacy plan) → closed",
      steps: [reg("A", "COMPLETED")],
      want: { kind: "closed" },
    },
    {
      name: "review step already COMPLETED → closed",
      steps: [reg("A", "COMPLETED"), review("COMPLETED")],
      want: { kind: "closed" },
    },
    {
      name: "review step already FAILED → closed",
      steps: [reg("A", "FAILED"), review("FAILED")],
      want: { kind: "closed" },
    },
  ];

  it.each(rows)("$name", ({ steps, opts, want }) => {
    expect(rollUp(steps, opts ?? open)).toEqual(want);
  });
});

describe("isSound", () => {
  const kids = (steps: RollupStep[]) => {
    const m = new Map<string, RollupStep[]>();
    for (const s of steps)
      if (s.parent_step_id) m.set(s.parent_step_id, [...(m.get(s.parent_step_id) ?? []), s]);
    return m;
  };

  it.each([
    { name: "COMPLETED leaf", steps: [reg("A", "COMPLETED")], want: true },
    { name: "FAILED leaf", steps: [reg("A", "FAILED")], want: false },
    { name: "PENDING leaf", steps: [reg("A", "PENDING")], want: false },
    { name: "FAILED with COMPLETED child", steps: [reg("A", "FAILED"), reg("A.1", "COMPLETED")], want: true },
    {
      name: "FAILED with one FAILED and one COMPLETED child",
      steps: [reg("A", "FAILED"), reg("A.1", "FAILED"), reg("A.2", "COMPLETED")],
      want: false,
    },
  ])("$name → $want", ({ steps, want }) => {
    expect(isSound(steps[0]!, kids(steps))).toBe(want);
  });
});
