/** `heartbeat` (`ratchet step heartbeat`): Renew the lease of an IN_PROGRESS step. */
import { ErrorCode, type Infer, iso, obj, opt, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { id, leaseSeconds } from "../inputs.js";
import { StepStatus } from "../states.js";

export const HeartbeatInput = obj({
  step_id: id("step whose lease to renew"),
  lease_seconds: opt(leaseSeconds),
});
export type HeartbeatInput = Infer<typeof HeartbeatInput>;

export function heartbeat(l: LedgerCore, input: HeartbeatInput) {
  return l.store.tx(() => {
    const step = l.requireStep(input.step_id);
    if (step.status !== StepStatus.InProgress) {
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `step ${step.step_id} is ${step.status}, not IN_PROGRESS: it holds no lease to renew`,
        {
          stepId: step.step_id,
          from: step.status,
          breaker: "soft",
        },
      );
    }
    const lease = l.lease(input.lease_seconds);
    l.store.updateStep(step.step_id, lease);
    l.store.appendEvent({
      entityKind: "step",
      entityId: step.step_id,
      planId: step.plan_id,
      type: LedgerEvent.StepHeartbeat,
      payload: { lease_expires_at: iso(lease.lease_expires_at) },
    });
    return {
      step_id: step.step_id,
      plan_id: step.plan_id,
      status: step.status,
      lease_holder: lease.lease_holder,
      lease_expires_at: iso(lease.lease_expires_at),
    };
  });
}

export const HEARTBEAT_FLOW = defineFlow({
  op: "heartbeat",
  command: ["step", "heartbeat"],
  summary: "Renew the lease of an IN_PROGRESS step.",
  input: HeartbeatInput,
  example: { step_id: "fix-login-20260101120000-A", lease_seconds: 900 },
  positional: "step_id",
  refusals: [{ code: ErrorCode.IllegalTransition, exit: 4, when: "the step is not IN_PROGRESS" }],
  result: ["step_id", "plan_id", "status", "lease_holder", "lease_expires_at"],
  run: (l, i) => heartbeat(l, i),
});
