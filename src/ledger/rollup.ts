/**
 * The deterministic review roll-up (`review_and_complete`), pure.
 *
 * Given every step of a plan, it decides what happens to the review step and the plan after a
 * non-review transition. Decision table (executing-plans spec, with specs/README.md corrections):
 *
 * | regular steps                                   | review step                 | plan        |
 * |-------------------------------------------------|-----------------------------|-------------|
 * | any PENDING / IN_PROGRESS / NEEDS_REVIEW        | stays                       | stays       |
 * | all terminal, every failure recovered           | COMPLETED                   | COMPLETED   |
 * | … and the plan belongs to a registered project  | NEEDS_REVIEW + `-REVIEW.1`  | stays       |
 * | all terminal, a failure unrecovered             | FAILED                      | FAILED      |
 * | review NEEDS_REVIEW, tracked child COMPLETED    | COMPLETED                   | COMPLETED   |
 * | review NEEDS_REVIEW, tracked child FAILED       | FAILED                      | FAILED      |
 * | … the child's retries (deviation) all COMPLETED | COMPLETED                   | COMPLETED   |
 *
 * Recovery: a FAILED step is recovered when it has children and every child is itself sound —
 * recursively. A COMPLETED step is sound when all of its children are sound. So a retry is a child
 * of the attempt it retries: a FAILED `D.1` beside a COMPLETED `D.2` keeps `D` unrecovered.
 */
import { StepRole, StepStatus } from "./states.js";

export interface RollupStep {
  step_id: string;
  parent_step_id: string | null;
  role: string;
  status: string;
}

export type RollupDecision =
  /** Work is still open (or the hand-off is awaiting its child): nothing to do. */
  | { kind: "wait" }
  /** Close review and plan as COMPLETED (`recovered`: the failed tracked child was recovered by its retries). */
  | { kind: "complete"; recovered?: string }
  /** Close review and plan as FAILED, naming the unrecovered steps. */
  | { kind: "fail"; unrecovered: string[] }
  /** Registered-project plan: review → NEEDS_REVIEW, create the tracked child, revision +1. */
  | { kind: "handoff" }
  /** The plan is already closed (or has no review step): nothing to do. */
  | { kind: "closed" };

export function rollUp(
  steps: readonly RollupStep[],
  opts: { planOpen: boolean; hasProject: boolean },
): RollupDecision {
  if (!opts.planOpen) return { kind: "closed" };
  const review = steps.find((s) => s.role === StepRole.Review);
  if (!review) return { kind: "closed" };
  if (review.status === StepStatus.Completed || review.status === StepStatus.Failed)
    return { kind: "closed" };

  const children = new Map<string, RollupStep[]>();
  for (const s of steps) {
    if (s.parent_step_id) {
      const list = children.get(s.parent_step_id) ?? [];
      list.push(s);
      children.set(s.parent_step_id, list);
    }
  }
  const regular = steps.filter((s) => s.role === StepRole.Regular);
  if (regular.some((s) => s.status !== StepStatus.Completed && s.status !== StepStatus.Failed))
    return { kind: "wait" };

  if (review.status === StepStatus.NeedsReview) {
    const child = steps.find((s) => s.role === StepRole.ReviewChild);
    if (!child) return { kind: "wait" };
    if (child.status === StepStatus.Completed) {
      const unrecovered = unrecoveredRoots(regular, children);
      return unrecovered.length ? { kind: "fail", unrecovered } : { kind: "complete" };
    }
    if (child.status === StepStatus.Failed) {
      // FL-019: a failed review re-opened by a deviation under the child closes once its retries did.
      if (!isSound(child, children)) return { kind: "fail", unrecovered: [child.step_id] };
      const unrecovered = unrecoveredRoots(regular, children);
      return unrecovered.length
        ? { kind: "fail", unrecovered }
        : { kind: "complete", recovered: child.step_id };
    }
    return { kind: "wait" };
  }

  const unrecovered = unrecoveredRoots(regular, children);
  if (unrecovered.length) return { kind: "fail", unrecovered };
  return opts.hasProject ? { kind: "handoff" } : { kind: "complete" };
}

/** Whether a step is sound (COMPLETED with sound children, or FAILED and recovered). */
export function isSound(step: RollupStep, children: ReadonlyMap<string, readonly RollupStep[]>): boolean {
  const kids = (children.get(step.step_id) ?? []).filter((c) => c.role === StepRole.Regular);
  if (step.status === StepStatus.Completed) return kids.every((c) => isSound(c, children));
  if (step.status === StepStatus.Failed) return kids.length > 0 && kids.every((c) => isSound(c, children));
  return false;
}

/** FAILED regular steps that are not recovered and whose ancestors do not cover them. */
function unrecoveredRoots(
  regular: readonly RollupStep[],
  children: ReadonlyMap<string, readonly RollupStep[]>,
): string[] {
  const regularIds = new Set(regular.map((s) => s.step_id));
  // Roots: regular steps whose parent is not a regular step (top level, or under the review step).
  const roots = regular.filter((s) => !s.parent_step_id || !regularIds.has(s.parent_step_id));
  const bad: string[] = [];
  const walk = (s: RollupStep): void => {
    if (isSound(s, children)) return;
    const kids = (children.get(s.step_id) ?? []).filter((c) => c.role === StepRole.Regular);
    const badKids = kids.filter((k) => !isSound(k, children));
    if (s.status === StepStatus.Failed && kids.length === 0) bad.push(s.step_id);
    else if (badKids.length === 0) bad.push(s.step_id);
    else for (const k of badKids) walk(k);
  };
  for (const r of roots) walk(r);
  return bad;
}
