/** `finish-plan` (`ratchet plan finish`): Run a plan's close-out (or force-finish a partial plan); a closed plan is an idempotent no-op. */
import { ErrorCode, type Infer, obj, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { reviewStepId } from "../ids.js";
import { id } from "../inputs.js";
import { PlanStatus, StepRole, StepStatus } from "../states.js";

export const FinishInput = obj({ plan_id: id("plan") });
export type FinishInput = Infer<typeof FinishInput>;

export function finishPlan(l: LedgerCore, input: FinishInput) {
  return l.store.tx(() => {
    const plan = l.requirePlan(input.plan_id);
    if (plan.status === PlanStatus.Completed || plan.status === PlanStatus.Failed) {
      // The original's idempotent no-op: nothing written, the plan as it stands.
      const review = l.store.getStep(reviewStepId(plan.plan_id));
      return {
        ...plan,
        mode: "noop",
        plan_status: plan.status,
        completed_at: plan.finished_at,
        review_outcome: {
          reason: "review step already terminal (idempotent no-op)",
          review_status: review?.status ?? null,
        },
      };
    }
    if (plan.status !== PlanStatus.InProgress) {
      throw new RatchetError(ErrorCode.IllegalTransition, `plan ${plan.plan_id} is already ${plan.status}`, {
        planId: plan.plan_id,
        from: plan.status,
        breaker: "soft",
      });
    }
    const steps = l.store.stepsOfPlan(plan.plan_id);
    const review = steps.find((s) => s.role === StepRole.Review);
    if (review?.status === StepStatus.NeedsReview) {
      const child = steps.find((s) => s.role === StepRole.ReviewChild);
      throw new RatchetError(
        ErrorCode.AwaitsReview,
        `plan ${plan.plan_id} is in NEEDS_REVIEW — it awaits its agent review: complete or fail ${child?.step_id ?? review.step_id} (drive it, or \`ratchet plan review-close\`); finish-plan cannot force it`,
        { planId: plan.plan_id, review_step_id: review.step_id, review_child_step_id: child?.step_id },
      );
    }
    const open = steps.filter(
      (s) =>
        s.role === StepRole.Regular && s.status !== StepStatus.Completed && s.status !== StepStatus.Failed,
    );
    if (review && open.length === 0) {
      const rollup = l.rollUpPlan(plan.plan_id);
      return { plan_id: plan.plan_id, mode: "rollup", status: rollup.plan_status, ...rollup };
    }
    // Legacy plan without a review row, or a force-finish of a partial plan: plain completion.
    l.movePlan(plan, PlanStatus.Completed, {
      by: "finish",
      forced: open.length > 0,
      open_steps: open.map((s) => s.step_id),
    });
    return {
      plan_id: plan.plan_id,
      mode: review ? "forced" : "legacy",
      status: PlanStatus.Completed,
      plan_status: PlanStatus.Completed,
      open_steps: open.map((s) => s.step_id),
    };
  });
}

export const FINISH_PLAN_FLOW = defineFlow({
  op: "finish-plan",
  command: ["plan", "finish"],
  summary: "Run a plan's close-out (or force-finish a partial plan); a closed plan is an idempotent no-op.",
  input: FinishInput,
  example: { plan_id: "fix-login-20260101120000" },
  positional: "plan_id",
  refusals: [
    { code: ErrorCode.IllegalTransition, exit: 4, when: "the plan is ABANDONED" },
    { code: ErrorCode.AwaitsReview, exit: 7, when: "the plan is in NEEDS_REVIEW: drive <plan>-REVIEW.1" },
  ],
  result: [
    "plan_id",
    "mode",
    "status",
    "plan_status",
    "open_steps?",
    "completed_at? (no-op)",
    "review_outcome? (no-op)",
    "…roll-up keys",
  ],
  run: (l, i) => finishPlan(l, i),
});
