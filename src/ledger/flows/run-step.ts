/** `run-step` (`ratchet step run`): Start a step, run a shell command, capture its output and true exit code, complete or fail it; exits with the command's status. */
import { ErrorCode } from "../../core/index.js";
import type { StepRow } from "../../store/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { RunInput } from "../inputs.js";
import { runStep } from "../run-step.js";
import { StepStatus } from "../states.js";

/** Starts a step for `run-step`: PENDING → IN_PROGRESS, or renews the lease of an IN_PROGRESS one. */
export function startForRun(
  l: LedgerCore,
  stepId: string,
  type: string,
  command: string,
  leaseSeconds?: number,
) {
  return l.store.tx(() => {
    const step = l.requireStep(stepId);
    l.refuseReviewStep(step, "run-step");
    l.requireOpenPlan(step.plan_id, `run step ${step.step_id}`);
    let moved: StepRow;
    if (step.status === StepStatus.InProgress) {
      const lease = l.lease(leaseSeconds);
      l.store.updateStep(step.step_id, { type, ...lease });
      l.store.appendEvent({
        entityKind: "step",
        entityId: step.step_id,
        planId: step.plan_id,
        type: LedgerEvent.StepRunStarted,
        payload: { resumed: true },
      });
      moved = { ...step, type, ...lease };
    } else {
      moved = l.moveStep(
        step,
        StepStatus.InProgress,
        { type, ...l.lease(leaseSeconds) },
        { via: "run-step" },
      );
    }
    l.addLog(moved, "start", `[run-step] kickoff ${l.now()}\n$ ${command}`);
    return moved;
  });
}

export const RUN_STEP_FLOW = defineFlow({
  op: "run-step",
  command: ["step", "run"],
  summary:
    "Start a step, run a shell command, capture its output and true exit code, complete or fail it; exits with the command's status.",
  input: RunInput,
  example: { step_id: "fix-login-20260101120000-C", type: "COMMAND", command: "npm test" },
  positional: "step_id",
  refusals: [
    {
      code: ErrorCode.IllegalTransition,
      exit: 4,
      when: "the step is terminal, is the review step, or its plan is closed",
    },
  ],
  result: [
    "step_id",
    "plan_id",
    "status",
    "exit_code",
    "runtime_s",
    "truncated",
    "output_bytes",
    "metrics_recorded",
    "timed_out",
    "cancelled",
    "plan_status",
    "…roll-up keys",
  ],
  run: (l, i, c) => runStep(l, i.cwd === undefined && c.cwd ? { ...i, cwd: c.cwd } : i, c.run ?? {}),
});
