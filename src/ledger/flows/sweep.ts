/** `sweep` (`ratchet plan sweep`): Fail IN_PROGRESS steps whose lease expired (optionally of one plan), each with its roll-up. */
import { type Infer, iso, obj, opt } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { defineFlow } from "../flow.js";
import { id } from "../inputs.js";
import { PlanStatus, StepStatus } from "../states.js";

export const SweepInput = obj({
  plan_id: opt(id("only this plan")),
});
export type SweepInput = Infer<typeof SweepInput>;

/** Fails every IN_PROGRESS step whose lease expired, each in its own transaction with its roll-up. */
export function sweep(l: LedgerCore, input: SweepInput) {
  const nowMs = l.clock.now();
  if (input.plan_id !== undefined) l.requirePlan(input.plan_id);
  const expired = l.store.expiredLeases(nowMs, input.plan_id);
  const swept: Record<string, unknown>[] = [];
  for (const s of expired) {
    const r = l.store.tx(() => {
      const cur = l.store.getStep(s.step_id);
      if (
        !cur ||
        cur.status !== StepStatus.InProgress ||
        cur.lease_expires_at === null ||
        cur.lease_expires_at >= nowMs
      )
        return undefined;
      const plan = l.store.getPlan(cur.plan_id);
      const reason = `lease expired at ${iso(cur.lease_expires_at)} (held by ${cur.lease_holder ?? "unknown"}, last heartbeat ${cur.heartbeat_at ?? "never"}); failed by sweep`;
      if (plan?.status !== PlanStatus.InProgress) {
        // The plan was closed around the step (forced finish): just release the lease.
        l.store.updateStep(cur.step_id, { lease_holder: null, lease_expires_at: null });
        return undefined;
      }
      l.moveStep(cur, StepStatus.Failed, { failure_reason: reason }, { by: "sweep", reason });
      const rollup = l.rollUpPlan(cur.plan_id);
      return {
        step_id: cur.step_id,
        plan_id: cur.plan_id,
        lease_holder: cur.lease_holder,
        expired_at: iso(cur.lease_expires_at),
        reason,
        ...rollup,
      };
    });
    if (r) swept.push(r);
  }
  return { swept, count: swept.length, now: iso(nowMs) };
}

export const SWEEP_FLOW = defineFlow({
  op: "sweep",
  command: ["plan", "sweep"],
  summary: "Fail IN_PROGRESS steps whose lease expired (optionally of one plan), each with its roll-up.",
  input: SweepInput,
  example: {},
  positional: "plan_id",
  optionalInput: true,
  refusals: [],
  result: ["swept", "count", "now"],
  run: (l, i) => sweep(l, i),
});
