/**
 * What reason-slots and reason-fill look up first, in the caller's transaction: the plan, its
 * project (registered), the node source (refused with `no_state_graph` when there is none), and
 * the reasons store.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import type { PlanRow, Store } from "../../store/index.js";
import type { NodeSource } from "../types.js";
import { SqlWordStore, type WordStore } from "../words/index.js";
import { nodeSourceFor } from "./node-source.js";
import { SqlReasonStore } from "./store.js";

export interface ReasonContext {
  plan: PlanRow;
  project: string;
  nodes: NodeSource;
  reasons: SqlReasonStore;
  /** The user's words and the references (the words area's store). */
  words: WordStore;
  store: Store;
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
  const store = l.store;
  const nodes = nodeSourceFor(store);
  if (!nodes.hasGraph(name)) throw noStateGraph(planId, name, "never analysed");
  return {
    plan,
    project: name,
    nodes,
    reasons: new SqlReasonStore(store),
    words: new SqlWordStore(store),
    store,
  };
}
