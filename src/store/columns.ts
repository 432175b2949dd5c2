/** The column lists both stores insert, one place (the wire names of `PlanRow` and `StepRow`). */
/** The plan columns an insert writes (every `PlanRow` field), in table order. */
export const PLAN_COLUMNS = [
  "plan_id",
  "goal",
  "kind",
  "project",
  "project_source",
  "status",
  "revision_count",
  "max_revisions",
  "source_cwd",
  "created_at",
  "updated_at",
  "finished_at",
  "user_query",
  "abandon_reason",
  "review_state",
  "review_skip_reason",
  "extensions",
] as const;

/** The step columns an insert writes (every `StepRow` field), in table order. */
export const STEP_COLUMNS = [
  "step_id",
  "plan_id",
  "parent_step_id",
  "seq",
  "role",
  "depth",
  "title",
  "description",
  "type",
  "status",
  "summary",
  "agent_input",
  "agent_output",
  "failure_reason",
  "exit_code",
  "tokens",
  "duration_ms",
  "lease_holder",
  "lease_expires_at",
  "heartbeat_at",
  "started_at",
  "finished_at",
  "created_at",
  "updated_at",
] as const;

/**
 * The step columns `Store.stepForMove` reads, in this order: what a guarded move checks and writes
 * from (types.ts `MoveStepRow`), not the whole row.
 */
export const MOVE_STEP_COLUMNS = ["step_id", "plan_id", "status", "type", "role", "started_at"] as const;
