/**
 * The one checkpoint every tool call passes: idempotency by call id → lease lookup → policy
 * (Deny > RequireApproval > Allow, standing grants) → approval wait (VM paused and saved) → consume
 * one use → execute through the bridge → event → exactly one result message under the call id.
 */
import { createHash, randomBytes } from "node:crypto";
import { effectFor } from "./actions.js";
import { ThreadEvent } from "./events.js";
import { type HostAnswer, type HostCalls, type HostContext, HostStop, pyError } from "./host.js";
import { ACTION_RESULT_MAX_CHARS } from "./limits.js";
import { evaluatePolicy, globMatch } from "./policy.js";
import type { ActionRow, ApprovalRow, LeaseRow } from "./thread-store.js";

/** Canonical JSON (sorted keys) so the same arguments always hash the same. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v ?? null);
}

export function argsHash(action: string, args: unknown): string {
  return createHash("sha256")
    .update(`${action}\n${canonicalJson(args)}`)
    .digest("hex");
}

function resultText(v: unknown): string {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text.length > ACTION_RESULT_MAX_CHARS
    ? `${text.slice(0, ACTION_RESULT_MAX_CHARS / 2)}\n…[cut]…\n${text.slice(-ACTION_RESULT_MAX_CHARS / 2)}`
    : text;
}

/** The live lease covering `action`, if any. */
export function findLease(leases: readonly LeaseRow[], action: string, nowMs: number): LeaseRow | undefined {
  return leases.find(
    (l) =>
      globMatch(l.pattern, action) &&
      (l.uses_left === null || l.uses_left > 0) &&
      (l.expires_ms === null || l.expires_ms > nowMs),
  );
}

/** The answer of a call that already went through the checkpoint (a restore re-issued it). */
function replay(h: HostCalls, a: ActionRow, ctx: HostContext): HostAnswer {
  const { threads } = h.d;
  switch (a.status) {
    case "succeeded":
      return ctx.commit({ value: a.result === null ? null : JSON.parse(a.result) });
    case "failed":
      return ctx.commit(pyError("RuntimeError", a.error ?? `action ${a.action} failed`));
    case "denied":
    case "refused":
      return ctx.commit(pyError("PermissionError", a.error ?? `action ${a.action} was refused`));
    default: {
      // Started and never finished: the process died mid-call. It may have run; never run it again.
      const msg = `action ${a.action} (call ${a.call_id}) was interrupted while it ran: it may or may not have taken effect, and it is not run again`;
      return ctx.commit(pyError("RuntimeError", msg), () => {
        threads.finishAction(h.threadId, a.call_id, "failed", null, msg);
        if (!threads.hasResult(h.threadId, a.call_id)) writeResult(h, a.call_id, a.action, msg, true);
      });
    }
  }
}

/** Call ids of actions a code step makes: they answer no provider call, so they get no result message. */
export const CODE_CALL_PREFIX = "code-";

function writeResult(h: HostCalls, callId: string, action: string, content: string, isError: boolean): void {
  if (callId.startsWith(CODE_CALL_PREFIX)) return;
  h.d.threads.addMessage({
    thread_id: h.threadId,
    role: "tool",
    content,
    tool_calls: null,
    call_id: callId,
    tool_name: action,
    is_error: isError ? 1 : 0,
  });
}

/** Refuses a call: records it, writes its one error result, raises PermissionError. */
function refuse(
  h: HostCalls,
  ctx: HostContext,
  call: { callId: string; action: string; args: unknown },
  status: "denied" | "refused",
  decision: string,
  message: string,
): HostAnswer {
  const { threads } = h.d;
  h.d.onEvent?.({
    type: "action",
    name: call.action,
    callId: call.callId,
    args: call.args,
    status: "denied",
  });
  return ctx.commit(pyError("PermissionError", message), () => {
    if (!threads.action(h.threadId, call.callId))
      threads.insertAction({
        thread_id: h.threadId,
        call_id: call.callId,
        action: call.action,
        args: JSON.stringify(call.args),
        status,
        decision,
        lease_id: null,
      });
    threads.finishAction(h.threadId, call.callId, status, null, message);
    writeResult(h, call.callId, call.action, message, true);
    threads.event(h.threadId, ThreadEvent.ActionCompleted, {
      call_id: call.callId,
      action: call.action,
      status,
      decision,
      error: message,
    });
  });
}

export async function executeAction(
  h: HostCalls,
  action: string,
  rawArgs: unknown,
  givenCallId: string,
  ctx: HostContext,
): Promise<HostAnswer> {
  const { threads, config } = h.d;
  const callId = givenCallId || `host-${ctx.seq}`;
  const args = rawArgs && typeof rawArgs === "object" && !Array.isArray(rawArgs) ? rawArgs : {};
  const call = { callId, action, args };
  const done = threads.action(h.threadId, callId);
  if (done) return replay(h, done, ctx);
  if (threads.hasResult(h.threadId, callId))
    return ctx.commit(pyError("ValueError", `call ${callId} already has a result`));

  const t = threads.require(h.threadId);
  const project = t.project ?? "";
  const defs = await h.d.actions.list(h.d.signal);
  const def = defs.find((d) => d.name === action);
  if (!def) return refuse(h, ctx, call, "refused", "unknown", `unknown action ${JSON.stringify(action)}`);

  let approval: ApprovalRow | undefined = threads.approvalForCall(h.threadId, callId);
  let decision: string;
  const nowMs = (h.d.nowMs ?? Date.now)();
  const lease = findLease(threads.leases(h.threadId), action, nowMs);
  if (approval) {
    if (approval.action !== action || approval.args_hash !== argsHash(action, args))
      return refuse(
        h,
        ctx,
        call,
        "refused",
        "approval_mismatch",
        `the approval ${approval.approval_id} is bound to other parameters than call ${callId}`,
      );
    decision = "require_approval";
  } else {
    if (!lease)
      return refuse(
        h,
        ctx,
        call,
        "refused",
        "no_lease",
        `no lease covers action ${action} (or its uses are spent)`,
      );
    const verdict = evaluatePolicy(config.policy, action, effectFor(action, config.effects), {
      granted: threads.hasGrant(action, project),
    });
    decision = verdict.granted ? "granted" : verdict.decision;
    if (verdict.decision === "deny")
      return refuse(h, ctx, call, "denied", "deny", `action ${action} is denied by policy`);
    if (verdict.decision === "require_approval" && callId.startsWith(CODE_CALL_PREFIX))
      return refuse(
        h,
        ctx,
        call,
        "refused",
        "require_approval",
        `action ${action} needs an approval: ask for it as a tool call, not from a code step`,
      );
    if (verdict.decision === "require_approval") {
      const row: ApprovalRow = {
        approval_id: `ap-${randomBytes(5).toString("hex")}`,
        thread_id: h.threadId,
        call_id: callId,
        action,
        args: JSON.stringify(args),
        args_hash: argsHash(action, args),
        status: "pending",
        always: 0,
        decided_by: null,
        reason: null,
        created_at: threads.now(),
        decided_at: null,
      };
      threads.tx(() => {
        threads.insertApproval(row);
        threads.transition(h.threadId, "waiting", { reason: `approval needed: ${action}` });
        threads.event(h.threadId, ThreadEvent.ApprovalRequested, {
          approval_id: row.approval_id,
          call_id: callId,
          action,
          args,
        });
      });
      approval = row;
    }
  }

  if (approval) {
    if (approval.status === "pending") {
      h.d.onEvent?.({ type: "approval", approvalId: approval.approval_id, action, callId, args });
      const r = await h.hooks.waitForDecision(approval.approval_id);
      if (r === "released") throw new HostStop("waiting", "waiting for approval");
      if (r === "cancelled") throw new HostStop("failed", "cancelled");
      approval = threads.approval(approval.approval_id)!;
    }
    const state = threads.require(h.threadId).state;
    if (state === "waiting")
      threads.transition(h.threadId, "running", { reason: `approval ${approval.status}: ${action}` });
    if (approval.status === "denied")
      return refuse(
        h,
        ctx,
        call,
        "denied",
        "denied",
        `action ${action} was denied by ${approval.decided_by ?? "a person"}${approval.reason ? `: ${approval.reason}` : ""}`,
      );
  }

  const useLease = lease ?? findLease(threads.leases(h.threadId), action, nowMs);
  if (!useLease)
    return refuse(
      h,
      ctx,
      call,
      "refused",
      "no_lease",
      `no lease covers action ${action} (or its uses are spent)`,
    );
  threads.tx(() => {
    threads.insertAction({
      thread_id: h.threadId,
      call_id: callId,
      action,
      args: JSON.stringify(args),
      status: "started",
      decision,
      lease_id: useLease.lease_id,
    });
    threads.consumeLease(useLease.lease_id);
  });
  h.d.onEvent?.({ type: "action", name: action, callId, args, status: "running" });
  try {
    const result = await h.d.actions.call(action, args as Record<string, unknown>, h.d.signal);
    const stored = JSON.stringify(result ?? null);
    h.d.onEvent?.({ type: "action", name: action, callId, args, status: "succeeded" });
    return ctx.commit({ value: result ?? null }, () => {
      threads.finishAction(h.threadId, callId, "succeeded", stored, null);
      writeResult(h, callId, action, resultText(result ?? null), false);
      threads.event(h.threadId, ThreadEvent.ActionCompleted, {
        call_id: callId,
        action,
        status: "succeeded",
        decision,
      });
    });
  } catch (e) {
    const msg = `action ${action} failed: ${(e as Error).message}`;
    h.d.onEvent?.({ type: "action", name: action, callId, args, status: "failed" });
    return ctx.commit(pyError("RuntimeError", msg), () => {
      threads.finishAction(h.threadId, callId, "failed", null, msg);
      writeResult(h, callId, action, msg, true);
      threads.event(h.threadId, ThreadEvent.ActionCompleted, {
        call_id: callId,
        action,
        status: "failed",
        decision,
        error: msg,
      });
    });
  }
}
