/**
 * The one checkpoint every tool call passes, as small steps: idempotency by call id
 * ({@link replayed}) → lease lookup and policy, Deny > RequireApproval > Allow with standing grants
 * ({@link preflight}) → approval wait, VM paused and saved ({@link awaitApproval}) → consume one use
 * and execute through the bridge ({@link runCall}) → the event and exactly one result message under
 * the call id ({@link recordOutcome}). A refusal, a denial and a tool's failure are results
 * (`is_error: true`), never exceptions thrown through the host.
 */
import { randomBytes } from "node:crypto";
import { argsHash, findLease, resultText } from "./action-keys.js";
import { effectFor } from "./actions.js";
import { ThreadEvent } from "./events.js";
import type { EngineDeps, HostHooks, HostStopResult } from "./host-types.js";
import { stop } from "./host-types.js";
import { evaluatePolicy } from "./policy.js";
import type { ActionRow, ApprovalRow, LeaseRow } from "./thread-store.js";

/** Call ids of actions a code step makes: they answer no provider call, so they get no result message. */
export const CODE_CALL_PREFIX = "code-";

/** One tool call as the script made it. */
export interface ActionCall {
  callId: string;
  action: string;
  args: Record<string, unknown>;
}

/** What `__execute_action__` answers (the original engine's shape). */
export interface ActionResult {
  action_name: string;
  output: unknown;
  is_error: boolean;
  duration_ms: number;
}

export type ActionStatus = "succeeded" | "failed" | "denied" | "refused";

/** A finished call: its result, how it ended, and the writes that record it (not yet committed). */
export interface ActionOutcome {
  result: ActionResult;
  status: ActionStatus;
  effects?: () => void;
}

type Preflight =
  | { kind: "outcome"; outcome: ActionOutcome }
  | { kind: "approval"; approval: ApprovalRow }
  | { kind: "run"; lease: LeaseRow; decision: string };

/** Everything the steps need: the engine's parts and the thread. */
export interface CheckpointScope {
  d: EngineDeps;
  threadId: string;
  hooks: HostHooks;
  /**
   * Whether a code step's call that needs an approval becomes a gate (`pending_gate`, the script
   * pauses the thread) instead of being refused: on for stored versions, off for the built-in one.
   */
  codeGates?: boolean;
}

const ms = (a: string, b: string | null) => (b ? Math.max(0, Date.parse(b) - Date.parse(a)) : 0);

/** The recorded outcome of a call that already went through the checkpoint (pure, but for the ambiguous case). */
export function replayed(a: ActionRow): ActionOutcome | "interrupted" {
  const base = { action_name: a.action, duration_ms: ms(a.started_at, a.finished_at) };
  switch (a.status) {
    case "succeeded":
      return {
        status: "succeeded",
        result: { ...base, output: a.result === null ? null : JSON.parse(a.result), is_error: false },
      };
    case "failed":
    case "denied":
    case "refused":
      return {
        status: a.status,
        result: { ...base, output: a.error ?? `action ${a.action} ${a.status}`, is_error: true },
      };
    default:
      return "interrupted";
  }
}

function writeResult(s: CheckpointScope, call: ActionCall, content: string, isError: boolean): void {
  if (call.callId.startsWith(CODE_CALL_PREFIX)) return;
  if (s.d.threads.hasResult(s.threadId, call.callId)) return;
  s.d.threads.addMessage({
    thread_id: s.threadId,
    role: "tool",
    content,
    tool_calls: null,
    call_id: call.callId,
    tool_name: call.action,
    is_error: isError ? 1 : 0,
  });
}

/** The outcome of a call that does not run: recorded, its one error result, its event. */
function refusal(
  s: CheckpointScope,
  call: ActionCall,
  status: "denied" | "refused" | "failed",
  decision: string,
  message: string,
): ActionOutcome {
  const { threads } = s.d;
  s.d.onEvent?.({
    type: "action",
    name: call.action,
    callId: call.callId,
    args: call.args,
    status: "denied",
  });
  return {
    status,
    result: { action_name: call.action, output: message, is_error: true, duration_ms: 0 },
    effects: () => {
      if (!threads.action(s.threadId, call.callId))
        threads.insertAction({
          thread_id: s.threadId,
          call_id: call.callId,
          action: call.action,
          args: JSON.stringify(call.args),
          status,
          decision,
          lease_id: null,
        });
      threads.finishAction(s.threadId, call.callId, status, null, message);
      writeResult(s, call, message, true);
      threads.event(s.threadId, ThreadEvent.ActionCompleted, {
        call_id: call.callId,
        action: call.action,
        status,
        decision,
        error: message,
      });
    },
  };
}

/** The live lease that covers the call, or the call's refusal (before the policy, and again after an approval). */
function coveringLease(s: CheckpointScope, call: ActionCall): LeaseRow | Preflight {
  const lease = findLease(s.d.threads.leases(s.threadId), call.action, (s.d.nowMs ?? Date.now)());
  if (lease) return lease;
  const msg = `no lease covers action ${call.action} (or its uses are spent)`;
  return { kind: "outcome", outcome: refusal(s, call, "refused", "no_lease", msg) };
}

/** Step 1–2: replay, lease, policy. A RequireApproval verdict writes the approval (and Waiting) here. */
export async function preflight(s: CheckpointScope, call: ActionCall): Promise<Preflight> {
  const { threads, config } = s.d;
  const done = threads.action(s.threadId, call.callId);
  if (done) {
    const r = replayed(done);
    if (r !== "interrupted") return { kind: "outcome", outcome: r };
    // Started and never finished: the process died mid-call. It may have run; never run it again.
    const msg = `action ${call.action} (call ${call.callId}) was interrupted while it ran: it may or may not have taken effect, and it is not run again`;
    return { kind: "outcome", outcome: refusal(s, call, "failed", done.decision, msg) };
  }
  if (threads.hasResult(s.threadId, call.callId))
    return {
      kind: "outcome",
      outcome: refusal(s, call, "refused", "duplicate", `call ${call.callId} already has a result`),
    };
  const defs = await s.d.actions.list(s.d.signal);
  if (!defs.some((d) => d.name === call.action))
    return {
      kind: "outcome",
      outcome: refusal(s, call, "refused", "unknown", `unknown action ${JSON.stringify(call.action)}`),
    };
  const existing = threads.approvalForCall(s.threadId, call.callId);
  if (existing) {
    if (existing.action !== call.action || existing.args_hash !== argsHash(call.action, call.args))
      return {
        kind: "outcome",
        outcome: refusal(
          s,
          call,
          "refused",
          "approval_mismatch",
          `the approval ${existing.approval_id} is bound to other parameters than call ${call.callId}`,
        ),
      };
    return { kind: "approval", approval: existing };
  }
  const lease = coveringLease(s, call);
  if ("kind" in lease) return lease;
  const project = threads.require(s.threadId).project ?? "";
  const verdict = evaluatePolicy(config.policy, call.action, effectFor(call.action, config.effects), {
    granted: threads.hasGrant(call.action, project),
  });
  if (verdict.decision === "deny")
    return {
      kind: "outcome",
      outcome: refusal(s, call, "denied", "deny", `action ${call.action} is denied by policy`),
    };
  if (verdict.decision !== "require_approval")
    return { kind: "run", lease, decision: verdict.granted ? "granted" : verdict.decision };
  if (call.callId.startsWith(CODE_CALL_PREFIX) && !s.codeGates)
    return {
      kind: "outcome",
      outcome: refusal(
        s,
        call,
        "refused",
        "require_approval",
        `action ${call.action} needs an approval: ask for it as a tool call, not from a code step`,
      ),
    };
  return { kind: "approval", approval: requestApproval(s, call) };
}

/** Writes a pending approval bound to the call id and the hash of its arguments, Waiting, the event. */
function requestApproval(s: CheckpointScope, call: ActionCall): ApprovalRow {
  const { threads } = s.d;
  const row: ApprovalRow = {
    approval_id: `ap-${randomBytes(5).toString("hex")}`,
    thread_id: s.threadId,
    call_id: call.callId,
    action: call.action,
    args: JSON.stringify(call.args),
    args_hash: argsHash(call.action, call.args),
    status: "pending",
    always: 0,
    decided_by: null,
    reason: null,
    created_at: threads.now(),
    decided_at: null,
    expires_ms: (s.d.nowMs ?? Date.now)() + s.d.config.approvalTtlMs,
  };
  threads.tx(() => {
    threads.insertApproval(row);
    // A code step's gate moves the thread when the script has ended its run (engine.ts, gatePaused).
    if (threads.require(s.threadId).state === "running" && !call.callId.startsWith(CODE_CALL_PREFIX))
      threads.transition(s.threadId, "waiting", { reason: `approval needed: ${call.action}` });
    threads.event(s.threadId, ThreadEvent.ApprovalRequested, {
      approval_id: row.approval_id,
      call_id: call.callId,
      action: call.action,
      args: call.args,
    });
  });
  return row;
}

/** Step 3: waits (VM saved) for the decision; a denial is an outcome, an approval a call to run. */
export async function awaitApproval(
  s: CheckpointScope,
  call: ActionCall,
  approval: ApprovalRow,
): Promise<Preflight | HostStopResult> {
  const { threads } = s.d;
  let a = approval;
  if (a.status === "pending") {
    s.d.onEvent?.({
      type: "approval",
      approvalId: a.approval_id,
      action: call.action,
      callId: call.callId,
      args: call.args,
    });
    const r = await s.hooks.waitForDecision(a.approval_id);
    if (r === "released") return stop("waiting", "waiting for approval");
    if (r === "cancelled") return stop("failed", "cancelled");
    a = threads.approval(a.approval_id)!;
  }
  if (a.status === "pending" || a.status === "expired") {
    // Only an expired request is still undecided here.
    threads.expireApproval(a.approval_id);
    a = threads.approval(a.approval_id)!;
  }
  threads.tx(() => {
    if (threads.require(s.threadId).state === "waiting" && threads.pendingApprovals(s.threadId).length === 0)
      threads.transition(s.threadId, "running", { reason: `approval ${a.status}: ${call.action}` });
  });
  if (a.status === "expired")
    return {
      kind: "outcome",
      outcome: refusal(
        s,
        call,
        "refused",
        "expired",
        `the approval ${a.approval_id} for action ${call.action} expired before anyone decided it`,
      ),
    };
  if (a.status === "denied")
    return {
      kind: "outcome",
      outcome: refusal(
        s,
        call,
        "denied",
        "denied",
        `action ${call.action} was denied by ${a.decided_by ?? "a person"}${a.reason ? `: ${a.reason}` : ""}`,
      ),
    };
  const lease = coveringLease(s, call);
  return "kind" in lease ? lease : { kind: "run", lease, decision: "require_approval" };
}

/** Step 4: `started` + one use of the lease in one transaction, then the call through the bridge. */
export async function runCall(
  s: CheckpointScope,
  call: ActionCall,
  lease: LeaseRow,
  decision: string,
): Promise<ActionOutcome> {
  const { threads } = s.d;
  threads.tx(() => {
    threads.insertAction({
      thread_id: s.threadId,
      call_id: call.callId,
      action: call.action,
      args: JSON.stringify(call.args),
      status: "started",
      decision,
      lease_id: lease.lease_id,
    });
    threads.consumeLease(lease.lease_id);
  });
  const emit = (status: "running" | "succeeded" | "failed") =>
    s.d.onEvent?.({ type: "action", name: call.action, callId: call.callId, args: call.args, status });
  emit("running");
  const t0 = (s.d.nowMs ?? Date.now)();
  const took = () => Math.max(0, (s.d.nowMs ?? Date.now)() - t0);
  try {
    const value = (await s.d.actions.call(call.action, call.args, s.d.signal)) ?? null;
    emit("succeeded");
    return recordOutcome(s, call, decision, {
      action_name: call.action,
      output: value,
      is_error: false,
      duration_ms: took(),
    });
  } catch (e) {
    emit("failed");
    return recordOutcome(s, call, decision, {
      action_name: call.action,
      output: `action ${call.action} failed: ${(e as Error).message}`,
      is_error: true,
      duration_ms: took(),
    });
  }
}

/** Step 5: the writes of a call that ran — its row, its one result message, its event. */
function recordOutcome(
  s: CheckpointScope,
  call: ActionCall,
  decision: string,
  result: ActionResult,
): ActionOutcome {
  const { threads } = s.d;
  const status = result.is_error ? "failed" : "succeeded";
  return {
    status,
    result,
    effects: () => {
      threads.finishAction(
        s.threadId,
        call.callId,
        status,
        result.is_error ? null : JSON.stringify(result.output),
        result.is_error ? String(result.output) : null,
      );
      writeResult(
        s,
        call,
        result.is_error ? String(result.output) : resultText(result.output),
        result.is_error,
      );
      threads.event(s.threadId, ThreadEvent.ActionCompleted, {
        call_id: call.callId,
        action: call.action,
        status,
        decision,
        ...(result.is_error ? { error: String(result.output) } : {}),
      });
    },
  };
}

/** One call through every step. The effects are left to the caller to commit (with the answer). */
export async function executeAction(
  s: CheckpointScope,
  call: ActionCall,
): Promise<ActionOutcome | HostStopResult> {
  let p: Preflight | HostStopResult = await preflight(s, call);
  if (p.kind === "approval") p = await awaitApproval(s, call, p.approval);
  if ("stop" in p) return p;
  if (p.kind === "outcome") return p.outcome;
  if (p.kind === "approval") return stop("failed", `approval of ${call.callId} did not settle`);
  return runCall(s, call, p.lease, p.decision);
}

/**
 * A code step's call: as {@link executeAction}, except that a call waiting for a decision is not
 * waited for here but answered as its gate (the approval is written, pending); the code step ends
 * and hands it to the script as `pending_gate`. A call decided already (a code step run again
 * after a restart) goes on as usual.
 */
export async function executeOrGate(
  s: CheckpointScope,
  call: ActionCall,
): Promise<ActionOutcome | HostStopResult | { gate: ApprovalRow }> {
  let p: Preflight | HostStopResult = await preflight(s, call);
  if (p.kind === "approval" && p.approval.status === "pending") return { gate: p.approval };
  if (p.kind === "approval") p = await awaitApproval(s, call, p.approval);
  if ("stop" in p) return p;
  if (p.kind === "outcome") return p.outcome;
  if (p.kind === "approval") return stop("failed", `approval of ${call.callId} did not settle`);
  return runCall(s, call, p.lease, p.decision);
}

/** The approval a code step's gate left for this thread and that no call has consumed yet. */
export function openGate(s: CheckpointScope): ApprovalRow | undefined {
  const { threads } = s.d;
  return threads
    .approvals(s.threadId)
    .filter((a) => a.call_id.startsWith(CODE_CALL_PREFIX) && !threads.action(s.threadId, a.call_id))
    .at(-1);
}

/**
 * Several calls: approvals are asked for and waited for first (one at a time), then every call that
 * may run runs concurrently; each call's writes commit as soon as it ends, so a restart replays the
 * finished ones. Results come back in the order of `calls`. The writes of the last call are left
 * to the caller, to commit with the answer (one transaction fewer; a crash before it leaves that
 * call `started`, as a crash before its own transaction did).
 */
export async function executeActions(
  s: CheckpointScope,
  calls: readonly ActionCall[],
): Promise<{ results: ActionResult[]; effects?: () => void } | HostStopResult> {
  const pre: Preflight[] = [];
  for (const c of calls) pre.push(await preflight(s, c));
  for (let i = 0; i < pre.length; i++) {
    const p = pre[i]!;
    if (p.kind !== "approval") continue;
    const r = await awaitApproval(s, calls[i]!, p.approval);
    if ("stop" in r) return r;
    pre[i] = r;
  }
  // All run at once; each one's writes commit as soon as it and the ones before it have ended,
  // so result messages and events keep the order of the calls.
  const running = pre.map((p, i) =>
    p.kind === "run"
      ? runCall(s, calls[i]!, p.lease, p.decision)
      : Promise.resolve(p.kind === "outcome" ? p.outcome : null),
  );
  const outcomes: (ActionOutcome | null)[] = [];
  let last: (() => void) | undefined;
  for (const [i, r] of running.entries()) {
    const o = await r;
    if (i === running.length - 1) last = o?.effects;
    else if (o?.effects) s.d.threads.tx(o.effects);
    outcomes.push(o);
  }
  const results = outcomes.map(
    (o, i) =>
      o?.result ?? { action_name: calls[i]!.action, output: "not run", is_error: true, duration_ms: 0 },
  );
  return last ? { results, effects: last } : { results };
}
