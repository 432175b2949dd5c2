/**
 * Event types the ledger writes to the one event log. Pinned by `events.test.ts`: a rename is a
 * change of the wire contract (`ratchet events`, SSE, the dashboard).
 */
export const LedgerEvent = {
  PlanPublished: "plan.published",
  PlanCompleted: "plan.completed",
  PlanFailed: "plan.failed",
  PlanAbandoned: "plan.abandoned",
  PlanNeedsReview: "plan.needs_review",
  PlanReopened: "plan.reopened",
  PlanDeviated: "plan.deviated",
  PlanSkillRecorded: "plan.skill_recorded",
  PlanBudgetRaised: "plan.budget_raised",
  StepInProgress: "step.in_progress",
  StepNeedsReview: "step.needs_review",
  StepCompleted: "step.completed",
  StepFailed: "step.failed",
  StepReopened: "step.reopened",
  StepRunStarted: "step.run_started",
  StepLogAppended: "step.log_appended",
  StepHeartbeat: "step.heartbeat",
  MetricRecorded: "metric.recorded",
  PlanHeadline: "plan.headline",
  PlanHeadlineResponded: "plan.headline_responded",
  /** reason-fill recorded answers (payload: counts and reason ids). */
  ReasonsFilled: "reasons.filled",
  /** The close wrote its reasons (payload: close_mode and what each rule and the backstop wrote). */
  ReasonsClosed: "reasons.closed",
  UtteranceRecorded: "utterance.recorded",
  ReferenceAdded: "reference.added",
  ReferenceChecked: "reference.checked",
} as const;
export type LedgerEvent = (typeof LedgerEvent)[keyof typeof LedgerEvent];

/** The event of a step moving to `status` (`IN_PROGRESS` → `step.in_progress`). */
export const STEP_MOVE_EVENT: Readonly<Record<string, LedgerEvent>> = {
  PENDING: LedgerEvent.StepReopened,
  IN_PROGRESS: LedgerEvent.StepInProgress,
  NEEDS_REVIEW: LedgerEvent.StepNeedsReview,
  COMPLETED: LedgerEvent.StepCompleted,
  FAILED: LedgerEvent.StepFailed,
};

/** The event of a plan moving to `status`. */
export const PLAN_MOVE_EVENT: Readonly<Record<string, LedgerEvent>> = {
  IN_PROGRESS: LedgerEvent.PlanReopened,
  COMPLETED: LedgerEvent.PlanCompleted,
  FAILED: LedgerEvent.PlanFailed,
  ABANDONED: LedgerEvent.PlanAbandoned,
};
