/**
 * The thread tables (SQLite migration 5 and later, PostgreSQL migration 4): threads, messages and
 * checkpoints here; actions, approvals, leases and grants in thread-store.ts. Every write runs
 * inside `store.tx()` together with its event; {@link ThreadRecords.transition} is the only code
 * that assigns a thread's state. Statements go through the store-neutral door `store.sql`
 * (portable SQL, `?`/`@name` placeholders) and run on SQLite and PostgreSQL alike.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import type { SqlArgs, SqlParam, SqlRunResult, Store } from "../store/index.js";
import { ThreadEvent } from "./events.js";
import { canTransition, isThreadState, type ThreadState } from "./states.js";

export interface ThreadBudget {
  max_tokens: number;
  max_duration_ms: number;
  max_cost_usd: number;
  max_steps: number;
}

export interface ThreadRow {
  thread_id: string;
  goal: string;
  project: string | null;
  /** `conversation`, `mission:<name>`, `test`. */
  kind: string;
  parent_thread_id: string | null;
  state: ThreadState;
  model: string | null;
  orchestrator_version: number | null;
  step_count: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** JSON of {@link ThreadBudget}. */
  budget: string;
  final_result: string | null;
  reason: string | null;
  cancel_requested: number;
  /** `<pid>@<host>` of the process driving it, or null. */
  driver: string | null;
  driver_heartbeat_ms: number | null;
  started_ms: number | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** JSON of the object the orchestrator passed to FINAL (`{outcome, response, …}`), or null. */
  final_outcome?: string | null;
  /** Why the orchestrator version that ran was chosen (`stored`, `self_modify off: …`). */
  orchestrator_why?: string | null;
}

export interface MessageRow {
  id: number;
  thread_id: string;
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  /** JSON array of `{id, name, args}` on assistant messages with tool calls. */
  tool_calls: string | null;
  call_id: string | null;
  tool_name: string | null;
  is_error: number;
  created_at: string;
}

export interface CheckpointRow {
  thread_id: string;
  seq: number;
  vm: Buffer;
  call_name: string;
  call_args: string;
  answered: number;
  answer: string | null;
  script_state: string | null;
  updated_at: string;
}

export type ThreadPatch = Partial<
  Pick<
    ThreadRow,
    | "orchestrator_version"
    | "final_result"
    | "reason"
    | "driver"
    | "driver_heartbeat_ms"
    | "started_ms"
    | "cancel_requested"
    | "model"
    | "final_outcome"
    | "orchestrator_why"
  >
>;

/** The placeholder `thread_checkpoints.vm` (the bytes live in `thread_vms`). */
const EMPTY = Buffer.alloc(0);

/** `thread_journal.call_name` of a row holding several calls' answers ({@link ThreadRecords.journalMany}). */
export const JOURNAL_BATCH = "*batch";

/**
 * One statement of the thread tables, called like a prepared statement: `get/all/run(...args)`
 * with positional arguments, or with one object for `@name` placeholders.
 */
export interface ThreadStatement {
  get(...args: unknown[]): unknown;
  all(...args: unknown[]): unknown[];
  run(...args: unknown[]): SqlRunResult;
}

const isNamedArg = (v: unknown): v is Record<string, SqlParam> =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);

/** The arguments of a {@link ThreadStatement} call as {@link SqlArgs}. */
function argsOf(a: readonly unknown[]): SqlArgs {
  return a.length === 1 && isNamedArg(a[0]) ? a[0] : (a as SqlParam[]);
}

/** A new row id: one above the highest, handed out under the store's write lock (commit order, no gaps). */
export const nextId = (table: string) => `(SELECT COALESCE(MAX(id), 0) + 1 FROM ${table})`;

/** Threads, their messages and checkpoints. Actions and approvals: {@link ThreadStore}. */
export class ThreadRecords {
  readonly #stmts = new Map<string, ThreadStatement>();

  constructor(
    readonly store: Store,
    readonly now: () => string = () => new Date().toISOString(),
  ) {}

  /** Whether the store is PostgreSQL (for the few statements that differ). */
  get postgres(): boolean {
    return this.store.sql.dialect === "postgres";
  }

  /**
   * A statement on the store's SQL door. A write outside a transaction runs in one of its own
   * (`store.tx`), so on PostgreSQL it too holds the workspace write lock, as every SQLite write does.
   */
  sql(sql: string): ThreadStatement {
    let s = this.#stmts.get(sql);
    if (!s) {
      const port = this.store.sql;
      const write = (fn: () => SqlRunResult) =>
        port.dialect === "postgres" && !port.inTransaction ? this.store.tx(fn) : fn();
      s = {
        get: (...a) => port.get(sql, argsOf(a)),
        all: (...a) => port.all(sql, argsOf(a)),
        run: (...a) => write(() => port.run(sql, argsOf(a))),
      };
      this.#stmts.set(sql, s);
    }
    return s;
  }

  /** Runs an `INSERT … RETURNING id` (in a transaction) and returns the id. */
  insertReturningId(sql: string, args: SqlArgs): number {
    return this.tx(() => {
      const r = this.store.sql.get<{ id: number }>(sql, args);
      if (!r) throw new RatchetError(ErrorCode.Internal, `no id returned by ${sql.slice(0, 40)}…`);
      return Number(r.id);
    });
  }

  tx<T>(fn: () => T): T {
    return this.store.tx(fn);
  }

  event(threadId: string, type: string, payload: Record<string, unknown> = {}): number {
    return this.store.appendEvent({ entityKind: "thread", entityId: threadId, type, payload });
  }

  insertThread(row: ThreadRow): void {
    this.tx(() => {
      this.sql(
        `INSERT INTO threads (thread_id, goal, project, kind, parent_thread_id, state, model, orchestrator_version, step_count,
           input_tokens, output_tokens, cost_usd, budget, final_result, reason, cancel_requested, driver, driver_heartbeat_ms,
           started_ms, created_at, updated_at, finished_at)
         VALUES (@thread_id, @goal, @project, @kind, @parent_thread_id, @state, @model, @orchestrator_version, @step_count,
           @input_tokens, @output_tokens, @cost_usd, @budget, @final_result, @reason, @cancel_requested, @driver, @driver_heartbeat_ms,
           @started_ms, @created_at, @updated_at, @finished_at)`,
      ).run(row);
      this.event(row.thread_id, ThreadEvent.Created, {
        goal: row.goal,
        project: row.project,
        kind: row.kind,
        parent_thread_id: row.parent_thread_id,
        state: row.state,
      });
    });
  }

  get(threadId: string): ThreadRow | undefined {
    return this.sql("SELECT * FROM threads WHERE thread_id = ?").get(threadId) as ThreadRow | undefined;
  }

  /** @throws RatchetError `not_found` naming the thread. */
  require(threadId: string): ThreadRow {
    const t = this.get(threadId);
    if (!t) throw new RatchetError(ErrorCode.NotFound, `thread ${threadId} not found`, { threadId });
    return t;
  }

  /** Whether a cancel was asked (a narrow read: the driver asks before every host call). */
  cancelRequested(threadId: string): boolean {
    const r = this.sql("SELECT cancel_requested FROM threads WHERE thread_id = ?").get(threadId) as
      | { cancel_requested: number }
      | undefined;
    return r?.cancel_requested === 1;
  }

  list(q: { state?: string; kind?: string; limit?: number } = {}): ThreadRow[] {
    const where: string[] = [];
    const args: SqlParam[] = [];
    if (q.state) {
      where.push("state = ?");
      args.push(q.state);
    }
    if (q.kind) {
      where.push("kind = ?");
      args.push(q.kind);
    }
    const sql = `SELECT * FROM threads ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, thread_id DESC LIMIT ?`;
    return this.store.sql.all<ThreadRow>(sql, [...args, q.limit ?? 50]);
  }

  nonTerminal(): ThreadRow[] {
    return this.sql(
      "SELECT * FROM threads WHERE state IN ('created', 'running', 'waiting', 'suspended')",
    ).all() as ThreadRow[];
  }

  patch(threadId: string, p: ThreadPatch): void {
    const keys = Object.keys(p);
    if (keys.length === 0) return;
    const set = keys.map((k) => `${k} = @${k}`).join(", ");
    this.sql(`UPDATE threads SET ${set}, updated_at = @updated_at WHERE thread_id = @thread_id`).run({
      ...p,
      updated_at: this.now(),
      thread_id: threadId,
    });
  }

  /**
   * The one guarded state change: checks the table, writes the row and `thread.state_changed` in
   * one transaction. `expect` (optional) refuses when the stored state is not one of them.
   * @throws RatchetError `illegal_transition` naming both states.
   */
  transition(
    threadId: string,
    to: ThreadState,
    opts: { reason?: string | null; patch?: ThreadPatch; expect?: readonly ThreadState[] } = {},
  ): ThreadRow {
    return this.tx(() => {
      const t = this.require(threadId);
      if (!isThreadState(t.state))
        throw new RatchetError(ErrorCode.Internal, `thread ${threadId} has state ${t.state}`);
      if ((opts.expect && !opts.expect.includes(t.state)) || !canTransition(t.state, to)) {
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `thread ${threadId} cannot move from ${t.state} to ${to}`,
          { threadId, from: t.state, to },
        );
      }
      const now = this.now();
      const terminal = to === "done" || to === "failed" || to === "completed";
      const reason = opts.reason === undefined ? t.reason : opts.reason;
      this.patch(threadId, { ...opts.patch, reason });
      this.sql(
        "UPDATE threads SET state = ?, finished_at = COALESCE(?, finished_at) WHERE thread_id = ?",
      ).run(to, terminal ? now : null, threadId);
      this.event(threadId, ThreadEvent.StateChanged, {
        from: t.state,
        to,
        reason: opts.reason ?? null,
        project: t.project,
        kind: t.kind,
      });
      return this.require(threadId);
    });
  }

  /** The driver recorded on a thread (`<pid>@<host>`), or null. */
  driverOf(threadId: string): string | null {
    const r = this.sql("SELECT driver FROM threads WHERE thread_id = ?").get(threadId) as
      | { driver: string | null }
      | undefined;
    return r?.driver ?? null;
  }

  /** Renews `driver`'s heartbeat; false when the thread no longer names it (another process took it). */
  heartbeat(threadId: string, driver: string, nowMs: number): boolean {
    return (
      this.sql("UPDATE threads SET driver_heartbeat_ms = ? WHERE thread_id = ? AND driver = ?").run(
        nowMs,
        threadId,
        driver,
      ).changes > 0
    );
  }

  addTokens(threadId: string, input: number, output: number, costUsd: number): void {
    this.sql(
      "UPDATE threads SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cost_usd = cost_usd + ?, updated_at = ? WHERE thread_id = ?",
    ).run(input, output, costUsd, this.now(), threadId);
  }

  addStep(threadId: string): number {
    this.sql("UPDATE threads SET step_count = step_count + 1, updated_at = ? WHERE thread_id = ?").run(
      this.now(),
      threadId,
    );
    return this.require(threadId).step_count;
  }

  // --- messages -------------------------------------------------------------------------------

  addMessage(m: Omit<MessageRow, "id" | "created_at">): number {
    return this.tx(() => {
      const id = this.insertReturningId(
        `INSERT INTO thread_messages (id, thread_id, role, content, tool_calls, call_id, tool_name, is_error, created_at)
         VALUES (${nextId("thread_messages")}, @thread_id, @role, @content, @tool_calls, @call_id, @tool_name, @is_error, @created_at)
         RETURNING id`,
        { ...m, created_at: this.now() },
      );
      this.event(m.thread_id, ThreadEvent.Message, {
        role: m.role,
        call_id: m.call_id,
        tool_name: m.tool_name,
        is_error: m.is_error === 1,
        chars: m.content.length,
      });
      return id;
    });
  }

  /** Role and content of the newest message (what `__add_message__` compares with). */
  lastRoleContent(threadId: string): { role: string; content: string } | undefined {
    return this.sql(
      "SELECT role, content FROM thread_messages WHERE thread_id = ? ORDER BY id DESC LIMIT 1",
    ).get(threadId) as { role: string; content: string } | undefined;
  }

  lastMessage(threadId: string): MessageRow | undefined {
    return this.sql("SELECT * FROM thread_messages WHERE thread_id = ? ORDER BY id DESC LIMIT 1").get(
      threadId,
    ) as MessageRow | undefined;
  }

  messagesAfter(threadId: string, afterId: number): MessageRow[] {
    return this.sql("SELECT * FROM thread_messages WHERE thread_id = ? AND id > ? ORDER BY id").all(
      threadId,
      afterId,
    ) as MessageRow[];
  }

  messages(threadId: string): MessageRow[] {
    return this.sql("SELECT * FROM thread_messages WHERE thread_id = ? ORDER BY id").all(
      threadId,
    ) as MessageRow[];
  }

  hasResult(threadId: string, callId: string): boolean {
    return (
      this.sql("SELECT 1 FROM thread_messages WHERE thread_id = ? AND role = 'tool' AND call_id = ?").get(
        threadId,
        callId,
      ) !== undefined
    );
  }

  /**
   * Every tool call of the conversation without a result gets one: an error saying why it did not
   * run. Only messages after `afterId` are looked at (results always follow their call). Returns
   * the id below which every call has its result, for the next look.
   */
  fillMissingResults(threadId: string, why: string, afterId = 0): number {
    const rows = this.messagesAfter(threadId, afterId);
    const answered = new Set(rows.filter((m) => m.role === "tool").map((m) => m.call_id));
    const open: { id: string; name: string }[] = [];
    for (const m of rows) {
      if (m.role !== "assistant" || m.tool_calls === null) continue;
      for (const c of JSON.parse(m.tool_calls) as { id: string; name: string }[])
        if (!answered.has(c.id)) open.push(c);
    }
    if (open.length > 0)
      this.tx(() => {
        for (const c of open) {
          if (this.hasResult(threadId, c.id)) continue;
          this.addMessage({
            thread_id: threadId,
            role: "tool",
            content: why,
            tool_calls: null,
            call_id: c.id,
            tool_name: c.name,
            is_error: 1,
          });
        }
      });
    return this.lastMessage(threadId)?.id ?? afterId;
  }

  // --- injected messages --------------------------------------------------------------------

  /** Queues a message for a thread; the orchestrator gets it from `__check_signals__`. */
  inject(threadId: string, content: string): number {
    return this.insertReturningId(
      `INSERT INTO thread_inbox (id, thread_id, content, created_at) VALUES (${nextId("thread_inbox")}, ?, ?, ?) RETURNING id`,
      [threadId, content, this.now()],
    );
  }

  /** Whether a cancel was asked, and the oldest injected message not delivered yet (one read). */
  signals(threadId: string): { cancel: boolean; next: { id: number; content: string } | undefined } {
    const r = this.sql(
      `SELECT t.cancel_requested AS cancel, i.id AS id, i.content AS content FROM threads t
       LEFT JOIN (SELECT id, content FROM thread_inbox WHERE thread_id = ? AND delivered_at IS NULL ORDER BY id LIMIT 1) i ON 1 = 1
       WHERE t.thread_id = ?`,
    ).get(threadId, threadId) as { cancel: number; id: number | null; content: string | null } | undefined;
    return {
      cancel: r?.cancel === 1,
      next: r && r.id !== null ? { id: r.id, content: r.content ?? "" } : undefined,
    };
  }

  markDelivered(id: number): void {
    this.sql("UPDATE thread_inbox SET delivered_at = ? WHERE id = ?").run(this.now(), id);
  }

  // --- checkpoints ----------------------------------------------------------------------------

  saveCheckpoint(
    c: Omit<CheckpointRow, "updated_at" | "script_state"> & { script_state?: string | null },
  ): void {
    // The VM's bytes go to `thread_vms` (migration 9); the checkpoint row keeps the small fields.
    this.tx(() => {
      const { vm, ...row } = c;
      this.sql(
        `INSERT INTO thread_checkpoints (thread_id, seq, vm, call_name, call_args, answered, answer, script_state, updated_at)
         VALUES (@thread_id, @seq, @empty, @call_name, @call_args, @answered, @answer, @script_state, @updated_at)
         ON CONFLICT(thread_id) DO UPDATE SET seq = excluded.seq, call_name = excluded.call_name,
           call_args = excluded.call_args, answered = excluded.answered, answer = excluded.answer,
           script_state = COALESCE(excluded.script_state, thread_checkpoints.script_state), updated_at = excluded.updated_at`,
      ).run({ script_state: null, ...row, empty: EMPTY, updated_at: this.now() });
      this.sql(
        "INSERT INTO thread_vms (thread_id, vm) VALUES (?, ?) ON CONFLICT(thread_id) DO UPDATE SET vm = excluded.vm",
      ).run(c.thread_id, vm);
    });
  }

  /** Marks the saved VM's pending call answered, without writing the VM again. */
  markAnswered(threadId: string, seq: number, answer: string): void {
    this.sql(
      "UPDATE thread_checkpoints SET answered = 1, answer = ?, updated_at = ? WHERE thread_id = ? AND seq = ?",
    ).run(answer, this.now(), threadId, seq);
  }

  /** Records the answer of a host call made after the saved VM (replayed on resume). */
  journal(threadId: string, seq: number, callName: string, answer: string): void {
    this.sql(
      `INSERT INTO thread_journal (thread_id, seq, call_name, answer) VALUES (?, ?, ?, ?)
       ON CONFLICT (thread_id, seq) DO UPDATE SET call_name = excluded.call_name, answer = excluded.answer`,
    ).run(threadId, seq, callName, answer);
  }

  /**
   * Records the answers of several host calls (a group commit's) in one row: `call_name`
   * {@link JOURNAL_BATCH}, `seq` the first call's, `answer` `[[seq, name, answer], …]` with each
   * answer's JSON as it is. One row is read back as the calls it holds.
   */
  journalMany(threadId: string, rows: readonly { seq: number; name: string; answer: string }[]): void {
    const first = rows[0];
    if (!first) return;
    if (rows.length === 1) this.journal(threadId, first.seq, first.name, first.answer);
    else {
      const text = `[${rows.map((r) => `[${r.seq},${JSON.stringify(r.name)},${r.answer}]`).join(",")}]`;
      this.journal(threadId, first.seq, JOURNAL_BATCH, text);
    }
  }

  /** The journal after the saved VM, in call order (batched rows read back as their calls). */
  journalAfter(threadId: string, seq: number): { seq: number; call_name: string; answer: string }[] {
    const rows = this.sql(
      "SELECT seq, call_name, answer FROM thread_journal WHERE thread_id = ? AND seq > ? ORDER BY seq",
    ).all(threadId, seq) as { seq: number; call_name: string; answer: string }[];
    return rows.flatMap((r) =>
      r.call_name === JOURNAL_BATCH
        ? (JSON.parse(r.answer) as [number, string, unknown][]).map(([s, name, a]) => ({
            seq: s,
            call_name: name,
            answer: JSON.stringify(a),
          }))
        : [r],
    );
  }

  clearJournal(threadId: string): void {
    this.sql("DELETE FROM thread_journal WHERE thread_id = ?").run(threadId);
  }

  checkpoint(threadId: string): CheckpointRow | undefined {
    return this.sql(
      `SELECT c.thread_id, c.seq, v.vm, c.call_name, c.call_args, c.answered, c.answer, c.script_state, c.updated_at
       FROM thread_checkpoints c JOIN thread_vms v USING (thread_id) WHERE c.thread_id = ?`,
    ).get(threadId) as CheckpointRow | undefined;
  }

  setScriptState(threadId: string, state: string): void {
    this.sql("UPDATE thread_checkpoints SET script_state = ?, updated_at = ? WHERE thread_id = ?").run(
      state,
      this.now(),
      threadId,
    );
  }
}
