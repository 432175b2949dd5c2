/**
 * Which write actions the dashboard offers, mirroring the ledger's and the runs' state machines so
 * a button appears only where the move is legal. Pure (tested in test/web/allowed.test.ts). The
 * server still decides: a refusal (a breaker, a race with another writer) is shown as its message.
 */
// biome-ignore lint/suspicious/noExplicitAny: JSON from the API is read field by field
type Json = any;

/** The ledger's deepest sub-step (core's MAX_DEPTH). */
export const MAX_STEP_DEPTH = 3;

/** Plan kinds whose steps a workflow or builder run executes: they are re-run, not retried. */
const RUN_PLAN_KINDS = new Set(["workflow_run", "builder_run"]);

/**
 * Retry a FAILED step (a `deviate` with one retry sub-step): the deviate flow takes retries under a
 * FAILED step of an open plan, or of a FAILED plan (which re-opens it), never under the `-REVIEW`
 * step, within the revision budget and the depth limit, and only while no retry is already open
 * or done.
 */
export function canRetry(plan: Json, step: Json, steps: readonly Json[]): boolean {
  if (step.status !== "FAILED" || step.role === "review") return false;
  if (RUN_PLAN_KINDS.has(plan.kind)) return false;
  if (plan.status !== "IN_PROGRESS" && plan.status !== "FAILED") return false;
  if (plan.revision_count >= plan.max_revisions) return false;
  if ((step.depth ?? 0) + 1 > MAX_STEP_DEPTH) return false;
  return !steps.some((s) => s.parent_step_id === step.step_id && s.status !== "FAILED");
}

/** Close the review (`agent-review-close`): an open plan whose `-REVIEW` step is NEEDS_REVIEW. */
export function canCloseReview(plan: Json, steps: readonly Json[]): boolean {
  if (plan.status !== "IN_PROGRESS" || plan.review_state !== "awaiting_agent") return false;
  return steps.some((s) => s.role === "review" && s.status === "NEEDS_REVIEW");
}

/** Re-run a run: one that ended without passing. */
export function canRerun(run: Json): boolean {
  return ["failed", "interrupted", "cancelled"].includes(run.status);
}
