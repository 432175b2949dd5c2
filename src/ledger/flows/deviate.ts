/** `deviate` (`ratchet step deviate`): Add sub-steps under a step (one revision); a FAILED step of a FAILED plan takes retries that re-open it. */
import {
  arr,
  ErrorCode,
  type Infer,
  MAX_DEPTH,
  MAX_STEPS_PER_PLAN,
  MAX_TEXT_CHARS,
  obj,
  RatchetError,
  str,
} from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { childStepId, reviewStepId } from "../ids.js";
import { id, StepSpecInput } from "../inputs.js";
import { PlanStatus, StepRole, StepStatus } from "../states.js";

export const DeviateInput = obj({
  parent_step_id: id("step the new sub-steps hang under"),
  justification: str({ min: 1, max: MAX_TEXT_CHARS, description: "why the plan changes" }),
  sub_steps: arr(StepSpecInput, {
    min: 1,
    max: MAX_STEPS_PER_PLAN,
    description: "new sub-steps: strings, {description, type?|step_type?} or {title, type?}",
  }),
});
export type DeviateInput = Infer<typeof DeviateInput>;

export function deviate(l: LedgerCore, input: DeviateInput) {
  return l.store.tx(() => {
    const parent = l.requireStep(input.parent_step_id, "parent_step_id");
    const found = l.requirePlan(parent.plan_id);
    // The recovery path (FL-019/FL-022): a FAILED step of a FAILED plan takes retries, which
    // re-open the plan; every other write to a closed plan is refused.
    const recovering =
      found.status === PlanStatus.Failed &&
      parent.status === StepStatus.Failed &&
      parent.role !== StepRole.Review;
    const plan = recovering ? found : l.requireOpenPlan(parent.plan_id, `deviate under ${parent.step_id}`);
    if (parent.status === StepStatus.Completed) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `deviate rejected: step ${parent.step_id} is COMPLETED (immutable) (breaker=soft): attach the retry to the next non-terminal step or to the review step ${reviewStepId(plan.plan_id)}`,
        { stepId: parent.step_id, breaker: "soft", field: "parent_step_id" },
      );
    }
    const depth = parent.depth + 1;
    if (depth > MAX_DEPTH) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `deviation under ${parent.step_id} would reach depth ${depth} (limit ${MAX_DEPTH}): restructure the plan instead of nesting deeper`,
        { stepId: parent.step_id, breaker: "soft", depth },
      );
    }
    if (plan.revision_count >= plan.max_revisions) {
      throw new RatchetError(
        ErrorCode.RevisionBudget,
        `plan ${plan.plan_id} used its revision budget (${plan.revision_count}/${plan.max_revisions}): raise it with \`ratchet plan raise-budget\` and a reason`,
        {
          planId: plan.plan_id,
          breaker: "hard",
          revision_count: plan.revision_count,
          max_revisions: plan.max_revisions,
        },
      );
    }
    if (recovering) {
      const review = l.store.getStep(reviewStepId(plan.plan_id));
      l.reopen(
        plan,
        review,
        parent.role === StepRole.ReviewChild ? StepStatus.NeedsReview : StepStatus.Pending,
        { by: "deviate", parent_step_id: parent.step_id },
      );
    }
    const now = l.now();
    const existing = l.store.childrenOf(parent.step_id);
    let seq = existing.reduce((m, s) => Math.max(m, s.seq), 0);
    // `<plan>-REVIEW.1` is reserved for the tracked child of the hand-off.
    if (parent.role === StepRole.Review) seq = Math.max(seq, 1);
    const ids: string[] = [];
    for (const s of input.sub_steps) {
      seq++;
      const row = l.newStepRow(
        plan.plan_id,
        childStepId(parent.step_id, seq),
        parent.step_id,
        seq,
        depth,
        s,
        now,
      );
      l.store.insertStep(row);
      ids.push(row.step_id);
    }
    const revision = plan.revision_count + 1;
    l.store.updatePlan(plan.plan_id, { revision_count: revision });
    const deviationId = l.store.insertDeviation({
      plan_id: plan.plan_id,
      kind: "deviate",
      parent_step_id: parent.step_id,
      justification: l.redactor.redact(input.justification),
      sub_step_ids: JSON.stringify(ids),
      old_max: null,
      new_max: null,
      created_at: now,
    });
    l.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanDeviated,
      payload: {
        deviation_id: deviationId,
        parent_step_id: parent.step_id,
        sub_step_ids: ids,
        revision_count: revision,
      },
    });
    return {
      accepted: true,
      plan_id: plan.plan_id,
      parent_step_id: parent.step_id,
      sub_step_ids: ids,
      /** The original's name for `sub_step_ids`. */
      new_step_ids: ids,
      justification_logged: true,
      ...(recovering ? { reopened: true } : {}),
      depth,
      revision_count: revision,
      max_revisions: plan.max_revisions,
      deviation_id: deviationId,
    };
  });
}

export const DEVIATE_FLOW = defineFlow({
  op: "deviate",
  command: ["step", "deviate"],
  summary:
    "Add sub-steps under a step (one revision); a FAILED step of a FAILED plan takes retries that re-open it.",
  input: DeviateInput,
  example: {
    parent_step_id: "fix-login-20260101120000-B",
    justification: "the fix needs a migration",
    sub_steps: ["Write the migration"],
  },
  positional: "parent_step_id",
  refusals: [
    { code: ErrorCode.IllegalTransition, exit: 4, when: "the plan is closed (other than the recovery path)" },
    {
      code: ErrorCode.SoftBreaker,
      exit: 4,
      when: "the parent is COMPLETED (immutable) or the depth would pass 3",
    },
    {
      code: ErrorCode.RevisionBudget,
      exit: 6,
      when: "revision_count reached max_revisions: raise-budget first",
    },
  ],
  result: [
    "accepted",
    "plan_id",
    "parent_step_id",
    "sub_step_ids",
    "new_step_ids",
    "justification_logged",
    "reopened?",
    "depth",
    "revision_count",
    "max_revisions",
    "deviation_id",
  ],
  run: (l, i) => deviate(l, i),
});
