/** `abandon-plan` (`ratchet plan abandon`): Put down a plan nobody started; the reason is kept on the plan and as an [ABANDONED] deviation. */
import { ErrorCode, type Infer, MAX_TEXT_CHARS, obj, RatchetError, str } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id } from "../inputs.js";
import { PlanStatus, StepStatus } from "../states.js";

export const AbandonInput = obj({
  plan_id: id("plan"),
  reason: str({ min: 1, max: MAX_TEXT_CHARS, description: "why the plan is put down (kept on the plan)" }),
});
export type AbandonInput = Infer<typeof AbandonInput>;

export function abandonPlan(l: LedgerCore, input: AbandonInput) {
  return l.store.tx(() => {
    const plan = l.requireOpenPlan(input.plan_id, "abandon it");
    const started = l.store.stepsOfPlan(plan.plan_id).filter((s) => s.status !== StepStatus.Pending);
    if (started.length > 0) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `plan ${plan.plan_id} has started steps (${started.map((s) => `${s.step_id} ${s.status}`).join(", ")}): only a plan nobody started can be abandoned; fail its steps or finish it`,
        { planId: plan.plan_id, breaker: "soft" },
      );
    }
    const reason = l.redactor.redact(input.reason);
    const deviationId = l.store.insertDeviation({
      plan_id: plan.plan_id,
      kind: "abandon",
      parent_step_id: null,
      justification: `[ABANDONED] ${reason}`,
      sub_step_ids: null,
      old_max: null,
      new_max: null,
      created_at: l.now(),
    });
    l.store.updatePlan(plan.plan_id, { abandon_reason: reason });
    l.movePlan(plan, PlanStatus.Abandoned, { reason, deviation_id: deviationId });
    return {
      plan_id: plan.plan_id,
      status: PlanStatus.Abandoned,
      reason: input.reason,
      deviation_id: deviationId,
      revision_count: plan.revision_count,
    };
  });
}

export const ABANDON_PLAN_FLOW = defineFlow({
  op: "abandon-plan",
  command: ["plan", "abandon"],
  summary: "Put down a plan nobody started; the reason is kept on the plan and as an [ABANDONED] deviation.",
  input: AbandonInput,
  example: { plan_id: "fix-login-20260101120000", reason: "published by mistake" },
  positional: "plan_id",
  refusals: [
    { code: ErrorCode.IllegalTransition, exit: 4, when: "the plan is closed" },
    { code: ErrorCode.SoftBreaker, exit: 4, when: "a step was started (named)" },
  ],
  result: ["plan_id", "status", "reason", "deviation_id", "revision_count"],
  run: (l, i) => abandonPlan(l, i),
});
