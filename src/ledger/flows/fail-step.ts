/** `fail-step` (`ratchet step fail`): Fail an IN_PROGRESS step with a reason; runs the roll-up. */
import { ErrorCode, type Infer, obj, opt } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id, logText, text } from "../inputs.js";
import { checkStepMove, StepStatus } from "../states.js";

export const FailInput = obj({
  step_id: id("step to fail"),
  reason: opt(text("why it failed (failure_reason)")),
  log_context: opt(logText("raw output to keep in the step's log")),
});
export type FailInput = Infer<typeof FailInput>;

export function failStep(
  l: LedgerCore,
  input: FailInput,
  opts: { exitCode?: number; log?: { kind: string; text: string; full?: string } } = {},
) {
  return l.store.tx(() => {
    const read = l.stepToMove(input.step_id, "fail-step", "fail step", true);
    const step = read.step;
    checkStepMove(step.step_id, step.status, StepStatus.Failed);
    if (input.log_context) l.addLog(step, "fail", input.log_context);
    if (opts.log)
      l.addLog(step, opts.log.kind, opts.log.text, {
        display: true,
        ...(opts.log.full !== undefined ? { full: opts.log.full } : {}),
      });
    // The original's log line for the op (run-step's failures carry their output log instead).
    else if (input.reason) l.addLog(step, "fail", `[FAILED] ${input.reason}`);
    const moved = l.writeMove(
      step,
      StepStatus.Failed,
      {
        failure_reason: l.red(input.reason) ?? null,
        ...(opts.exitCode !== undefined ? { exit_code: opts.exitCode } : {}),
      },
      input.reason ? { reason: l.red(input.reason) } : {},
    );
    const rollup = l.rollUpPlan(step.plan_id, read);
    return {
      step_id: step.step_id,
      plan_id: step.plan_id,
      status: StepStatus.Failed,
      reason: moved.failure_reason ?? null,
      ...rollup,
    };
  });
}

export const FAIL_STEP_FLOW = defineFlow({
  op: "fail-step",
  command: ["step", "fail"],
  summary: "Fail an IN_PROGRESS step with a reason; runs the roll-up.",
  input: FailInput,
  example: { step_id: "fix-login-20260101120000-A", reason: "the fixture is missing" },
  positional: "step_id",
  refusals: [
    {
      code: ErrorCode.IllegalTransition,
      exit: 4,
      when: "the step is not IN_PROGRESS/NEEDS_REVIEW, is the review step, or its plan is closed",
    },
  ],
  result: [
    "step_id",
    "plan_id",
    "status",
    "reason",
    "plan_status",
    "review_status?",
    "needs_agent_review?",
    "unrecovered?",
  ],
  run: (l, i) => failStep(l, i),
});
