/**
 * The store of threads: {@link ThreadRecords} (threads, messages, checkpoints) plus the rows of the
 * action checkpoint — actions by call id, approvals, leases and standing grants.
 */
import { ThreadRecords } from "./thread-records.js";

export type {
  CheckpointRow,
  MessageRow,
  ThreadBudget,
  ThreadPatch,
  ThreadRow,
} from "./thread-records.js";

export interface ActionRow {
  thread_id: string;
  call_id: string;
  action: string;
  args: string;
  /** `started`, `succeeded`, `failed`, `denied`, `refused`. */
  status: string;
  decision: string;
  lease_id: string | null;
  result: string | null;
  error: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface ApprovalRow {
  approval_id: string;
  thread_id: string;
  call_id: string;
  action: string;
  args: string;
  args_hash: string;
  /** `pending`, `approved`, `denied`. */
  status: string;
  always: number;
  decided_by: string | null;
  reason: string | null;
  created_at: string;
  decided_at: string | null;
  /** After this (epoch ms) the request cannot be decided; the call ends as refused. Null: never. */
  expires_ms?: number | null;
}

export interface LeaseRow {
  lease_id: string;
  thread_id: string;
  pattern: string;
  uses_left: number | null;
  expires_ms: number | null;
  created_at: string;
}

/** The columns of an {@link ActionRow} (PostgreSQL's table has its insertion `seq` besides). */
const ACTION_COLUMNS =
  "thread_id, call_id, action, args, status, decision, lease_id, result, error, started_at, finished_at";

export class ThreadStore extends ThreadRecords {
  action(threadId: string, callId: string): ActionRow | undefined {
    return this.sql(`SELECT ${ACTION_COLUMNS} FROM thread_actions WHERE thread_id = ? AND call_id = ?`).get(
      threadId,
      callId,
    ) as ActionRow | undefined;
  }

  actions(threadId: string): ActionRow[] {
    // Insertion order among calls started in the same millisecond: SQLite's rowid, PostgreSQL's `seq`.
    const order = this.postgres ? "seq" : "rowid";
    return this.sql(
      `SELECT ${ACTION_COLUMNS} FROM thread_actions WHERE thread_id = ? ORDER BY started_at, ${order}`,
    ).all(threadId) as ActionRow[];
  }

  insertAction(a: Omit<ActionRow, "started_at" | "finished_at" | "result" | "error">): void {
    this.sql(
      `INSERT INTO thread_actions (thread_id, call_id, action, args, status, decision, lease_id, result, error, started_at, finished_at)
       VALUES (@thread_id, @call_id, @action, @args, @status, @decision, @lease_id, NULL, NULL, @started_at, NULL)`,
    ).run({ ...a, started_at: this.now() });
  }

  finishAction(
    threadId: string,
    callId: string,
    status: string,
    result: string | null,
    error: string | null,
  ): void {
    this.sql(
      "UPDATE thread_actions SET status = ?, result = ?, error = ?, finished_at = ? WHERE thread_id = ? AND call_id = ?",
    ).run(status, result, error, this.now(), threadId, callId);
  }

  insertApproval(a: ApprovalRow): void {
    this.sql(
      `INSERT INTO thread_approvals (approval_id, thread_id, call_id, action, args, args_hash, status, always, decided_by, reason, created_at, decided_at, expires_ms)
       VALUES (@approval_id, @thread_id, @call_id, @action, @args, @args_hash, @status, @always, @decided_by, @reason, @created_at, @decided_at, @expires_ms)`,
    ).run({ expires_ms: null, ...a });
  }

  approval(approvalId: string): ApprovalRow | undefined {
    return this.sql("SELECT * FROM thread_approvals WHERE approval_id = ?").get(approvalId) as
      | ApprovalRow
      | undefined;
  }

  approvalForCall(threadId: string, callId: string): ApprovalRow | undefined {
    return this.sql(
      "SELECT * FROM thread_approvals WHERE thread_id = ? AND call_id = ? ORDER BY created_at DESC LIMIT 1",
    ).get(threadId, callId) as ApprovalRow | undefined;
  }

  approvals(threadId: string): ApprovalRow[] {
    return this.sql("SELECT * FROM thread_approvals WHERE thread_id = ? ORDER BY created_at").all(
      threadId,
    ) as ApprovalRow[];
  }

  pendingApprovals(threadId: string): ApprovalRow[] {
    return this.sql(
      "SELECT * FROM thread_approvals WHERE thread_id = ? AND status = 'pending' ORDER BY created_at",
    ).all(threadId) as ApprovalRow[];
  }

  /** Marks a pending approval whose time ran out as `expired`; returns whether it did. */
  expireApproval(approvalId: string): boolean {
    return (
      this.sql(
        "UPDATE thread_approvals SET status = 'expired', decided_by = 'expiry', decided_at = ? WHERE approval_id = ? AND status = 'pending'",
      ).run(this.now(), approvalId).changes > 0
    );
  }

  decideApproval(
    approvalId: string,
    status: "approved" | "denied",
    always: boolean,
    by: string,
    reason: string | null,
  ): void {
    this.sql(
      "UPDATE thread_approvals SET status = ?, always = ?, decided_by = ?, reason = ?, decided_at = ? WHERE approval_id = ? AND status = 'pending'",
    ).run(status, always ? 1 : 0, by, reason, this.now(), approvalId);
  }

  insertLease(l: LeaseRow): void {
    this.sql(
      "INSERT INTO thread_leases (lease_id, thread_id, pattern, uses_left, expires_ms, created_at) VALUES (@lease_id, @thread_id, @pattern, @uses_left, @expires_ms, @created_at)",
    ).run(l);
  }

  leases(threadId: string): LeaseRow[] {
    return this.sql("SELECT * FROM thread_leases WHERE thread_id = ? ORDER BY created_at, lease_id").all(
      threadId,
    ) as LeaseRow[];
  }

  consumeLease(leaseId: string): void {
    this.sql(
      "UPDATE thread_leases SET uses_left = uses_left - 1 WHERE lease_id = ? AND uses_left IS NOT NULL",
    ).run(leaseId);
  }

  hasGrant(action: string, project: string): boolean {
    return (
      this.sql("SELECT 1 FROM action_grants WHERE action = ? AND project = ?").get(action, project) !==
      undefined
    );
  }

  /** Removes a standing grant; returns whether there was one. */
  revokeGrant(action: string, project: string): boolean {
    return (
      this.sql("DELETE FROM action_grants WHERE action = ? AND project = ?").run(action, project).changes > 0
    );
  }

  grants(): { action: string; project: string; approval_id: string; created_at: string }[] {
    return this.sql(
      "SELECT action, project, approval_id, created_at FROM action_grants ORDER BY created_at",
    ).all() as {
      action: string;
      project: string;
      approval_id: string;
      created_at: string;
    }[];
  }

  addGrant(action: string, project: string, approvalId: string): void {
    this.sql(
      "INSERT INTO action_grants (action, project, approval_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ).run(action, project, approvalId, this.now());
  }
}
