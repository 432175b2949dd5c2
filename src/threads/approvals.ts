/** Which approval a decision (approve / deny) is about, and the refusals that name why not. */
import { ErrorCode, RatchetError } from "../core/index.js";
import { isTerminal } from "./states.js";
import type { ApprovalRow, ThreadStore } from "./thread-store.js";

/**
 * The approval a decision is about: the one named, else the thread's pending one.
 * @throws RatchetError `not_found` (thread, approval, nothing to decide), `illegal_transition`
 *   (already decided, expired, or the thread ended).
 */
export function approvalToDecide(
  threads: ThreadStore,
  threadId: string,
  approvalId: string | undefined,
  nowMs: number,
): ApprovalRow {
  const a = pickApproval(threads, threadId, approvalId);
  if (a.expires_ms && nowMs >= a.expires_ms)
    throw new RatchetError(
      ErrorCode.IllegalTransition,
      `approval ${a.approval_id} expired at ${new Date(a.expires_ms).toISOString()}: it can no longer be decided (resume the thread to go on without the call)`,
      { threadId, approvalId: a.approval_id, from: "expired", to: "decided" },
    );
  return a;
}

function pickApproval(threads: ThreadStore, threadId: string, approvalId?: string): ApprovalRow {
  const t = threads.require(threadId);
  const ended = () =>
    new RatchetError(ErrorCode.IllegalTransition, `thread ${threadId} already ended (${t.state})`, {
      threadId,
      from: t.state,
      to: "running",
    });
  if (approvalId) {
    const a = threads.approval(approvalId);
    if (!a || a.thread_id !== threadId)
      throw new RatchetError(ErrorCode.NotFound, `approval ${approvalId} not found on thread ${threadId}`, {
        threadId,
        approvalId,
      });
    if (a.status !== "pending")
      throw new RatchetError(ErrorCode.IllegalTransition, `approval ${approvalId} was already ${a.status}`, {
        threadId,
        approvalId,
        from: a.status,
        to: "decided",
      });
    return a;
  }
  const pending = threads.pendingApprovals(threadId);
  if (pending.length === 0) {
    const any = threads.approvals(threadId).at(-1);
    if (any)
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `thread ${threadId} has no pending approval (the last one, ${any.approval_id}, was already ${any.status})`,
        { threadId, approvalId: any.approval_id, from: any.status, to: "decided" },
      );
    throw new RatchetError(ErrorCode.NotFound, `thread ${threadId} has no approval to decide`, {
      threadId,
    });
  }
  if (isTerminal(t.state)) throw ended();
  return pending[0]!;
}
