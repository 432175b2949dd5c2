/** Which actions the dashboard offers: the ledger's and the runs' rules, and where they stop. */
import { describe, expect, it } from "vitest";
import { canCloseReview, canRerun, canRetry } from "../../web/src/allowed.js";

const plan = (o: Record<string, unknown> = {}) => ({
  plan_id: "p",
  kind: "plan",
  status: "IN_PROGRESS",
  revision_count: 0,
  max_revisions: 5,
  review_state: null,
  ...o,
});
const step = (o: Record<string, unknown> = {}) => ({
  step_id: "p-A",
  parent_step_id: null,
  role: "regular",
  depth: 0,
  status: "FAILED",
  ...o,
});

describe("canRetry", () => {
  it("offers a retry of a FAILED step of an open or FAILED plan", () => {
    expect(canRetry(plan(), step(), [step()])).toBe(true);
    expect(canRetry(plan({ status: "FAILED" }), step(), [step()])).toBe(true);
  });
  it("not for a step that did not fail, the -REVIEW step, a closed or run plan", () => {
    for (const status of ["PENDING", "IN_PROGRESS", "COMPLETED", "NEEDS_REVIEW"])
      expect(canRetry(plan(), step({ status }), [])).toBe(false);
    expect(canRetry(plan(), step({ role: "review" }), [])).toBe(false);
    expect(canRetry(plan({ status: "COMPLETED" }), step(), [])).toBe(false);
    expect(canRetry(plan({ status: "ABANDONED" }), step(), [])).toBe(false);
    expect(canRetry(plan({ kind: "workflow_run" }), step(), [])).toBe(false);
    expect(canRetry(plan({ kind: "builder_run" }), step(), [])).toBe(false);
  });
  it("not past the revision budget or the depth limit", () => {
    expect(canRetry(plan({ revision_count: 5 }), step(), [])).toBe(false);
    expect(canRetry(plan(), step({ depth: 3 }), [])).toBe(false);
    expect(canRetry(plan(), step({ depth: 2 }), [])).toBe(true);
  });
  it("not while a retry is open or done; again once every retry failed", () => {
    const kid = (status: string) => ({ step_id: "p-A.1", parent_step_id: "p-A", status });
    expect(canRetry(plan(), step(), [step(), kid("PENDING")])).toBe(false);
    expect(canRetry(plan(), step(), [step(), kid("IN_PROGRESS")])).toBe(false);
    expect(canRetry(plan(), step(), [step(), kid("COMPLETED")])).toBe(false);
    expect(canRetry(plan(), step(), [step(), kid("FAILED")])).toBe(true);
  });
});

describe("canCloseReview", () => {
  const review = (status: string) => ({ step_id: "p-REVIEW", role: "review", status });
  it("offers the close on an open plan awaiting review whose -REVIEW step is NEEDS_REVIEW", () => {
    expect(canCloseReview(plan({ review_state: "awaiting_agent" }), [review("NEEDS_REVIEW")])).toBe(true);
  });
  it("not before the hand-off, after the close, or on a closed plan", () => {
    expect(canCloseReview(plan({ review_state: null }), [review("NEEDS_REVIEW")])).toBe(false);
    expect(canCloseReview(plan({ review_state: "reviewed" }), [review("COMPLETED")])).toBe(false);
    expect(canCloseReview(plan({ review_state: "awaiting_agent" }), [review("PENDING")])).toBe(false);
    expect(
      canCloseReview(plan({ status: "FAILED", review_state: "awaiting_agent" }), [review("NEEDS_REVIEW")]),
    ).toBe(false);
  });
});

describe("canRerun", () => {
  it("offers a re-run of a run that ended without passing", () => {
    for (const status of ["failed", "interrupted", "cancelled"]) expect(canRerun({ status })).toBe(true);
    for (const status of ["running", "passed"]) expect(canRerun({ status })).toBe(false);
  });
});
