import type { SqlPort } from "./sql.js";

/**
 * Rows of the ledger and the `Store` contract every implementation keeps. Column names are the
 * wire names (snake_case) so rows serialise as-is into JSON results.
 */

export interface PlanRow {
  plan_id: string;
  goal: string;
  /** What created the plan: `plan` (published), `workflow_run`, `builder_run`, … */
  kind: string;
  project: string | null;
  /** How the project was found: `declared`, `repo`, or null. */
  project_source: string | null;
  status: string;
  revision_count: number;
  max_revisions: number;
  source_cwd: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** The verbatim prompt the plan answers (publish `user_query`). */
  user_query?: string | null;
  /** Why the plan was abandoned. */
  abandon_reason?: string | null;
  /** `awaiting_agent` once `<plan>-REVIEW.1` exists, `reviewed` at its close, `skipped` otherwise. */
  review_state?: string | null;
  /** Why a completed plan was not reviewed (no project, `none`). */
  review_skip_reason?: string | null;
  /** The original's extension keys as given (`declared_targets`, `expectations`, `headline_notes`), JSON. */
  extensions?: string | null;
}

export interface StepRow {
  step_id: string;
  plan_id: string;
  parent_step_id: string | null;
  /** Order among the siblings under the same parent (1-based). */
  seq: number;
  /** `regular`, `review` (the `<plan>-REVIEW` step) or `review_child` (its tracked `<plan>-REVIEW.1`). */
  role: string;
  depth: number;
  title: string;
  description: string | null;
  type: string;
  status: string;
  summary: string | null;
  agent_input: string | null;
  agent_output: string | null;
  failure_reason: string | null;
  exit_code: number | null;
  tokens: number;
  duration_ms: number | null;
  lease_holder: string | null;
  /** Lease expiry in epoch milliseconds. */
  lease_expires_at: number | null;
  heartbeat_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface StepLogRow {
  id: number;
  step_id: string;
  plan_id: string;
  at: string;
  kind: string;
  /** The display text: whole when short, else head + marker + tail. */
  text: string;
  /** Size of the full text in UTF-8 bytes. */
  bytes: number;
  truncated: number;
  /** Hash of the full text when it was cut. */
  blob: string | null;
}

export interface DeviationRow {
  id: number;
  plan_id: string;
  kind: string;
  parent_step_id: string | null;
  justification: string;
  sub_step_ids: string | null;
  old_max: number | null;
  new_max: number | null;
  created_at: string;
}

export interface SkillRow {
  id: number;
  plan_id: string;
  step_id: string | null;
  name: string;
  source: string;
  reason: string | null;
  created_at: string;
}

export interface MetricRow {
  id: number;
  name: string;
  value: number;
  unit: string | null;
  project: string | null;
  plan_id: string | null;
  step_id: string | null;
  created_at: string;
  /** Who recorded it: `record-metric` (the op) or `run-step` (stdout capture). */
  source?: string | null;
}

export interface ProjectRow {
  name: string;
  repo_path: string | null;
  created_at: string;
}

export interface EventRow {
  id: number;
  at: string;
  entity_kind: string;
  entity_id: string;
  plan_id: string | null;
  type: string;
  payload: string;
}

export interface NewEvent {
  entityKind: string;
  entityId: string;
  planId?: string | null;
  type: string;
  payload?: Record<string, unknown>;
}

export interface EventQuery {
  /** Only events with an id above this. */
  since?: number;
  planId?: string;
  entityKind?: string;
  entityId?: string;
  limit?: number;
}

export interface PlanQuery {
  status?: string;
  kind?: string;
  limit?: number;
  /** Only plans created before this plan (keyset pagination by created_at, plan_id). */
  before?: { created_at: string; plan_id: string };
}

/** Columns a write may change on a plan. */
export type PlanPatch = Partial<Omit<PlanRow, "plan_id" | "created_at">>;
/** Columns a write may change on a step. */
export type StepPatch = Partial<Omit<StepRow, "step_id" | "plan_id" | "created_at">>;

/** A step's row narrowed to the columns a guarded move checks (columns.ts `MOVE_STEP_COLUMNS`). */
export type MoveStepRow = Pick<StepRow, "step_id" | "plan_id" | "status" | "type" | "role" | "started_at">;

/** A step's place and state in its plan: what the roll-up decides from ({@link Store.stepStatesOfPlan}). */
export type StepStateRow = Pick<StepRow, "step_id" | "parent_step_id" | "role" | "status">;

/**
 * A step read with what a transition of it checks, in one statement ({@link Store.stepForMove}).
 * `othersOpen` and `reviewStatus` are read only when asked (`rollup`): what the roll-up's cheap exit
 * needs after the step leaves the open states (complete, fail), read before the step's own write.
 */
export interface StepForMove {
  /** The columns a move checks and writes from (not the whole row: callers needing it use `getStep`). */
  step: MoveStepRow;
  /** The status of the step's plan (undefined: no plan row). */
  planStatus: string | undefined;
  /** With `rollup`: whether a non-review step of the plan other than this one is open. */
  othersOpen: boolean;
  /** With `rollup`: the status of the plan's review step `<plan>-REVIEW` (undefined: none). */
  reviewStatus: string | undefined;
}

/**
 * The store contract. Reads may run anywhere; writes run inside {@link Store.tx}, which holds the
 * database write lock (`BEGIN IMMEDIATE`) so a change and its event commit together or not at all.
 */
export interface Store {
  /**
   * The SQL door for area stores beside the ledger (threads, provenance, server queries): portable
   * statements in SQLite's placeholder syntax, run on this store's connection and inside its `tx`.
   */
  readonly sql: SqlPort;
  /** Runs `fn` in one write transaction. Nested calls join the outer transaction. */
  tx<T>(fn: () => T): T;
  appendEvent(e: NewEvent): number;
  listEvents(q: EventQuery): EventRow[];
  lastEventId(): number;

  insertPlan(p: PlanRow): void;
  getPlan(planId: string): PlanRow | undefined;
  updatePlan(planId: string, patch: PlanPatch): void;
  listPlans(q: PlanQuery): PlanRow[];

  insertStep(s: StepRow): void;
  getStep(stepId: string): StepRow | undefined;
  updateStep(stepId: string, patch: StepPatch): void;
  stepsOfPlan(planId: string): StepRow[];
  /** `stepsOfPlan` narrowed to {@link StepStateRow}'s columns, in the same order. */
  stepStatesOfPlan(planId: string): StepStateRow[];
  childrenOf(stepId: string): StepRow[];
  /** Non-review steps of a plan not yet terminal (PENDING, IN_PROGRESS, NEEDS_REVIEW). */
  countOpenSteps(planId: string): number;
  /**
   * The roll-up's cheap exit: whether `countOpenSteps(planId) > 0`, stopping at the first open
   * step; a step's and a plan's status alone (no whole-row read).
   */
  hasOpenSteps(planId: string): boolean;
  stepStatus(stepId: string): string | undefined;
  planStatus(planId: string): string | undefined;
  /**
   * The step, its plan's status and (with `rollup`) the roll-up's cheap-exit reads, in one
   * statement: `getStep` + `planStatus` (+ `hasOpenSteps` of the plan but this step, + `stepStatus`
   * of `<plan>-REVIEW`). Undefined when the step does not exist.
   */
  stepForMove(stepId: string, rollup: boolean): StepForMove | undefined;
  /** Clears the leases still held by steps of a plan (called when the plan closes). */
  releaseLeases(planId: string): number;
  /** IN_PROGRESS steps whose lease expired before `nowMs`. */
  expiredLeases(nowMs: number, planId?: string): StepRow[];

  insertLog(l: Omit<StepLogRow, "id">): number;
  logsOfStep(stepId: string): StepLogRow[];
  logsOfPlan(planId: string): StepLogRow[];

  insertDeviation(d: Omit<DeviationRow, "id">): number;
  deviationsOfPlan(planId: string): DeviationRow[];
  insertSkill(s: Omit<SkillRow, "id">): number;
  skillsOfPlan(planId: string): SkillRow[];
  insertMetric(m: Omit<MetricRow, "id">): number;
  metricsOfPlan(planId: string): MetricRow[];

  addProject(p: ProjectRow): void;
  getProject(name: string): ProjectRow | undefined;
  projectForRepo(repoPath: string): ProjectRow | undefined;
  listProjects(): ProjectRow[];

  /** Runs `PRAGMA integrity_check`; returns "ok" when the file is sound. */
  integrityCheck(): string;
  close(): void;
  /**
   * Why the store's session is unusable for good (PostgreSQL: the bridge broke, the connection is
   * lost), or undefined while it works. A SQLite store has no session to lose (undefined).
   */
  readonly broken?: string | undefined;
}
