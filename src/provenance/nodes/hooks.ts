/**
 * The two ledger moments that take a run, called after the flow's transaction has committed so an
 * analysis never holds the ledger's write lock: the baseline at publish (trigger `publish`,
 * attributed to the plan, never part of its changed set) and the review refresh when
 * `<plan>-REVIEW.1` starts (trigger `review`). Neither ever fails its flow: an analysis error comes
 * back as a notice (publish) or a line in the step's log (start).
 */
import type { Store } from "../../store/index.js";
import { nodeSourceFor } from "./index.js";
import { BASELINE_TRIGGER } from "./source.js";

/** Whether `project` has a repository on disk the node source can read. */
function analysable(store: Store, project: string | null): project is string {
  if (!project || project === "none") return false;
  return Boolean(store.getProject(project)?.repo_path);
}

/**
 * The baseline run of a just-published registered-project plan. Returns the run id, or a notice
 * when the analysis failed (publish goes on either way); undefined when the plan has no repo.
 */
export async function baselineAtPublish(
  store: Store,
  plan: { plan_id: string; project: string | null },
): Promise<{ run_id?: number; notice?: string } | undefined> {
  if (!analysable(store, plan.project)) return undefined;
  try {
    const run = await nodeSourceFor(store).refresh(plan.project, {
      planId: plan.plan_id,
      trigger: BASELINE_TRIGGER,
    });
    return { run_id: run.id };
  } catch (err) {
    return { notice: `state graph baseline not taken: ${(err as Error).message}` };
  }
}

/**
 * The review refresh when a step that is a plan's `-REVIEW.1` (role `review_child`) starts.
 * Returns the run id, or the error line to log on the step (the start stands either way).
 */
export async function refreshAtReviewStart(
  store: Store,
  step: { step_id: string; plan_id: string; role: string },
): Promise<{ run_id?: number; log?: string } | undefined> {
  if (step.role !== "review_child") return undefined;
  const plan = store.getPlan(step.plan_id);
  if (!plan || !analysable(store, plan.project)) return undefined;
  try {
    const run = await nodeSourceFor(store).refresh(plan.project, {
      planId: plan.plan_id,
      stepId: step.step_id,
      trigger: "review",
    });
    return { run_id: run.id };
  } catch (err) {
    return {
      log: `[GRAPH] state graph refresh failed, review goes on without it: ${(err as Error).message}`,
    };
  }
}
