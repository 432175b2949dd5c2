/** `start-step` (`ratchet step start`): Start a PENDING step (takes its lease); COMMAND steps start through run-step. */
import { ErrorCode, type Infer, iso, obj, oneOf, opt, RatchetError } from "../../core/index.js";
import type { StepRow } from "../../store/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id, leaseSeconds, logText, text } from "../inputs.js";
import { STEP_TYPES, StepStatus, StepType } from "../states.js";

export const StartInput = obj({
  step_id: id("step to start"),
  type: opt(oneOf(STEP_TYPES, "the step's type (sets an untyped step's; COMMAND is refused: use run-step)")),
  agent_input: opt(text("what the agent was given")),
  log_context: opt(logText("raw output to keep in the step's log")),
  lease_seconds: opt(leaseSeconds),
});
export type StartInput = Infer<typeof StartInput>;

export function startStep(l: LedgerCore, input: StartInput) {
  return startStepRole(l, input).result;
}

/** {@link startStep} with the started step's role (the flow refreshes a `<plan>-REVIEW.1`'s graph). */
function startStepRole(l: LedgerCore, input: StartInput) {
  return l.store.tx(() => {
    const { step } = l.stepToMove(input.step_id, "start-step", "start step", false);
    if ((input.type ?? step.type) === StepType.Command) {
      throw new RatchetError(
        ErrorCode.CompleteOnCommand,
        `step ${step.step_id} is a COMMAND step: shell work starts through run-step (\`ratchet step run\`, scripts/run-step.sh), which captures the output and the true exit code; nothing written`,
        { stepId: step.step_id },
      );
    }
    const patch: Partial<StepRow> = {};
    if (input.type) patch.type = input.type;
    // Columns are written only when given (an unchanged column costs the update its bytes).
    if (input.agent_input !== undefined) patch.agent_input = l.redactor.redact(input.agent_input);
    const lease = l.lease(input.lease_seconds);
    patch.lease_holder = lease.lease_holder;
    patch.lease_expires_at = lease.lease_expires_at;
    patch.heartbeat_at = lease.heartbeat_at;
    const moved = l.writeMove(step, StepStatus.InProgress, patch, { lease_holder: l.holder });
    if (input.log_context) l.addLog(step, "start", input.log_context);
    const result = {
      step_id: step.step_id,
      plan_id: step.plan_id,
      status: StepStatus.InProgress,
      type: moved.type ?? step.type,
      lease_holder: lease.lease_holder,
      lease_expires_at: iso(lease.lease_expires_at),
    };
    return { result, role: step.role };
  });
}

export const START_STEP_FLOW = defineFlow({
  op: "start-step",
  command: ["step", "start"],
  summary: "Start a PENDING step (takes its lease); COMMAND steps start through run-step.",
  input: StartInput,
  example: { step_id: "fix-login-20260101120000-A", type: "ANALYSIS" },
  positional: "step_id",
  refusals: [
    {
      code: ErrorCode.IllegalTransition,
      exit: 4,
      when: "the step is not PENDING, is the review step, or its plan is closed",
    },
    {
      code: ErrorCode.CompleteOnCommand,
      exit: 5,
      when: "the step is (or is typed) COMMAND: it starts through run-step",
    },
  ],
  result: ["step_id", "plan_id", "status", "type", "lease_holder", "lease_expires_at"],
  run: async (l, i) => {
    const { result: r, role } = startStepRole(l, i);
    // `<plan>-REVIEW.1` refreshes the plan's state graph after the start commits; a failure is
    // logged on the step, never raised. The role is the one read under the start's write lock (a
    // step's role never changes); the whole row is read only for such a step.
    const step = role === "review_child" ? l.store.getStep(r.step_id) : undefined;
    if (step) {
      const { refreshAtReviewStart } = await import("../../provenance/nodes/index.js");
      const done = await refreshAtReviewStart(l.store, step);
      if (done?.log) {
        const log = done.log;
        l.store.tx(() => l.addLog(step, "graph", log));
      }
    }
    return r;
  },
});
