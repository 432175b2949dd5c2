/** `raise-budget` (`ratchet plan raise-budget`): Raise a plan's revision budget with a reason (recorded as a deviation). */
import { ErrorCode, type Infer, MAX_TEXT_CHARS, num, obj, RatchetError, str } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { id } from "../inputs.js";

export const RaiseBudgetInput = obj({
  plan_id: id("plan"),
  new_max: num({ int: true, min: 1, max: 1000, description: "the new ceiling, above the current one" }),
  reason: str({
    min: 1,
    max: MAX_TEXT_CHARS,
    description: "why more revisions are warranted (recorded as a deviation)",
  }),
});
export type RaiseBudgetInput = Infer<typeof RaiseBudgetInput>;

export function raiseBudget(l: LedgerCore, input: RaiseBudgetInput) {
  return l.store.tx(() => {
    const plan = l.requireOpenPlan(input.plan_id, "raise its budget");
    if (input.new_max <= plan.max_revisions) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `field \`new_max\`: ${input.new_max} must be above the current ceiling ${plan.max_revisions}`,
        { field: "new_max" },
      );
    }
    const now = l.now();
    const deviationId = l.store.insertDeviation({
      plan_id: plan.plan_id,
      kind: "raise_budget",
      parent_step_id: null,
      justification: l.redactor.redact(input.reason),
      sub_step_ids: null,
      old_max: plan.max_revisions,
      new_max: input.new_max,
      created_at: now,
    });
    l.store.updatePlan(plan.plan_id, { max_revisions: input.new_max });
    l.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanBudgetRaised,
      payload: {
        deviation_id: deviationId,
        old_max: plan.max_revisions,
        new_max: input.new_max,
        reason: l.redactor.redact(input.reason),
      },
    });
    return {
      raised: true,
      plan_id: plan.plan_id,
      old_max: plan.max_revisions,
      new_max: input.new_max,
      revision_count: plan.revision_count,
      deviation_id: deviationId,
    };
  });
}

export const RAISE_BUDGET_FLOW = defineFlow({
  op: "raise-budget",
  command: ["plan", "raise-budget"],
  summary: "Raise a plan's revision budget with a reason (recorded as a deviation).",
  input: RaiseBudgetInput,
  example: { plan_id: "fix-login-20260101120000", new_max: 8, reason: "the scope grew" },
  positional: "plan_id",
  refusals: [
    { code: ErrorCode.IllegalTransition, exit: 4, when: "the plan is closed" },
    { code: ErrorCode.InvalidValue, exit: 2, when: "`new_max` is not above the current ceiling" },
  ],
  result: ["raised", "plan_id", "old_max", "new_max", "revision_count", "deviation_id"],
  run: (l, i) => raiseBudget(l, i),
});
