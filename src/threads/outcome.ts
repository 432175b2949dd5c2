/**
 * How a finished orchestrator run ends its thread (pure): from the object it passed to `FINAL`
 * (`{outcome, response, error}`), the answer text, the value the script returned, and the last
 * `__transition_to__` it asked for.
 */

export type RunEnd =
  | { kind: "completed"; reason: string | null }
  | { kind: "failed"; reason: string }
  | { kind: "gate" };

export interface RunFacts {
  finalOutcome: Record<string, unknown> | null;
  finalResult: string | null;
  /** The script's last expression (scripts that predate FINAL(outcome) return their outcome). */
  returned: unknown;
  requested: { to: string; reason: string } | null;
  cancelRequested: boolean;
  /** Whether a code step left a gate (an approval no call has consumed) for the script to pause on. */
  gate?: boolean;
}

/**
 * Outcomes that mean "wait for a person". Ratchet waits inside `__execute_action__`; a run ends
 * with one only after a code step's gate (`pending_gate`), which the driver then waits on.
 */
const WAIT_OUTCOMES = new Set(["need_approval", "gate_paused", "need_authentication"]);

export function interpretOutcome(f: RunFacts): RunEnd {
  const why = (to: string) => (f.requested?.to === to && f.requested.reason ? f.requested.reason : null);
  if (f.finalOutcome === null) {
    if (f.finalResult !== null) return { kind: "completed", reason: why("completed") };
    const out = f.returned && typeof f.returned === "object" ? (f.returned as Record<string, unknown>) : {};
    const o = typeof out.outcome === "string" ? out.outcome : "none";
    if (o === "cancelled") return { kind: "failed", reason: "cancelled" };
    if (o === "budget_exhausted")
      return { kind: "failed", reason: `budget exhausted: ${String(out.reason ?? "")}` };
    return { kind: "failed", reason: `the orchestrator returned without calling FINAL (outcome ${o})` };
  }
  const o = String(f.finalOutcome.outcome ?? "completed");
  const error = typeof f.finalOutcome.error === "string" ? f.finalOutcome.error : null;
  switch (o) {
    case "completed":
      return { kind: "completed", reason: why("completed") };
    case "max_iterations":
      return { kind: "completed", reason: why("completed") ?? "max iterations reached" };
    case "stopped":
      return f.cancelRequested
        ? { kind: "failed", reason: "cancelled" }
        : { kind: "completed", reason: "stopped" };
    case "failed":
      return { kind: "failed", reason: error ?? why("failed") ?? "the orchestrator reported a failure" };
    default:
      if (WAIT_OUTCOMES.has(o) && f.gate) return { kind: "gate" };
      if (WAIT_OUTCOMES.has(o))
        return {
          kind: "failed",
          reason: `the orchestrator ended with ${o}, but no gate of a code step is open (approvals of tool calls are waited for inside __execute_action__)`,
        };
      if (f.finalResult !== null) return { kind: "completed", reason: why("completed") };
      return { kind: "failed", reason: error ?? `the orchestrator ended with outcome ${o} and no response` };
  }
}
