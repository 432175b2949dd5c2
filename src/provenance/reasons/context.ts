/**
 * What reason-slots and reason-fill look up first, in the caller's transaction: the plan, its
 * project (registered), the node source (refused with `no_state_graph` when there is none), and
 * the reasons store.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import type { PlanRow, SqliteStore } from "../../store/index.js";
import { sqliteOf } from "../db.js";
import type { NodeSource } from "../types.js";
import { SqliteWordStore, type WordStore } from "../words/index.js";
import { nodeSourceFor } from "./node-source.js";
import { SqliteReasonStore } from "./store.js";

export interface ReasonContext {
  plan: PlanRow;
  project: string;
  nodes: NodeSource;
  reasons: SqliteReasonStore;
  /** The user's words and the references (the words area's store). */
  words: WordStore;
  sqlite: SqliteStore;
}

/** The message every `no_state_graph` refusal carries. */
export function noStateGraph(planId: string, project: string | null, why: string): RatchetError {
  return new RatchetError(
    ErrorCode.NoStateGraph,
    `plan ${planId}: no state graph for ${project ? `project ${project}` : "a plan without a project"} (${why}); reasons are recorded for registered projects with an analysed repo`,
    { planId, ...(project ? { project } : {}) },
  );
}

/**
 * The plan, its project and the node source.
 * @throws `plan_not_found` (3); `invalid_value` (2) when `project` is not the plan's;
 * `project_not_found` (3); `no_state_graph` (10) when the project has no node source.
 */
export function reasonContext(l: LedgerCore, planId: string, project: string | undefined): ReasonContext {
  const plan = l.requirePlan(planId);
  if (project !== undefined && plan.project !== null && project !== plan.project)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `field \`project\`: plan ${planId} belongs to project ${plan.project}, not ${project}`,
      { field: "project", planId },
    );
  const name = plan.project ?? project ?? null;
  if (name === null || name === "none")
    throw noStateGraph(planId, name, "the plan has no registered project");
  if (!l.store.getProject(name))
    throw new RatchetError(
      ErrorCode.ProjectNotFound,
      `field \`project\`: project ${name} is not registered`,
      {
        field: "project",
      },
    );
  const sqlite = sqliteOf(l.store);
  const nodes = nodeSourceFor(sqlite);
  if (!nodes.hasGraph(name)) throw noStateGraph(planId, name, "never analysed");
  return {
    plan,
    project: name,
    nodes,
    reasons: new SqliteReasonStore(sqlite),
    words: new SqliteWordStore(sqlite.db),
    sqlite,
  };
}
