/**
 * The plan and step state machines as data. Nothing else in Ratchet assigns a status: every move
 * goes through {@link checkStepMove} / {@link checkPlanMove}, which throw the typed
 * `illegal_transition` error naming both states. Pinned by states.test.ts.
 */
import { ErrorCode, RatchetError } from "../core/index.js";

export const StepStatus = {
  /** Published, not started. */
  Pending: "PENDING",
  /** Started by an agent that holds its lease. */
  InProgress: "IN_PROGRESS",
  /** Waiting for an agent review (only the review step uses it). */
  NeedsReview: "NEEDS_REVIEW",
  /** Done. Immutable. */
  Completed: "COMPLETED",
  /** Failed. Terminal: recovery goes through deviation children, never by re-opening. */
  Failed: "FAILED",
} as const;
export type StepStatus = (typeof StepStatus)[keyof typeof StepStatus];

export const PlanStatus = {
  InProgress: "IN_PROGRESS",
  Completed: "COMPLETED",
  Failed: "FAILED",
  /** Put down before anything started. */
  Abandoned: "ABANDONED",
} as const;
export type PlanStatus = (typeof PlanStatus)[keyof typeof PlanStatus];

export const StepType = {
  Command: "COMMAND",
  Code: "CODE",
  Test: "TEST",
  Thinking: "THINKING",
  Documentation: "DOCUMENTATION",
  Analysis: "ANALYSIS",
  SubAgent: "SUB_AGENT",
} as const;
export type StepType = (typeof StepType)[keyof typeof StepType];
export const STEP_TYPES: readonly StepType[] = Object.values(StepType);

/** Roles a step plays in its plan. */
export const StepRole = {
  Regular: "regular",
  /** The `<plan>-REVIEW` step, flipped only by the roll-up and review-close. */
  Review: "review",
  /** The tracked `<plan>-REVIEW.1` child created at the NEEDS_REVIEW hand-off. */
  ReviewChild: "review_child",
} as const;
export type StepRole = (typeof StepRole)[keyof typeof StepRole];

/** Allowed step moves. */
export const STEP_TRANSITIONS: Readonly<Record<StepStatus, readonly StepStatus[]>> = {
  PENDING: ["IN_PROGRESS", "NEEDS_REVIEW"],
  IN_PROGRESS: ["COMPLETED", "FAILED"],
  NEEDS_REVIEW: ["COMPLETED", "FAILED"],
  COMPLETED: [],
  FAILED: [],
};

/** Allowed plan moves. */
export const PLAN_TRANSITIONS: Readonly<Record<PlanStatus, readonly PlanStatus[]>> = {
  IN_PROGRESS: ["COMPLETED", "FAILED", "ABANDONED"],
  COMPLETED: [],
  FAILED: [],
  ABANDONED: [],
};

export function isTerminalStep(s: string): boolean {
  return s === StepStatus.Completed || s === StepStatus.Failed;
}

/** Throws `illegal_transition` unless `from → to` is in the step table. */
export function checkStepMove(stepId: string, from: string, to: StepStatus): void {
  const allowed = (STEP_TRANSITIONS as Record<string, readonly string[]>)[from] ?? [];
  if (!allowed.includes(to)) {
    const hint =
      from === StepStatus.Completed
        ? " (COMPLETED is immutable)"
        : from === StepStatus.Failed
          ? " (FAILED is terminal: recover through a deviation child)"
          : from === StepStatus.Pending && (to === StepStatus.Completed || to === StepStatus.Failed)
            ? " (start it first)"
            : "";
    throw new RatchetError(
      ErrorCode.IllegalTransition,
      `step ${stepId} cannot move from ${from} to ${to}${hint}`,
      {
        stepId,
        from,
        to,
        breaker: "soft",
      },
    );
  }
}

/** Throws `illegal_transition` unless `from → to` is in the plan table. */
export function checkPlanMove(planId: string, from: string, to: PlanStatus): void {
  const allowed = (PLAN_TRANSITIONS as Record<string, readonly string[]>)[from] ?? [];
  if (!allowed.includes(to)) {
    throw new RatchetError(ErrorCode.IllegalTransition, `plan ${planId} cannot move from ${from} to ${to}`, {
      planId,
      from,
      to,
      breaker: "soft",
    });
  }
}
