/** `complete-step` (`ratchet step complete`): Complete an IN_PROGRESS step with a one-sentence summary; runs the roll-up. */
import { ErrorCode, type Infer, obj, opt, RatchetError } from "../../core/index.js";
import type { StepRow } from "../../store/index.js";
import { EXIT_FOOTER, type LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id, logText, text } from "../inputs.js";
import { checkStepMove, StepStatus, StepType } from "../states.js";

export const CompleteInput = obj({
  step_id: id("step to complete"),
  summary: opt(text("one human-curated sentence")),
  agent_output: opt(text("what the agent produced")),
  log_context: opt(logText("raw output to keep in the step's log")),
});
export type CompleteInput = Infer<typeof CompleteInput>;

export function completeStep(
  l: LedgerCore,
  input: CompleteInput,
  opts: { viaRun?: boolean; exitCode?: number; log?: { kind: string; text: string; full?: string } } = {},
) {
  return l.store.tx(() => {
    const read = l.stepToMove(input.step_id, "complete-step", "complete step", true);
    const step = read.step;
    if (step.type === StepType.Command && !opts.viaRun && !l.hasExitFooter(step, input.log_context)) {
      throw new RatchetError(
        ErrorCode.CompleteOnCommand,
        `step ${step.step_id} is a COMMAND step: shell work completes through run-step (\`ratchet step run\`; it captures the output and the true exit code), or give a log_context carrying its \`${EXIT_FOOTER}N\` footer`,
        { stepId: step.step_id },
      );
    }
    checkStepMove(step.step_id, step.status, StepStatus.Completed);
    if (input.log_context) l.addLog(step, "complete", input.log_context);
    if (opts.log)
      l.addLog(step, opts.log.kind, opts.log.text, {
        display: true,
        ...(opts.log.full !== undefined ? { full: opts.log.full } : {}),
      });
    // Columns are written only when given (an unchanged column costs the update its bytes).
    const patch: Partial<StepRow> = {};
    if (input.summary !== undefined) patch.summary = l.redactor.redact(input.summary);
    if (input.agent_output !== undefined) patch.agent_output = l.redactor.redact(input.agent_output);
    if (opts.exitCode !== undefined) patch.exit_code = opts.exitCode;
    l.writeMove(step, StepStatus.Completed, patch);
    const rollup = l.rollUpPlan(step.plan_id, read);
    return { step_id: step.step_id, plan_id: step.plan_id, status: StepStatus.Completed, ...rollup };
  });
}

export const COMPLETE_STEP_FLOW = defineFlow({
  op: "complete-step",
  command: ["step", "complete"],
  summary: "Complete an IN_PROGRESS step with a one-sentence summary; runs the roll-up.",
  input: CompleteInput,
  example: { step_id: "fix-login-20260101120000-A", summary: "found the cause" },
  positional: "step_id",
  refusals: [
    {
      code: ErrorCode.IllegalTransition,
      exit: 4,
      when: "the step is not IN_PROGRESS/NEEDS_REVIEW, is the review step, or its plan is closed",
    },
    {
      code: ErrorCode.CompleteOnCommand,
      exit: 5,
      when: "a COMMAND step without run-step's `--- exit_code=` footer in its log",
    },
  ],
  result: [
    "step_id",
    "plan_id",
    "status",
    "plan_status",
    "review_status?",
    "needs_agent_review?",
    "project?",
    "review_step_id?",
    "review_child_step_id?",
    "unrecovered?",
  ],
  run: (l, i) => completeStep(l, i),
});
