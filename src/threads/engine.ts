/**
 * The driver of one thread: claims it, runs its orchestrator VM from host call to host call, saves
 * the paused VM before every call that reaches outside the process and together with the effects
 * of every call that writes, waits (VM paused, saved) for approvals, and ends the thread with the
 * reason. See ARCHITECTURE.md for the ordering guarantees.
 */
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, RatchetError } from "../core/index.js";
import { resultText } from "./action-keys.js";
import { ThreadEvent } from "./events.js";
import { type HostAnswer, HostCalls } from "./host.js";
import { countSkillUse } from "./host-skills.js";
import {
  type DriveOutcome,
  type EngineDeps,
  type HostContext,
  type HostResult,
  isStop,
} from "./host-types.js";
import {
  APPROVAL_POLL_MS,
  DEFAULT_APPROVAL_WAIT_MS,
  DRIVER_HEARTBEAT_MS,
  DRIVER_LEASE_MS,
  GROUP_COMMIT_MAX_MS,
  GROUP_COMMIT_MAX_WRITES,
  MAX_HOST_CALLS,
  ORCHESTRATOR_MAX_ALLOCATIONS,
  ORCHESTRATOR_MAX_DURATION_SECS,
  ORCHESTRATOR_MAX_MEMORY_BYTES,
  ORCHESTRATOR_MAX_RECURSION,
  SKILLS_MAX_ACTIVE,
  SKILLS_TOKEN_BUDGET,
  SNAPSHOT_AFTER_CALLS,
} from "./limits.js";
import { interpretOutcome } from "./outcome.js";
import type { ApprovalRow, ThreadRow } from "./thread-store.js";
import { montyVm, type PausedVm, VmError, type VmFactory, type VmLimits } from "./vm.js";

export type { DriveEvent, DriveOutcome, EngineDeps } from "./host-types.js";

export interface DriveResult {
  outcome: DriveOutcome;
  thread: ThreadRow;
}

export function thisDriver(): string {
  return `${process.pid}@${hostname()}`;
}

/** Whether the driver recorded on a thread is still alive (same host: its pid; else its heartbeat). */
export function driverAlive(t: ThreadRow, nowMs: number): boolean {
  if (!t.driver) return false;
  const at = t.driver.indexOf("@");
  const pid = Number(t.driver.slice(0, at));
  const host = t.driver.slice(at + 1);
  if (host === hostname() && Number.isInteger(pid)) {
    if (pid === process.pid) return true;
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "EPERM";
    }
  }
  return t.driver_heartbeat_ms !== null && nowMs - t.driver_heartbeat_ms < DRIVER_LEASE_MS;
}

/** Calls that reach outside the process (or wait): the VM is saved before them. */
const EXTERNAL = new Set(["__execute_action__", "__execute_actions_parallel__", "__execute_code_step__"]);

/**
 * Calls whose answer is a function of their arguments alone: not journaled, a resume computes them
 * again (and gets the same answer), so they cost no row.
 */
const PURE = new Set(["__regex_match__"]);

type JournalRow = { seq: number; name: string; answer: string };

export class Driver {
  readonly #d: EngineDeps;
  readonly #vm: VmFactory;
  readonly #me: string;
  readonly #now: () => number;
  readonly #host: HostCalls;
  #seq = 0;
  /** Answers of the host calls made after the saved VM, to hand back on resume (call order). */
  #replay: { seq: number; call_name: string; answer: string }[] = [];
  /** Whether the thread has a saved VM (then writes and reads are journaled instead of saved). */
  #hasSnapshot = false;
  /** Saves the VM at the current action call (set while a call that may wait for an approval runs). */
  #saveBeforeWait: (() => void) | null = null;
  /** The number of the host call the saved VM is paused at. */
  #snapshotSeq = 0;
  /**
   * Reads since the last write, journaled with the next write (a crash before it loses nothing
   * that matters: no later answer depends on them).
   */
  #reads: JournalRow[] = [];
  /**
   * The open group-commit transaction (ARCHITECTURE.md, "Group commit"): the writes of the
   * synchronous host calls since it began, and their journal rows, written just before it commits.
   */
  #batch: { openedMs: number; writes: number; journal: JournalRow[] } | null = null;
  #lastHostError: string | null = null;
  /**
   * Set when the script runs again from the top after a code step's gate: the writes that go with
   * the new VM's first saved checkpoint (the gated call's result for `__check_signals__`).
   */
  #restartEffects: (() => void) | null = null;
  #version = 0;
  /** Whether this driver wrote its claim on the thread (only then does it heartbeat and release it). */
  #claimed = false;
  /** Set when a heartbeat found the thread claimed by another process. */
  #lost = false;

  constructor(
    deps: EngineDeps,
    readonly threadId: string,
  ) {
    this.#d = deps;
    this.#vm = deps.vm ?? montyVm;
    this.#me = deps.driverId ?? thisDriver();
    this.#now = deps.nowMs ?? Date.now;
    this.#host = new HostCalls(deps, threadId, {
      waitForDecision: (approvalId) => this.#waitForDecision(approvalId),
      hostError: (msg) => {
        this.#lastHostError = msg;
      },
    });
  }

  /** Runs the thread from Created, or resumes it from Waiting / Suspended. */
  async drive(mode: "start" | "resume"): Promise<DriveResult> {
    const r = await this.#drive(mode);
    return { ...r, thread: this.#d.threads.require(this.threadId) };
  }

  async #drive(mode: "start" | "resume"): Promise<DriveResult> {
    const { threads } = this.#d;
    const t = threads.require(this.threadId);
    const heartbeat = setInterval(() => {
      // No row: another process took the thread over (this one was taken for dead) — stop writing.
      // A failed write (the server unreachable for a moment) is not fatal here: the next beat tries
      // again, and the fence stops this driver's writes if another process took the thread meanwhile.
      try {
        if (this.#claimed) this.#lost ||= !threads.heartbeat(this.threadId, this.#me, this.#now());
      } catch {
        // the store is closed or unreachable: nothing to renew
      }
    }, DRIVER_HEARTBEAT_MS);
    heartbeat.unref();
    try {
      let vm: PausedVm;
      if (mode === "start") {
        const v = this.#d.versions.active({ selfModify: this.#d.config.selfModify });
        this.#version = v.version;
        this.#host.codeGates = v.version !== 0;
        this.#claimed = true;
        threads.transition(this.threadId, "running", {
          expect: ["created"],
          patch: {
            driver: this.#me,
            driver_heartbeat_ms: this.#now(),
            started_ms: this.#now(),
            orchestrator_version: v.version,
            orchestrator_why: v.why,
          },
        });
        this.#emitState("running", null);
        try {
          vm = this.#vm.start(v.code, {
            scriptName: `orchestrator_v${v.version}.py`,
            inputs: await this.#inputs(t),
            limits: this.#limits(),
          });
        } catch (e) {
          return this.#orchestratorFailed(e);
        }
      } else {
        const cp = threads.checkpoint(this.threadId);
        this.#version = t.orchestrator_version ?? 0;
        this.#host.codeGates = this.#version !== 0;
        if (!cp) return this.#fail(`no checkpoint to resume from`);
        // The claim: one transaction checks that no other live process drives the thread and
        // writes this one (two processes resuming at once: the second finds the first's claim).
        const moved = threads.tx(() => {
          const now = threads.require(this.threadId);
          if (now.driver !== null && now.driver !== this.#me && driverAlive(now, this.#now()))
            throw new RatchetError(
              ErrorCode.IllegalTransition,
              `thread ${this.threadId} is being driven by process ${now.driver}`,
              { threadId: this.threadId, from: now.state, to: "running" },
            );
          const pending = now.state === "waiting" && threads.pendingApprovals(this.threadId).length > 0;
          const patch = { driver: this.#me, driver_heartbeat_ms: this.#now() };
          if (pending) threads.patch(this.threadId, patch);
          else threads.transition(this.threadId, "running", { expect: ["waiting", "suspended"], patch });
          return !pending;
        });
        this.#claimed = true;
        if (moved) this.#emitState("running", null);
        // An unanswered call is issued again under its own number (ids made from it stay the same).
        this.#seq = cp.answered ? cp.seq : cp.seq - 1;
        this.#hasSnapshot = true;
        this.#snapshotSeq = cp.seq;
        this.#replay = cp.answered ? threads.journalAfter(this.threadId, cp.seq) : [];
        try {
          vm = this.#vm.restore(cp.vm);
          if (cp.answered) {
            const a = JSON.parse(cp.answer ?? "null") as HostAnswer;
            vm = "error" in a ? vm.raise(a.error.type, a.error.message) : vm.resume(a.value);
          }
        } catch (e) {
          return this.#orchestratorFailed(e);
        }
      }
      return await this.#run(vm);
    } finally {
      clearInterval(heartbeat);
      if (this.#claimed)
        threads
          .sql("UPDATE threads SET driver = NULL WHERE thread_id = ? AND driver = ?")
          .run(this.threadId, this.#me);
    }
  }

  #limits(): VmLimits {
    return {
      maxDurationSecs: this.#d.limits?.maxDurationSecs ?? ORCHESTRATOR_MAX_DURATION_SECS,
      maxMemory: this.#d.limits?.maxMemory ?? ORCHESTRATOR_MAX_MEMORY_BYTES,
      maxAllocations: this.#d.limits?.maxAllocations ?? ORCHESTRATOR_MAX_ALLOCATIONS,
      maxRecursionDepth: this.#d.limits?.maxRecursionDepth ?? ORCHESTRATOR_MAX_RECURSION,
    };
  }

  /**
   * The names injected before the script runs: `context` (the thread's messages; the goal is the
   * last user message, stored here), `goal`, `actions` (the leased ones), `state` (empty on a fresh
   * thread) and `config` (limits and counters).
   */
  async #inputs(t: ThreadRow, state?: unknown): Promise<Record<string, unknown>> {
    const { threads, config } = this.#d;
    // A run again after a gate: the goal is stored already.
    if (state === undefined)
      threads.addMessage({
        thread_id: this.threadId,
        role: "user",
        content: t.goal,
        tool_calls: null,
        call_id: null,
        tool_name: null,
        is_error: 0,
      });
    const budget = JSON.parse(t.budget) as { max_steps: number; max_tokens: number };
    return {
      context: [
        { role: "System", content: config.systemPrompt },
        { role: "User", content: t.goal },
      ],
      goal: t.goal,
      actions: await this.#host.leasedActions(),
      state: state ?? {},
      config: {
        max_iterations: budget.max_steps,
        max_tokens: budget.max_tokens,
        temperature: null,
        model: t.model,
        step_count: t.step_count,
        system_prompt: config.systemPrompt,
        skill_budget_tokens: SKILLS_TOKEN_BUDGET,
        max_skills: SKILLS_MAX_ACTIVE,
        enable_tool_intent_nudge: true,
        max_tool_intent_nudges: 2,
        max_consecutive_errors: 5,
      },
    };
  }

  async #run(start: PausedVm): Promise<DriveResult> {
    let r: DriveResult;
    try {
      r = await this.#loop(start);
    } catch (e) {
      // As a crash would: the batch's writes and their journal rows go together; a resume redoes them.
      this.#rollbackBatch();
      throw e;
    }
    this.#commitBatch();
    return r;
  }

  async #loop(start: PausedVm): Promise<DriveResult> {
    const { threads } = this.#d;
    let vm = start;
    let calls = 0;
    for (;;) {
      const p = vm.progress;
      if (p.kind === "done") {
        const f = await this.#finished(p.output);
        if (!("restart" in f)) return f;
        vm = f.restart;
        continue;
      }
      if (++calls > MAX_HOST_CALLS)
        return this.#fail(`the orchestrator made more than ${MAX_HOST_CALLS} host calls`);
      // A model call is journaled like a write (its reply commits with its effects), so a crash
      // during it resumes from the last saved VM and asks again — a model call may be repeated.
      // It saves the VM only when there is none yet or the journal since the last one is long.
      // Actions and code steps save it lazily, just before an approval wait (the waiting thread's
      // VM must be there for whoever continues it); a crash during one resumes from the last saved
      // VM, replays, and the call id finds the call (recorded outcome, or `started`: not run again).
      const reaches = EXTERNAL.has(p.name) || p.name === "__llm_complete__";
      // The first call of a script run again after a gate saves its VM, whatever the call.
      const forced = this.#restartEffects !== null;
      let external =
        forced ||
        (reaches && (!this.#hasSnapshot || this.#seq + 1 - this.#snapshotSeq > SNAPSHOT_AFTER_CALLS));
      const sync = HostCalls.SYNC.has(p.name);
      // An external call commits the batch with its saved VM (below); a call that awaits commits it first.
      if (this.#batch && !external && (!sync || this.#batchFull())) this.#commitBatch();
      // While a batch is open nothing else can have written the thread (this process has not
      // yielded, other processes wait for the write lock): the cancel flag was read when it began.
      if (!this.#batch && threads.cancelRequested(this.threadId)) return this.#fail("cancelled");
      if (this.#d.signal?.aborted) return this.#suspend();
      const seq = ++this.#seq;
      // Resuming: the calls made after the saved VM get their recorded answers (the script is
      // deterministic given its answers), their effects are not made again. A pure call has no
      // row: it is computed again.
      const next = this.#replay[0];
      if (next && (next.seq === seq || !PURE.has(p.name))) {
        this.#replay.shift();
        if (next.seq !== seq || next.call_name !== p.name)
          return this.#fail(
            `resume diverged: the journal has ${next.call_name} as host call #${next.seq}, the script made ${p.name} (#${seq})`,
          );
        const a = JSON.parse(next.answer) as HostAnswer;
        try {
          vm = "error" in a ? vm.raise(a.error.type, a.error.message) : vm.resume(a.value);
        } catch (e) {
          return this.#orchestratorFailed(e);
        }
        continue;
      }
      // The call's arguments as saved with a VM paused at it (only then: default.py passes its whole
      // transcript to every model call, and stringifying it each time was a cost of its own).
      const args = () => JSON.stringify({ args: p.args, kwargs: p.kwargs });
      const saveHere = (paused: PausedVm) => {
        const bytes = paused.dump();
        // The batch's writes commit with the saved VM; its journal rows are not written (the
        // journal starts again after this call).
        this.#commitBatch(() => {
          const restart = this.#restartEffects;
          this.#restartEffects = null;
          restart?.();
          threads.saveCheckpoint({
            thread_id: this.threadId,
            seq,
            vm: bytes,
            call_name: p.name,
            call_args: args(),
            answered: 0,
            answer: null,
          });
          threads.clearJournal(this.threadId);
        });
        this.#hasSnapshot = true;
        this.#snapshotSeq = seq;
        this.#reads = [];
        external = true;
      };
      if (external) saveHere(vm);
      else if (EXTERNAL.has(p.name)) {
        this.#commitBatch();
        const paused = vm;
        this.#saveBeforeWait = () => saveHere(paused);
      }
      const current = vm;
      let committed = false;
      const ctx: HostContext = {
        seq,
        unchanged: this.#batch,
        commit: (answer, effects) => {
          if (sync && this.#hasSnapshot && !external) {
            // Group commit: the effects run in the open batch, the journal rows wait for its commit.
            const batch = this.#openBatch();
            if (batch) {
              effects?.();
              committed = true;
              batch.journal.push(...this.#reads.splice(0), {
                seq,
                name: p.name,
                answer: JSON.stringify(answer),
              });
              batch.writes++;
              return answer;
            }
          }
          return threads.tx(() => {
            this.#fence();
            effects?.();
            committed = true;
            const text = JSON.stringify(answer);
            if (external) threads.markAnswered(this.threadId, seq, text);
            else if (this.#hasSnapshot) {
              for (const r of this.#reads.splice(0)) threads.journal(this.threadId, r.seq, r.name, r.answer);
              threads.journal(this.threadId, seq, p.name, text);
            } else {
              // Before the first saved VM, a write saves one (so the thread can be resumed).
              threads.saveCheckpoint({
                thread_id: this.threadId,
                seq,
                vm: current.dump(),
                call_name: p.name,
                call_args: args(),
                answered: 1,
                answer: text,
              });
              this.#hasSnapshot = true;
              this.#snapshotSeq = seq;
            }
            return answer;
          });
        },
      };
      // A synchronous call is answered without yielding (so a batch stays this process's alone).
      let result: HostResult;
      try {
        result = sync
          ? this.#host.dispatchSync(p.name, p.args, p.kwargs, ctx)
          : await this.#host.dispatch(p.name, p.args, p.kwargs, ctx);
      } finally {
        this.#saveBeforeWait = null;
      }
      // The forced save's call answered without a write: marked answered all the same.
      if (forced && !committed && !isStop(result))
        threads.tx(() => threads.markAnswered(this.threadId, seq, JSON.stringify(result)));
      // A read is journaled too, so a resumed script sees the same answers and takes the same path.
      if (!committed && !isStop(result) && this.#hasSnapshot && !external && !PURE.has(p.name))
        this.#reads.push({ seq, name: p.name, answer: JSON.stringify(result) });
      if (isStop(result)) {
        if (result.stop === "waiting") return { outcome: "waiting", thread: threads.require(this.threadId) };
        if (result.stop === "suspended") return this.#suspend();
        return this.#fail(result.reason);
      }
      try {
        vm = "error" in result ? vm.raise(result.error.type, result.error.message) : vm.resume(result.value);
      } catch (e) {
        return this.#orchestratorFailed(e);
      }
    }
  }

  /**
   * Begins a group-commit transaction unless one is open; none when the caller is in a transaction
   * of its own, or on PostgreSQL: a batch is a transaction left open across host calls, which only
   * SQLite's connection lets this code begin and end itself (`store.tx` takes a function). There
   * each write host call commits with its journal row in a transaction of its own.
   */
  #openBatch(): { openedMs: number; writes: number; journal: JournalRow[] } | null {
    if (this.#batch) return this.#batch;
    const { threads } = this.#d;
    if (threads.postgres || threads.store.sql.inTransaction) return null;
    threads.sql("BEGIN IMMEDIATE").run();
    this.#batch = { openedMs: this.#now(), writes: 0, journal: [] };
    try {
      this.#fence();
    } catch (e) {
      this.#rollbackBatch();
      throw e;
    }
    return this.#batch;
  }

  #batchFull(): boolean {
    const b = this.#batch;
    return (
      b !== null && (b.writes >= GROUP_COMMIT_MAX_WRITES || this.#now() - b.openedMs >= GROUP_COMMIT_MAX_MS)
    );
  }

  /**
   * Commits the open batch: its journal rows, or instead `external` (the saved VM of an external
   * call, which starts the journal again). Without a batch, `external` runs in a transaction of its own.
   */
  #commitBatch(external?: () => void): void {
    const { threads } = this.#d;
    const b = this.#batch;
    if (!b) {
      if (external)
        threads.tx(() => {
          this.#fence();
          external();
        });
      return;
    }
    try {
      if (external) external();
      else threads.journalMany(this.threadId, b.journal);
      threads.sql("COMMIT").run();
    } catch (e) {
      this.#rollbackBatch();
      throw e;
    }
    this.#batch = null;
  }

  #rollbackBatch(): void {
    if (!this.#batch) return;
    this.#batch = null;
    const { threads } = this.#d;
    if (threads.store.sql.inTransaction) threads.sql("ROLLBACK").run();
  }

  /** Polls the approval until it is decided, the thread is cancelled, or the wait runs out. */
  async #waitForDecision(approvalId: string): Promise<"decided" | "released" | "cancelled"> {
    const { threads } = this.#d;
    // The VM at this call is saved before the wait (once, for the first approval of the call).
    const save = this.#saveBeforeWait;
    this.#saveBeforeWait = null;
    save?.();
    const until = this.#now() + (this.#d.approvalWaitMs ?? DEFAULT_APPROVAL_WAIT_MS);
    for (;;) {
      const a = threads.approval(approvalId);
      if (a && a.status !== "pending") return "decided";
      // An expired request counts as decided: the checkpoint ends the call as refused.
      if (a?.expires_ms && this.#now() >= a.expires_ms) return "decided";
      if (threads.cancelRequested(this.threadId)) return "cancelled";
      if (this.#now() >= until || this.#d.signal?.aborted) return "released";
      await sleep(APPROVAL_POLL_MS);
    }
  }

  async #finished(output: unknown): Promise<DriveResult | { restart: PausedVm }> {
    this.#fence();
    const { threads } = this.#d;
    const t = threads.require(this.threadId);
    this.#d.versions.recordSuccess(this.#version);
    const requested = this.#requestedTransition();
    const gate = this.#host.openGate();
    const end = interpretOutcome({
      gate: gate !== undefined,
      finalOutcome: t.final_outcome ? (JSON.parse(t.final_outcome) as Record<string, unknown>) : null,
      finalResult: t.final_result,
      returned: output,
      requested,
      cancelRequested: t.cancel_requested === 1,
    });
    if (end.kind === "gate") return this.#gatePaused(gate!);
    if (gate) this.#abandonGate(gate);
    if (end.kind === "failed") return this.#fail(end.reason);
    this.#host.fillMissingResults("the thread ended before this call ran");
    this.#countSkills(true);
    const done = threads.transition(this.threadId, "completed", { reason: end.reason });
    this.#emitState("completed", end.reason);
    return { outcome: "completed", thread: done };
  }

  /**
   * The script ended its run on a code step's gate (default.py: `FINAL({outcome: "gate_paused"})`):
   * the thread waits for the decision as for a tool call's approval; once decided, the call goes
   * through the checkpoint (run once, or refused), its result in `format_output`'s form
   * (`[name] output`, `[name ERROR] …`) is queued for `__check_signals__`, and the script runs
   * again from the top with the state it saved. Everything here is a function of committed rows,
   * so a driver that resumes after a crash replays to the same FINAL and gets here again.
   */
  async #gatePaused(gate: ApprovalRow): Promise<DriveResult | { restart: PausedVm }> {
    const { threads } = this.#d;
    this.#commitBatch();
    const args = JSON.parse(gate.args) as Record<string, unknown>;
    if (gate.status === "pending") {
      threads.tx(() => {
        if (threads.require(this.threadId).state === "running")
          threads.transition(this.threadId, "waiting", { reason: `approval needed: ${gate.action}` });
      });
      this.#d.onEvent?.({
        type: "approval",
        approvalId: gate.approval_id,
        action: gate.action,
        callId: gate.call_id,
        args,
      });
      const w = await this.#waitForDecision(gate.approval_id);
      if (w === "released") return { outcome: "waiting", thread: threads.require(this.threadId) };
      if (w === "cancelled") return this.#fail("cancelled");
    }
    const o = await this.#host.runGate(gate);
    if ("stop" in o) {
      if (o.stop === "waiting") return { outcome: "waiting", thread: threads.require(this.threadId) };
      if (o.stop === "suspended") return this.#suspend();
      return this.#fail(o.reason);
    }
    const r = o.result;
    const text = `[${r.action_name}${r.is_error ? " ERROR" : ""}] ${r.is_error ? String(r.output) : resultText(r.output)}`;
    const cp = threads.checkpoint(this.threadId);
    const state = cp?.script_state ? (JSON.parse(cp.script_state) as unknown) : {};
    let vm: PausedVm;
    try {
      const v = this.#d.versions.get(this.#version);
      vm = this.#vm.start(v.code, {
        scriptName: `orchestrator_v${v.version}.py`,
        inputs: await this.#inputs(threads.require(this.threadId), state ?? {}),
        limits: this.#limits(),
      });
    } catch (e) {
      return this.#orchestratorFailed(e);
    }
    const effects = () => {
      threads.inject(this.threadId, text);
      threads.patch(this.threadId, { final_result: null, final_outcome: null });
    };
    this.#replay = [];
    this.#reads = [];
    if (vm.progress.kind === "done") threads.tx(effects);
    else this.#restartEffects = effects;
    return { restart: vm };
  }

  /** A gate the script did not pause on (it ended otherwise): the call is refused and the gate closed. */
  #abandonGate(gate: ApprovalRow): void {
    const { threads } = this.#d;
    const msg = `the orchestrator ended without pausing on the gate of call ${gate.call_id}: not run`;
    threads.tx(() => {
      threads.expireApproval(gate.approval_id);
      threads.insertAction({
        thread_id: this.threadId,
        call_id: gate.call_id,
        action: gate.action,
        args: gate.args,
        status: "refused",
        decision: "abandoned",
        lease_id: null,
      });
      threads.finishAction(this.threadId, gate.call_id, "refused", null, msg);
    });
  }

  /** The last `__transition_to__` the script asked for. */
  #requestedTransition(): { to: string; reason: string } | null {
    const row = this.#d.threads
      .sql(
        "SELECT payload FROM events WHERE entity_kind = 'thread' AND entity_id = ? AND type = ? ORDER BY id DESC LIMIT 1",
      )
      .get(this.threadId, ThreadEvent.TransitionRequested) as { payload: string } | undefined;
    return row ? (JSON.parse(row.payload) as { to: string; reason: string }) : null;
  }

  /** The skills the script said it injected (`__set_active_skills__`) get a use counted. */
  #countSkills(success: boolean): void {
    const row = this.#d.threads
      .sql(
        "SELECT payload FROM events WHERE entity_kind = 'thread' AND entity_id = ? AND type = ? ORDER BY id DESC LIMIT 1",
      )
      .get(this.threadId, ThreadEvent.SkillsActive) as { payload: string } | undefined;
    if (!row) return;
    const ids = (JSON.parse(row.payload) as { doc_ids: string[] }).doc_ids;
    this.#d.threads.tx(() => {
      for (const id of ids) countSkillUse(this.#d, id, success);
    });
  }

  #orchestratorFailed(e: unknown): DriveResult {
    const err = e instanceof VmError ? e : new VmError("RuntimeError", String(e), "");
    const text = err.message;
    const hostCaused = this.#lastHostError !== null && text.includes(this.#lastHostError);
    let reason = `orchestrator v${this.#version} failed: ${text}`;
    if (err.isLimit) reason = `orchestrator v${this.#version} stopped by a limit: ${text}`;
    if (!hostCaused) {
      const r = this.#d.versions.recordFailure(this.#version, text);
      if (r.disabled)
        reason += `; version ${this.#version} disabled after repeated failures, now v${r.fallback}`;
    }
    return this.#fail(reason);
  }

  /** The driver was interrupted (SIGINT/SIGTERM): the thread keeps its checkpoint and can be resumed. */
  #suspend(): DriveResult {
    const { threads } = this.#d;
    const t = threads.require(this.threadId);
    if (t.state === "running" && threads.checkpoint(this.threadId)) {
      const row = threads.transition(this.threadId, "suspended", {
        reason: "interrupted: resume it to continue",
      });
      this.#emitState("suspended", row.reason);
      return { outcome: "suspended", thread: row };
    }
    if (t.state === "waiting") return { outcome: "waiting", thread: t };
    return this.#fail("cancelled: the driver was interrupted before its first checkpoint");
  }

  #fail(reason: string): DriveResult {
    this.#fence();
    const { threads } = this.#d;
    const t = threads.require(this.threadId);
    if (t.state === "failed" || t.state === "completed" || t.state === "done")
      return { outcome: t.state === "failed" ? "failed" : "completed", thread: t };
    this.#host.fillMissingResults(`not run: the thread ended (${reason})`);
    this.#countSkills(false);
    const row = threads.transition(this.threadId, "failed", { reason });
    this.#emitState("failed", reason);
    return { outcome: "failed", thread: row };
  }

  /**
   * Refuses to write for a thread another process now drives (a heartbeat found it taken over, or
   * the row names another driver — restart recovery took this one for dead). Inside a write
   * transaction the read sees every committed claim, so no write of a driver that lost the thread
   * commits after the claim of the one that took it.
   * @throws RatchetError `illegal_transition` naming the driver that has the thread.
   */
  #fence(): void {
    if (!this.#claimed) return;
    const driver = this.#d.threads.driverOf(this.threadId);
    if (!this.#lost && driver === this.#me) return;
    this.#lost = true;
    throw new RatchetError(
      ErrorCode.IllegalTransition,
      `thread ${this.threadId} is no longer driven by this process (${this.#me}): ${driver ? `process ${driver} has it` : "its claim was released"}`,
      { threadId: this.threadId, field: "driver" },
    );
  }

  #emitState(state: string, reason: string | null): void {
    this.#d.onEvent?.({ type: "state", state, reason });
  }
}
