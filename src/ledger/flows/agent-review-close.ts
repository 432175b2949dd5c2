/** `agent-review-close` (`ratchet plan review-close`): Close a plan that awaits an agent review: outcome pass or fail. */
import { ErrorCode, type Infer, obj, oneOf, opt, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id, logText, text } from "../inputs.js";
import { PlanStatus, StepRole, StepStatus } from "../states.js";

export const ReviewCloseInput = obj({
  plan_id: id("plan"),
  outcome: oneOf(["pass", "fail"] as const, "the review's verdict"),
  summary: opt(text("the verdict in one sentence (logged as [AGENT-REVIEW PASS|FAIL])")),
  log_context: opt(logText("the review's raw notes")),
});
export type ReviewCloseInput = Infer<typeof ReviewCloseInput>;

export function agentReviewClose(l: LedgerCore, input: ReviewCloseInput) {
  return l.store.tx(() => {
    const found = l.requirePlan(input.plan_id);
    const steps = l.store.stepsOfPlan(found.plan_id);
    const review = steps.find((s) => s.role === StepRole.Review);
    const child = steps.find((s) => s.role === StepRole.ReviewChild);
    const childFailed = child?.status === StepStatus.Failed;
    const recovered = childFailed && child !== undefined && l.recovered(child, steps);
    // FL-019: `pass` on a failed review counts only once `<plan>-REVIEW.1` is recovered.
    if (input.outcome === "pass" && childFailed && !recovered) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `plan ${found.plan_id}: ${child?.step_id} FAILED: recover it first (deviate under ${child?.step_id} and complete the retry), then pass the review`,
        { planId: found.plan_id, breaker: "soft" },
      );
    }
    const reopenFailed =
      input.outcome === "pass" && recovered && found.status === PlanStatus.Failed && review !== undefined;
    if (reopenFailed) l.reopen(found, review, StepStatus.NeedsReview, { by: "review-close" });
    const plan = reopenFailed
      ? l.requirePlan(found.plan_id)
      : l.requireOpenPlan(input.plan_id, "close its review");
    const current = reopenFailed ? l.requireStep(review.step_id) : review;
    if (!current || current.status !== StepStatus.NeedsReview) {
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `plan ${plan.plan_id}: review step is ${current?.status ?? "missing"}, not NEEDS_REVIEW; review-close only follows a needs_agent_review hand-off`,
        { planId: plan.plan_id, from: current?.status, to: "COMPLETED", breaker: "soft" },
      );
    }
    const open = steps.filter(
      (s) =>
        s.role === StepRole.Regular && s.status !== StepStatus.Completed && s.status !== StepStatus.Failed,
    );
    if (input.outcome === "pass" && open.length > 0) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `plan ${plan.plan_id} still has open steps (${open.map((s) => `${s.step_id} ${s.status}`).join(", ")}): close them before passing the review`,
        { planId: plan.plan_id, breaker: "soft" },
      );
    }
    const to = input.outcome === "pass" ? StepStatus.Completed : StepStatus.Failed;
    if (child && child.status !== StepStatus.Completed && child.status !== StepStatus.Failed) {
      const c = l.startIfPending(child, "review-close");
      l.moveStep(c, to, {}, { by: "review-close" });
    }
    if (input.log_context) l.addLog(current, "review", input.log_context);
    const tag = `[AGENT-REVIEW ${input.outcome === "pass" ? "PASS" : "FAIL"}${recovered ? " after recovery" : ""}]`;
    l.addLog(current, "review", `${tag} ${input.summary ?? ""}`.trimEnd());
    l.store.updatePlan(plan.plan_id, { review_state: "reviewed" });
    if (input.outcome === "pass") l.runPlanClosing(plan, current);
    l.moveStep(
      current,
      to,
      {
        summary: l.red(input.summary) ?? null,
        ...(to === StepStatus.Failed ? { failure_reason: l.red(input.summary) ?? "review failed" } : {}),
      },
      { by: "review-close", outcome: input.outcome },
    );
    l.movePlan(plan, input.outcome === "pass" ? PlanStatus.Completed : PlanStatus.Failed, {
      by: "review-close",
      outcome: input.outcome,
    });
    return {
      plan_id: plan.plan_id,
      outcome: input.outcome,
      status: input.outcome === "pass" ? PlanStatus.Completed : PlanStatus.Failed,
      review_step_id: current.step_id,
      review_child_step_id: child?.step_id,
      ...(recovered ? { after_recovery: true } : {}),
    };
  });
}

export const AGENT_REVIEW_CLOSE_FLOW = defineFlow({
  op: "agent-review-close",
  command: ["plan", "review-close"],
  summary: "Close a plan that awaits an agent review: outcome pass or fail.",
  input: ReviewCloseInput,
  example: { plan_id: "fix-login-20260101120000", outcome: "pass", summary: "state graph updated" },
  positional: "plan_id",
  refusals: [
    {
      code: ErrorCode.IllegalTransition,
      exit: 4,
      when: "the review step is not NEEDS_REVIEW or the plan is closed",
    },
    {
      code: ErrorCode.SoftBreaker,
      exit: 4,
      when: "pass with open steps, or pass on a failed -REVIEW.1 not yet recovered",
    },
  ],
  result: ["plan_id", "outcome", "status", "review_step_id", "review_child_step_id", "after_recovery?"],
  run: (l, i) => agentReviewClose(l, i),
});
