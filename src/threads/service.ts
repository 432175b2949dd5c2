/**
 * The thread service: the functions the CLI and the HTTP routes call (start, resume, approve,
 * deny, cancel, list, show, recover). Thin edges parse input, call these, and print.
 */
import { randomBytes } from "node:crypto";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { ModelClient } from "../model/index.js";
import type { Store } from "../store/index.js";
import type { ActionProvider } from "./actions.js";
import { approvalToDecide } from "./approvals.js";
import { compileThreadsConfig, type ThreadsConfig } from "./config.js";
import { DocKind, Documents } from "./documents.js";
import {
  type DriveEvent,
  type DriveResult,
  Driver,
  driverAlive,
  type EngineDeps,
  thisDriver,
} from "./engine.js";
import { ThreadEvent } from "./events.js";
import { dispatchMissions, type MissionReport } from "./missions.js";
import { type RecoveredThread, recoverThreads } from "./recovery.js";
import { isResumable, isTerminal, isThreadState } from "./states.js";
import {
  type ActionRow,
  type ApprovalRow,
  type MessageRow,
  type ThreadBudget,
  type ThreadRow,
  ThreadStore,
} from "./thread-store.js";
import { OrchestratorVersions } from "./versions.js";
import type { VmFactory, VmLimits } from "./vm.js";

export interface ThreadServiceOptions {
  store: Store;
  /** Default: every default of the `threads` config section. */
  config?: ThreadsConfig;
  /** Makes the action provider of one drive (closed after it). Default: no actions. */
  actions?: () => ActionProvider;
  /** Makes the model client for a thread's model (`provider:model`, or undefined for the default). */
  model?: (model: string | undefined) => ModelClient;
  vm?: VmFactory;
  limits?: Partial<VmLimits>;
  onEvent?: (e: DriveEvent) => void;
  approvalWaitMs?: number;
  signal?: AbortSignal;
  nowMs?: () => number;
  driverId?: string;
  /** Run the learning missions after a thread completes. Default: `config.missions.enabled`. */
  missions?: boolean;
}

export interface StartOptions {
  project?: string;
  model?: string;
  kind?: string;
  parentThreadId?: string;
  budget?: Partial<ThreadBudget>;
}

export interface ThreadDetail {
  thread: ThreadRow;
  messages: MessageRow[];
  actions: ActionRow[];
  approvals: ApprovalRow[];
  checkpoint: { seq: number; call: string; answered: boolean; bytes: number; script_state: unknown } | null;
  /** The object the orchestrator passed to FINAL, or null. */
  outcome: Record<string, unknown> | null;
  /** Which orchestrator version ran and why that one. */
  orchestrator: { version: number | null; why: string | null };
  /** Calls waiting for a decision, with their arguments. */
  pending: { approval_id: string; call_id: string; action: string; args: unknown; created_at: string }[];
}

const NO_ACTIONS: ActionProvider = { list: async () => [], call: async () => null, close: async () => {} };

export function newThreadId(): string {
  return `th-${randomBytes(6).toString("hex")}`;
}

export class ThreadService {
  readonly threads: ThreadStore;
  readonly docs: Documents;
  readonly versions: OrchestratorVersions;
  readonly config: ThreadsConfig;
  readonly #o: ThreadServiceOptions;
  /** Reports of the missions the last drives fired. */
  readonly missionReports: MissionReport[] = [];

  constructor(opts: ThreadServiceOptions) {
    this.#o = opts;
    this.threads = new ThreadStore(opts.store);
    this.docs = new Documents(this.threads);
    this.versions = new OrchestratorVersions(this.threads, this.docs);
    this.config = opts.config ?? compileThreadsConfig(undefined);
  }

  #nowMs(): number {
    return (this.#o.nowMs ?? Date.now)();
  }

  /** Records a new thread (Created) with its leases. */
  create(goal: string, opts: StartOptions = {}): ThreadRow {
    if (typeof goal !== "string" || goal.trim() === "")
      throw new RatchetError(ErrorCode.InvalidValue, "goal must be a non-empty text", { field: "goal" });
    const now = this.threads.now();
    const row: ThreadRow = {
      thread_id: newThreadId(),
      goal,
      project: opts.project ?? null,
      kind: opts.kind ?? "conversation",
      parent_thread_id: opts.parentThreadId ?? null,
      state: "created",
      model: opts.model ?? null,
      orchestrator_version: null,
      step_count: 0,
      input_tokens: 0,
      output_tokens: 0,
      cost_usd: 0,
      budget: JSON.stringify({ ...this.config.budget, ...opts.budget }),
      final_result: null,
      reason: null,
      cancel_requested: 0,
      driver: null,
      driver_heartbeat_ms: null,
      started_ms: null,
      created_at: now,
      updated_at: now,
      finished_at: null,
    };
    this.threads.tx(() => {
      this.threads.insertThread(row);
      for (const l of this.config.leases)
        this.threads.insertLease({
          lease_id: `ls-${randomBytes(5).toString("hex")}`,
          thread_id: row.thread_id,
          pattern: l.actions,
          uses_left: l.uses,
          expires_ms: l.ttlSeconds ? this.#nowMs() + l.ttlSeconds * 1000 : null,
          created_at: now,
        });
    });
    return row;
  }

  /** Creates a thread and drives it until it ends or waits past the approval wait. */
  async start(goal: string, opts: StartOptions = {}): Promise<DriveResult> {
    const row = this.create(goal, opts);
    return this.#drive(row.thread_id, "start");
  }

  /**
   * Drives a thread recorded by {@link create} (state Created).
   * @throws RatchetError `illegal_transition` when it is not Created.
   */
  async run(threadId: string): Promise<DriveResult> {
    const t = this.threads.require(threadId);
    if (t.state !== "created")
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `thread ${threadId} was already started (${t.state})`,
        {
          threadId,
          from: t.state,
          to: "running",
        },
      );
    return this.#drive(threadId, "start");
  }

  /**
   * Continues a Waiting or Suspended thread from its saved VM.
   * @throws RatchetError `not_found`; `illegal_transition` "thread <id> is not resumable from <state>",
   *   or when a live process drives it.
   */
  async resume(threadId: string): Promise<DriveResult> {
    this.recover();
    const t = this.threads.require(threadId);
    if (!isResumable(t.state))
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `thread ${threadId} is not resumable from ${t.state}`,
        {
          threadId,
          from: t.state,
          to: "running",
        },
      );
    if (driverAlive(t, this.#nowMs()) && t.driver !== (this.#o.driverId ?? thisDriver()))
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `thread ${threadId} is being driven by process ${t.driver}`,
        {
          threadId,
          from: t.state,
          to: "running",
        },
      );
    return this.#drive(threadId, "resume");
  }

  async #drive(threadId: string, mode: "start" | "resume"): Promise<DriveResult> {
    const t = this.threads.require(threadId);
    const actions = (this.#o.actions ?? (() => NO_ACTIONS))();
    let client: ModelClient | undefined;
    // An accepted prompt change (a `prompt` document titled system_prompt) replaces the configured prompt.
    const prompt = this.docs.find(DocKind.Prompt, "system_prompt");
    const deps: EngineDeps = {
      threads: this.threads,
      docs: this.docs,
      versions: this.versions,
      config: prompt ? { ...this.config, systemPrompt: prompt.content } : this.config,
      actions,
      model: () => {
        if (!client) {
          if (!this.#o.model)
            throw new RatchetError(ErrorCode.InvalidValue, "no model configured for threads", {
              field: "model",
            });
          client = this.#o.model(t.model ?? undefined);
        }
        return client;
      },
      ...(this.#o.vm ? { vm: this.#o.vm } : {}),
      ...(this.#o.limits ? { limits: this.#o.limits } : {}),
      ...(this.#o.onEvent ? { onEvent: this.#o.onEvent } : {}),
      ...(this.#o.approvalWaitMs !== undefined ? { approvalWaitMs: this.#o.approvalWaitMs } : {}),
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
      ...(this.#o.nowMs ? { nowMs: this.#o.nowMs } : {}),
      ...(this.#o.driverId ? { driverId: this.#o.driverId } : {}),
      subAgent: async (goal, parentThreadId) => {
        const r = await this.start(goal, {
          kind: "subagent",
          parentThreadId,
          ...(t.project ? { project: t.project } : {}),
        });
        return r.outcome === "completed"
          ? { ok: true, answer: r.thread.final_result ?? "" }
          : {
              ok: false,
              answer: `the sub-agent thread ${r.thread.thread_id} ended ${r.outcome}: ${r.thread.reason ?? ""}`,
            };
      },
    };
    let result: DriveResult;
    try {
      result = await new Driver(deps, threadId).drive(mode);
    } finally {
      await actions.close();
    }
    if (result.outcome === "completed" && (this.#o.missions ?? this.config.missions.enabled)) {
      this.missionReports.push(...(await dispatchMissions(this)));
      result = { ...result, thread: this.threads.require(threadId) };
    }
    return result;
  }

  /**
   * Approves the pending call of a thread (exactly that call id and parameters). `always` also adds
   * a standing grant for the action in the thread's project.
   * @throws RatchetError `not_found` (thread / approval), `illegal_transition` (already decided).
   */
  approve(
    threadId: string,
    opts: { approvalId?: string; always?: boolean; by?: string; reason?: string } = {},
  ): { approval: ApprovalRow; driven: boolean } {
    return this.#decide(threadId, "approved", opts);
  }

  /** Denies the pending call: the script gets a PermissionError it can catch. Same errors as approve. */
  deny(
    threadId: string,
    opts: { approvalId?: string; by?: string; reason?: string } = {},
  ): { approval: ApprovalRow; driven: boolean } {
    return this.#decide(threadId, "denied", opts);
  }

  #decide(
    threadId: string,
    status: "approved" | "denied",
    opts: { approvalId?: string; always?: boolean; by?: string; reason?: string },
  ): { approval: ApprovalRow; driven: boolean } {
    const approval = this.threads.tx(() => {
      const a = approvalToDecide(this.threads, threadId, opts.approvalId, this.#nowMs());
      const by = opts.by ?? (process.env.USER || "cli");
      this.threads.decideApproval(a.approval_id, status, Boolean(opts.always), by, opts.reason ?? null);
      const t = this.threads.require(threadId);
      if (status === "approved" && opts.always)
        this.threads.addGrant(a.action, t.project ?? "", a.approval_id);
      this.threads.event(threadId, ThreadEvent.ApprovalDecided, {
        approval_id: a.approval_id,
        call_id: a.call_id,
        action: a.action,
        status,
        always: Boolean(opts.always),
        by,
        reason: opts.reason ?? null,
      });
      return this.threads.approval(a.approval_id)!;
    });
    return { approval, driven: driverAlive(this.threads.require(threadId), this.#nowMs()) };
  }

  /**
   * Cancels a thread: at once when no live process drives it, else at that driver's next host call.
   * @throws RatchetError `illegal_transition` for a thread that already ended.
   */
  cancel(threadId: string, reason = "cancelled by user"): ThreadRow {
    this.recover();
    return this.threads.tx(() => {
      const t = requireLive(this.threads.require(threadId), "failed");
      this.threads.patch(threadId, { cancel_requested: 1 });
      this.threads.event(threadId, ThreadEvent.CancelRequested, { reason });
      if (driverAlive(t, this.#nowMs())) return this.threads.require(threadId);
      this.threads.fillMissingResults(threadId, `not run: the thread was cancelled (${reason})`);
      return this.threads.transition(threadId, "failed", { reason });
    });
  }

  /**
   * Revokes the standing grant an `--always` approval gave `action` in `project` (default: no
   * project): the next call asks again.
   * @throws RatchetError `not_found` when there is no such grant.
   */
  revoke(action: string, project = ""): { action: string; project: string } {
    return this.threads.tx(() => {
      if (!this.threads.revokeGrant(action, project))
        throw new RatchetError(
          ErrorCode.NotFound,
          `no standing grant for action ${action}${project ? ` in project ${project}` : " (no project)"}`,
          { field: "action" },
        );
      this.threads.store.appendEvent({
        entityKind: "grant",
        entityId: `${project}:${action}`,
        type: ThreadEvent.GrantRevoked,
        payload: { action, project },
      });
      return { action, project };
    });
  }

  /**
   * Queues a message for a thread that has not ended; its orchestrator gets it from
   * `__check_signals__` at its next step (the message is then part of the conversation).
   * @throws RatchetError `invalid_value` (empty text), `not_found`, `illegal_transition` (ended).
   */
  inject(threadId: string, content: string): { thread: ThreadRow; inboxId: number } {
    if (typeof content !== "string" || content.trim() === "")
      throw new RatchetError(ErrorCode.InvalidValue, "message must be a non-empty text", {
        field: "message",
      });
    this.recover();
    return this.threads.tx(() => {
      const t = requireLive(this.threads.require(threadId), "running");
      const inboxId = this.threads.inject(threadId, content);
      this.threads.event(threadId, ThreadEvent.MessageInjected, {
        inbox_id: inboxId,
        queued: true,
        chars: content.length,
      });
      return { thread: t, inboxId };
    });
  }

  /** @throws RatchetError `invalid_value` for an unknown state or a limit outside 1–1000. */
  list(q: { state?: string; kind?: string; limit?: number } = {}): ThreadRow[] {
    if (q.state !== undefined && !isThreadState(q.state))
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `state must be one of created, running, waiting, suspended, completed, done, failed (got ${JSON.stringify(q.state)})`,
        { field: "state" },
      );
    if (q.limit !== undefined && (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > 1000))
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `limit must be an integer from 1 to 1000 (got ${q.limit})`,
        {
          field: "limit",
        },
      );
    this.recover();
    return this.threads.list(q);
  }

  show(threadId: string): ThreadDetail {
    this.recover();
    const thread = this.threads.require(threadId);
    const cp = this.threads.checkpoint(threadId);
    const approvals = this.threads.approvals(threadId);
    return {
      thread,
      outcome: thread.final_outcome ? (JSON.parse(thread.final_outcome) as Record<string, unknown>) : null,
      orchestrator: { version: thread.orchestrator_version, why: thread.orchestrator_why ?? null },
      pending: approvals
        .filter((a) => a.status === "pending")
        .map((a) => ({
          approval_id: a.approval_id,
          call_id: a.call_id,
          action: a.action,
          args: JSON.parse(a.args) as unknown,
          created_at: a.created_at,
        })),
      messages: this.threads.messages(threadId),
      actions: this.threads.actions(threadId),
      approvals,
      checkpoint: cp
        ? {
            seq: cp.seq,
            call: cp.call_name,
            answered: cp.answered === 1,
            bytes: cp.vm.length,
            script_state: cp.script_state ? JSON.parse(cp.script_state) : null,
          }
        : null,
    };
  }

  /**
   * Restart recovery for threads whose driver is gone: Waiting with a pending approval stays;
   * Running with a checkpoint becomes Suspended; other non-terminal threads fail.
   */
  recover(): RecoveredThread[] {
    return recoverThreads(this.threads, this.#nowMs());
  }
}

/**
 * `t` when it has not ended yet.
 * @throws RatchetError `illegal_transition` (from its state to `to`) for a thread that already ended.
 */
function requireLive(t: ThreadRow, to: string): ThreadRow {
  if (isTerminal(t.state) || t.state === "completed")
    throw new RatchetError(ErrorCode.IllegalTransition, `thread ${t.thread_id} already ended (${t.state})`, {
      threadId: t.thread_id,
      from: t.state,
      to,
    });
  return t;
}
