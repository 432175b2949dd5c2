/**
 * The host functions an orchestrator calls — the original engine's API (docs/threads.md, "Host
 * functions"): `__llm_complete__`, `__execute_action__`, `__execute_actions_parallel__`,
 * `__execute_code_step__`, `__check_signals__`, …, `FINAL`. Each answers with a value or a Python
 * error for the VM, or ends the drive with a result the engine handles (waiting, suspended,
 * failed). A read answers without saving anything; a write commits its effects together with the
 * answered checkpoint. Names the host does not serve raise NameError.
 */
import { ErrorCode } from "../core/index.js";
import type { ToolDef } from "../model/index.js";
import { findLease } from "./action-keys.js";
import {
  type ActionCall,
  type ActionOutcome,
  executeAction,
  executeActions,
  executeOrGate,
  openGate,
} from "./checkpoint.js";
import { runCodeStep } from "./code-step.js";
import { DocKind } from "./documents.js";
import { ThreadEvent } from "./events.js";
import { listSkillsForScript, recordSkillUsage, scriptRegex, setActiveSkills } from "./host-skills.js";
import {
  type EngineDeps,
  type HostAnswer,
  type HostContext,
  type HostHooks,
  type HostResult,
  pyError,
  stop,
} from "./host-types.js";
import { LLM_TIMEOUT_MS } from "./limits.js";
import { classifyReply, scriptMessagesToModel, toModelMessages } from "./llm-shapes.js";
import { canTransition, isThreadState } from "./states.js";
import type { ApprovalRow, MessageRow } from "./thread-store.js";

export { toModelMessages } from "./llm-shapes.js";

const str = (v: unknown, fallback = ""): string =>
  typeof v === "string" ? v : v === undefined || v === null ? fallback : JSON.stringify(v);
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** `__emit_event__` kinds the host records; others are dropped. */
export const KNOWN_SCRIPT_EVENTS = new Set([
  "step_started",
  "step_completed",
  "skill_activated",
  "duplicate_final_dropped",
  "final_fallback",
  "action_refused",
  "action_error",
  "tool_intent_nudge",
]);

export class HostCalls {
  /** The assistant text of the last completion (so a script's `__add_message__` of it is not stored twice). */
  #lastReply: { text: string; code: string | null } | null = null;
  /** Every call in messages up to this id has its result. */
  #filledThrough = 0;
  #rows: MessageRow[] = [];
  /** The batch token (`HostContext.unchanged`) in which `__check_signals__` last answered None. */
  #quietIn: object | null = null;
  /** Code steps' gated calls pause the run (`pending_gate`) rather than being refused (stored versions). */
  codeGates = false;

  constructor(
    readonly d: EngineDeps,
    readonly threadId: string,
    readonly hooks: HostHooks,
  ) {}

  /**
   * The host calls answered without waiting on anything (no model, no action, no provider list):
   * the driver runs these between two VM resumes without yielding, so their writes can share one
   * transaction (see ARCHITECTURE.md, "Group commit").
   */
  static readonly SYNC = new Set([
    "__check_signals__",
    "__emit_event__",
    "__add_message__",
    "__save_checkpoint__",
    "__transition_to__",
    "__retrieve_docs__",
    "__check_budget__",
    "__list_skills__",
    "__record_skill_usage__",
    "__regex_match__",
    "__set_active_skills__",
    "FINAL",
  ]);

  async dispatch(
    name: string,
    args: unknown[],
    kwargs: Record<string, unknown>,
    ctx: HostContext,
  ): Promise<HostResult> {
    const arg = (i: number, key: string): unknown => (args.length > i ? args[i] : kwargs[key]);
    switch (name) {
      case "__llm_complete__":
        return this.llmComplete(arg(0, "messages"), obj(arg(2, "config")), ctx);
      case "__execute_action__":
        return this.executeOne(
          {
            callId: str(kwargs.call_id ?? args[2], "") || `host-${ctx.seq}`,
            action: str(arg(0, "name")),
            args: obj(arg(1, "params") ?? kwargs.args),
          },
          ctx,
        );
      case "__execute_actions_parallel__":
        return this.executeMany(arg(0, "calls"), ctx);
      case "__execute_code_step__":
        return runCodeStep(this, str(arg(0, "code")), arg(1, "state") ?? {}, ctx);
      case "__get_actions__":
        return { value: await this.leasedActions() };
      default:
        return this.dispatchSync(name, args, kwargs, ctx);
    }
  }

  /** The calls of {@link HostCalls.SYNC}, answered at once; any other name raises NameError. */
  dispatchSync(name: string, args: unknown[], kwargs: Record<string, unknown>, ctx: HostContext): HostResult {
    const arg = (i: number, key: string): unknown => (args.length > i ? args[i] : kwargs[key]);
    switch (name) {
      case "__check_signals__":
        return this.checkSignals(ctx);
      case "__emit_event__":
        return this.emitEvent(str(arg(0, "kind")), kwargs, ctx);
      case "__add_message__":
        return this.addMessage(str(arg(0, "role")), str(arg(1, "content")), ctx);
      case "__save_checkpoint__": {
        const state = JSON.stringify(arg(0, "state") ?? null);
        return ctx.commit({ value: null }, () => this.d.threads.setScriptState(this.threadId, state));
      }
      case "__transition_to__":
        return this.transitionTo(str(arg(0, "state")), str(arg(1, "reason"), ""), ctx);
      case "__retrieve_docs__": {
        const limit = Number(arg(1, "max_docs") ?? kwargs.limit ?? 5);
        const rows = this.d.docs.search(
          str(arg(0, "goal") ?? kwargs.query),
          [DocKind.Insight, DocKind.Playbook],
          Number.isFinite(limit) ? limit : 5,
        );
        return {
          value: rows.map((r) => ({ type: r.kind, title: r.title, content: r.content, doc_id: r.doc_id })),
        };
      }
      case "__check_budget__":
        return { value: this.budget() };
      case "__list_skills__":
        return { value: listSkillsForScript(this.d) };
      case "__record_skill_usage__":
        return recordSkillUsage(this.d, str(arg(0, "doc_id")), Boolean(arg(1, "success")), ctx);
      case "__regex_match__": {
        const re = scriptRegex(str(arg(0, "pattern")));
        return { value: re ? re.test(str(arg(1, "text"))) : false };
      }
      case "__set_active_skills__":
        return setActiveSkills(this.d, this.threadId, arg(0, "doc_ids"), ctx);
      case "FINAL":
        return this.final(arg(0, "outcome") ?? kwargs.result ?? kwargs.value, ctx);
      default:
        return pyError("NameError", `name '${name}' is not defined`);
    }
  }

  /** Budget status in the original's shape, plus `ok` and `reason` naming the first budget used up. */
  budget(): Record<string, unknown> {
    const t = this.d.threads.require(this.threadId);
    const b = JSON.parse(t.budget) as {
      max_tokens: number;
      max_duration_ms: number;
      max_cost_usd: number;
      max_steps: number;
    };
    const tokens = t.input_tokens + t.output_tokens;
    const elapsed = (this.d.nowMs ?? Date.now)() - (t.started_ms ?? 0);
    let reason: string | null = null;
    if (tokens >= b.max_tokens) reason = `tokens ${tokens} of ${b.max_tokens} used`;
    else if (elapsed >= b.max_duration_ms) reason = `time ${elapsed} ms of ${b.max_duration_ms} ms used`;
    else if (t.cost_usd >= b.max_cost_usd)
      reason = `cost $${t.cost_usd.toFixed(4)} of $${b.max_cost_usd} used`;
    else if (t.step_count >= b.max_steps) reason = `steps ${t.step_count} of ${b.max_steps} used`;
    return {
      tokens_remaining: b.max_tokens - tokens,
      time_remaining_ms: b.max_duration_ms - elapsed,
      usd_remaining: b.max_cost_usd - t.cost_usd,
      steps_remaining: b.max_steps - t.step_count,
      ok: reason === null,
      reason,
    };
  }

  /** The actions a live lease covers, as `[{name, description, params}]`. */
  async leasedActions(): Promise<{ name: string; description: string; params: Record<string, unknown> }[]> {
    const leases = this.d.threads.leases(this.threadId);
    const now = (this.d.nowMs ?? Date.now)();
    return (await this.d.actions.list(this.d.signal))
      .filter((a) => findLease(leases, a.name, now) !== undefined)
      .map((a) => ({ name: a.name, description: a.description, params: a.parameters }));
  }

  /** Every tool call of the conversation without a result gets one (an error saying it did not run). */
  fillMissingResults(why: string): void {
    this.#filledThrough = this.d.threads.fillMissingResults(this.threadId, why, this.#filledThrough);
  }

  /** The thread's stored messages; read once, then only the new ones (messages are append-only). */
  conversation(): MessageRow[] {
    const last = this.#rows.at(-1)?.id ?? 0;
    this.#rows.push(...this.d.threads.messagesAfter(this.threadId, last));
    return this.#rows;
  }

  /** Accounts tokens and their cost on the thread; returns the cost. */
  addUsage(input: number, output: number): number {
    const p = this.d.config.pricing;
    const cost = (input / 1000) * p.input_per_1k_tokens + (output / 1000) * p.output_per_1k_tokens;
    this.d.threads.addTokens(this.threadId, input, output, cost);
    return cost;
  }

  #systemPrompt(extra: readonly string[], ownSystem: boolean): string {
    return (ownSystem && extra.length ? extra : [this.d.config.systemPrompt, ...extra]).join("\n\n");
  }

  /**
   * `__llm_complete__(messages, actions, config)`: `messages` None → the thread's conversation;
   * tools are the leased actions (none with `config.force_text`). The reply and its tool calls are
   * recorded on the thread; invalid calls get their error result at once.
   */
  async llmComplete(
    rawMessages: unknown,
    config: Record<string, unknown>,
    ctx: HostContext,
  ): Promise<HostResult> {
    const budget = this.budget();
    if (!budget.ok) return stop("failed", `budget exhausted: ${String(budget.reason)}`);
    this.fillMissingResults("not run: the orchestrator moved on without running this call");
    const { threads } = this.d;
    const own = Array.isArray(rawMessages);
    const conv = own ? scriptMessagesToModel(rawMessages) : toModelMessages(this.conversation());
    const tools: ToolDef[] =
      config.force_text === true
        ? []
        : (await this.leasedActions()).map((a) => ({
            name: a.name,
            description: a.description,
            inputSchema: a.params ?? { type: "object" },
          }));
    let completion: Awaited<ReturnType<ReturnType<EngineDeps["model"]>["complete"]>>;
    try {
      completion = await this.d.model().complete({
        system: this.#systemPrompt(conv.system, own),
        messages: conv.messages,
        tools,
        timeoutMs: LLM_TIMEOUT_MS,
        ...(typeof config.max_tokens === "number" ? { maxOutputTokens: config.max_tokens } : {}),
        ...(this.d.signal ? { signal: this.d.signal } : {}),
        onText: (delta) => this.d.onEvent?.({ type: "text", delta }),
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === ErrorCode.Cancelled) return stop("suspended", "interrupted");
      const msg = `model call failed: ${(e as Error).message}`;
      this.hooks.hostError(msg);
      return ctx.commit(pyError("RuntimeError", msg));
    }
    const valid = completion.toolCalls.filter((c) => !c.invalid);
    const p = this.d.config.pricing;
    const { inputTokens: inT, outputTokens: outT } = completion.usage;
    const cost = (inT / 1000) * p.input_per_1k_tokens + (outT / 1000) * p.output_per_1k_tokens;
    const reply = classifyReply(
      completion.text,
      valid,
      { input: inT, output: outT, costUsd: cost },
      completion.finishReason,
    );
    this.#lastReply = { text: completion.text, code: reply.code };
    return ctx.commit({ value: reply }, () => {
      this.addUsage(inT, outT);
      threads.addMessage({
        thread_id: this.threadId,
        role: "assistant",
        content: completion.text,
        tool_calls: completion.toolCalls.length
          ? JSON.stringify(completion.toolCalls.map((c) => ({ id: c.id, name: c.name, args: c.args })))
          : null,
        call_id: null,
        tool_name: null,
        is_error: 0,
      });
      for (const c of completion.toolCalls.filter((x) => x.invalid)) {
        threads.addMessage({
          thread_id: this.threadId,
          role: "tool",
          content: `invalid call: ${c.invalid}`,
          tool_calls: null,
          call_id: c.id,
          tool_name: c.name,
          is_error: 1,
        });
      }
      threads.event(this.threadId, ThreadEvent.LlmCompleted, {
        input_tokens: inT,
        output_tokens: outT,
        tool_calls: completion.toolCalls.map((c) => c.name),
        finish_reason: completion.finishReason,
        type: reply.type,
      });
    });
  }

  get #scope() {
    return { d: this.d, threadId: this.threadId, hooks: this.hooks, codeGates: this.codeGates };
  }

  async executeOne(call: ActionCall, ctx: HostContext): Promise<HostResult> {
    const r = await executeAction(this.#scope, call);
    if ("stop" in r) return r;
    return ctx.commit({ value: r.result }, r.effects);
  }

  /** `__execute_actions_parallel__(calls)`: one result per call, in order. */
  async executeMany(raw: unknown, ctx: HostContext): Promise<HostResult> {
    if (!Array.isArray(raw))
      return pyError("TypeError", "__execute_actions_parallel__: calls must be a list");
    const calls: ActionCall[] = raw.map((c, i) => {
      const o = obj(c);
      return {
        callId: str(o.call_id, "") || `host-${ctx.seq}-${i + 1}`,
        action: str(o.name),
        args: obj(o.params ?? o.args),
      };
    });
    const r = await executeActions(this.#scope, calls);
    if ("stop" in r) return r;
    return ctx.commit({ value: r.results }, r.effects);
  }

  /** Runs one call for a code step (its writes commit at once; the code step's answer comes later). */
  async executeForCode(
    call: ActionCall,
  ): Promise<ActionOutcome | { stop: string; reason: string } | { gate: ApprovalRow }> {
    const r = await executeOrGate(this.#scope, call);
    if ("stop" in r || "gate" in r) return r;
    if (r.effects) this.d.threads.tx(r.effects);
    return r;
  }

  /** The approval a code step's gate left that no call has consumed yet. */
  openGate(): ApprovalRow | undefined {
    return openGate(this.#scope);
  }

  /** Runs the call of a decided gate through the checkpoint (exactly once by its call id); its writes commit at once. */
  async runGate(gate: ApprovalRow): Promise<ActionOutcome | { stop: string; reason: string }> {
    const call = {
      callId: gate.call_id,
      action: gate.action,
      args: JSON.parse(gate.args) as Record<string, unknown>,
    };
    const r = await executeAction(this.#scope, call);
    if ("stop" in r) return r;
    if (r.effects) this.d.threads.tx(r.effects);
    return r;
  }

  /** `None`, `"stop"` (cancel requested), or `{"inject": text}` for the oldest message injected and not yet delivered. */
  checkSignals(ctx: HostContext): HostResult {
    const { threads } = this.d;
    // Nothing can have been injected or cancelled since the last quiet answer in the same batch.
    if (ctx.unchanged && this.#quietIn === ctx.unchanged) return { value: null };
    const { cancel, next } = threads.signals(this.threadId);
    if (cancel) return { value: "stop" };
    if (!next) {
      this.#quietIn = ctx.unchanged ?? null;
      return { value: null };
    }
    return ctx.commit({ value: { inject: next.content } }, () => {
      threads.markDelivered(next.id);
      this.#storeMessage("user", next.content);
      threads.event(this.threadId, ThreadEvent.MessageInjected, {
        inbox_id: next.id,
        chars: next.content.length,
      });
    });
  }

  #storeMessage(role: MessageRow["role"], content: string): void {
    this.d.threads.addMessage({
      thread_id: this.threadId,
      role,
      content,
      tool_calls: null,
      call_id: null,
      tool_name: null,
      is_error: 0,
    });
  }

  /**
   * `__add_message__(role, content)`: roles user, assistant, system, `system_append` (added to the
   * system prompt). The reply of the last completion and a message the host already stored (an
   * injected one) are not stored twice.
   */
  addMessage(rawRole: string, content: string, ctx: HostContext): HostResult {
    const role = rawRole.toLowerCase();
    if (!["user", "assistant", "system", "system_append"].includes(role))
      return pyError(
        "ValueError",
        `__add_message__: role must be user, assistant, system or system_append (got ${rawRole})`,
      );
    const last = this.d.threads.lastRoleContent(this.threadId);
    const stored = role === "system_append" ? "system" : role;
    if (last && last.role === stored && last.content === content) return ctx.commit({ value: null });
    if (role === "assistant" && this.#lastReply) {
      const r = this.#lastReply;
      if (content === r.text || (r.code !== null && content.includes(r.code.trim())))
        return ctx.commit({ value: null });
    }
    return ctx.commit({ value: null }, () => this.#storeMessage(stored as MessageRow["role"], content));
  }

  emitEvent(kind: string, kwargs: Record<string, unknown>, ctx: HostContext): HostResult {
    const { threads } = this.d;
    if (!KNOWN_SCRIPT_EVENTS.has(kind)) return { value: null };
    if (kind === "step_completed") {
      return ctx.commit({ value: null }, () => {
        const n = threads.addStep(this.threadId);
        const t = threads.require(this.threadId);
        threads.event(this.threadId, ThreadEvent.StepCompleted, {
          step_count: n,
          input_tokens: t.input_tokens,
          output_tokens: t.output_tokens,
        });
      });
    }
    if (kind === "skill_activated") {
      const raw = kwargs.skill_names;
      const names = (Array.isArray(raw) ? raw.map((x) => str(x)) : str(raw).split(","))
        .map((s) => s.trim())
        .filter(Boolean);
      this.d.onEvent?.({ type: "skills", names });
      return ctx.commit({ value: null }, () =>
        threads.event(this.threadId, ThreadEvent.SkillActivated, { skill_names: names }),
      );
    }
    return ctx.commit({ value: null }, () =>
      threads.event(this.threadId, ThreadEvent.Emitted, { kind, ...kwargs }),
    );
  }

  /**
   * `__transition_to__(state, reason)`: the script says where the thread goes; the host moves it
   * (approvals: Waiting; FINAL: Completed/Failed) and records the request and its reason.
   * An unknown name raises ValueError, a move the table forbids from Running raises RuntimeError.
   */
  transitionTo(state: string, reason: string, ctx: HostContext): HostResult {
    const target = state.toLowerCase();
    if (!isThreadState(target))
      return pyError(
        "ValueError",
        `__transition_to__: unknown state ${JSON.stringify(state)} (one of created, running, waiting, suspended, completed, done, failed)`,
      );
    if (target !== "running" && !canTransition("running", target))
      return pyError("RuntimeError", `__transition_to__: a running thread cannot move to ${target}`);
    return ctx.commit({ value: null }, () =>
      this.d.threads.event(this.threadId, ThreadEvent.TransitionRequested, { to: target, reason }),
    );
  }

  /** `FINAL(outcome)`: a dict `{outcome, response, error, …}` is kept as an object; any other value is the answer. */
  final(v: unknown, ctx: HostContext): HostResult {
    const isOutcome = v !== null && typeof v === "object" && !Array.isArray(v) && "outcome" in v;
    const outcome: Record<string, unknown> = isOutcome
      ? { ...(v as Record<string, unknown>) }
      : { outcome: "completed", response: v };
    // The script's state travels in the checkpoint already; the outcome keeps what a reader needs.
    delete outcome.state;
    const response = outcome.response;
    return ctx.commit({ value: null }, () =>
      this.d.threads.patch(this.threadId, {
        final_result: response === undefined || response === null ? null : str(response),
        final_outcome: JSON.stringify(outcome),
      }),
    );
  }
}

export type { HostAnswer };
