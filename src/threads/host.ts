/**
 * The host functions an orchestrator calls (`__llm_complete__`, `__execute_action__`, …, `FINAL`).
 * Each answers with a value or a Python error for the VM; a {@link HostStop} ends the drive (budget,
 * cancel, a wait that let go). Names the host does not serve raise NameError, so a script's own
 * functions are never shadowed (Monty resolves those itself).
 */
import { ErrorCode } from "../core/index.js";
import type { ModelMessage, ToolCall, ToolDef } from "../model/index.js";
import { executeAction } from "./checkpoint.js";
import { runCodeStep } from "./code-step.js";
import { DocKind, parseMeta, parseTags } from "./documents.js";
import type { EngineDeps } from "./engine.js";
import { ThreadEvent } from "./events.js";
import { LLM_TIMEOUT_MS } from "./limits.js";
import type { MessageRow } from "./thread-store.js";

/** The answer to one host call: a value, or an exception raised in the script. */
export type HostAnswer = { value: unknown } | { error: { type: string; message: string } };

/** Ends the drive: the thread fails with `reason`, or (outcome `waiting`) stays Waiting. */
export class HostStop extends Error {
  constructor(
    /** `suspended`: the driver was interrupted; the thread keeps its checkpoint. */
    readonly outcome: "failed" | "waiting" | "suspended",
    readonly reason: string,
  ) {
    super(reason);
  }
}

export interface HostContext {
  /** Number of this host call in the thread. */
  seq: number;
  /** Runs `effects` and saves the answered checkpoint in one transaction. */
  commit(answer: HostAnswer, effects?: () => void): HostAnswer;
}

export interface HostHooks {
  waitForDecision(approvalId: string): Promise<"decided" | "released" | "cancelled">;
  /** A host-side failure raised into the script (so the script's death is not blamed on it). */
  hostError(message: string): void;
}

export const pyError = (type: string, message: string): HostAnswer => ({ error: { type, message } });

function str(v: unknown, fallback = ""): string {
  return typeof v === "string" ? v : v === undefined || v === null ? fallback : JSON.stringify(v);
}

/** Stored messages → the model's conversation (system messages are folded into the system prompt). */
export function toModelMessages(rows: readonly MessageRow[]): { messages: ModelMessage[]; system: string[] } {
  const messages: ModelMessage[] = [];
  const system: string[] = [];
  for (const r of rows) {
    if (r.role === "system") system.push(r.content);
    else if (r.role === "user") messages.push({ role: "user", content: r.content });
    else if (r.role === "assistant") {
      const calls = r.tool_calls ? (JSON.parse(r.tool_calls) as ToolCall[]) : [];
      messages.push({ role: "assistant", content: r.content, ...(calls.length ? { toolCalls: calls } : {}) });
    } else
      messages.push({
        role: "tool",
        toolCallId: r.call_id ?? "",
        toolName: r.tool_name ?? "",
        content: r.content,
        ...(r.is_error ? { isError: true } : {}),
      });
  }
  return { messages, system };
}

export class HostCalls {
  constructor(
    readonly d: EngineDeps,
    readonly threadId: string,
    readonly hooks: HostHooks,
  ) {}

  async dispatch(
    name: string,
    args: unknown[],
    kwargs: Record<string, unknown>,
    ctx: HostContext,
  ): Promise<HostAnswer> {
    const arg = (i: number, key: string): unknown => (args.length > i ? args[i] : kwargs[key]);
    switch (name) {
      case "__llm_complete__":
        return this.llmComplete(kwargs, ctx);
      case "__execute_action__":
        return executeAction(
          this,
          str(arg(0, "name")),
          arg(1, "args") ?? {},
          str(kwargs.call_id ?? args[2], ""),
          ctx,
        );
      case "__execute_code_step__":
        return runCodeStep(this, str(arg(0, "code")), ctx);
      case "__check_signals__":
        return { value: this.d.threads.require(this.threadId).cancel_requested ? "cancel" : null };
      case "__emit_event__":
        return this.emitEvent(str(arg(0, "kind")), kwargs, ctx);
      case "__add_message__": {
        const role = str(arg(0, "role"));
        if (!["user", "assistant", "system"].includes(role))
          return pyError(
            "ValueError",
            `__add_message__: role must be user, assistant or system (got ${role})`,
          );
        const content = str(arg(1, "content"));
        return ctx.commit({ value: null }, () =>
          this.d.threads.addMessage({
            thread_id: this.threadId,
            role: role as MessageRow["role"],
            content,
            tool_calls: null,
            call_id: null,
            tool_name: null,
            is_error: 0,
          }),
        );
      }
      case "__save_checkpoint__": {
        const state = JSON.stringify(arg(0, "state") ?? null);
        return ctx.commit({ value: null }, () => this.d.threads.setScriptState(this.threadId, state));
      }
      case "__transition_to__":
        return this.transitionTo(str(arg(0, "state")), str(arg(1, "reason"), ""), ctx);
      case "__retrieve_docs__": {
        const limit = Number(arg(1, "limit") ?? 5);
        const rows = this.d.docs.search(
          str(arg(0, "query")),
          [DocKind.Insight, DocKind.Playbook, DocKind.Skill],
          limit,
        );
        return {
          value: rows.map((r) => ({ doc_id: r.doc_id, kind: r.kind, title: r.title, content: r.content })),
        };
      }
      case "__check_budget__":
        return { value: this.budget() };
      case "__get_actions__":
        return { value: await this.d.actions.list(this.d.signal) };
      case "__list_skills__":
        return { value: this.skills() };
      case "__record_skill_usage__":
        return this.recordSkillUsage(str(arg(0, "doc_id")), Boolean(arg(1, "success")), ctx);
      case "FINAL": {
        const v = arg(0, "result");
        return ctx.commit({ value: null }, () =>
          this.d.threads.patch(this.threadId, { final_result: str(v) }),
        );
      }
      default:
        return pyError("NameError", `name '${name}' is not defined`);
    }
  }

  /** Budget status; `ok:false` names the first budget used up. */
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
      ok: reason === null,
      reason,
      tokens_used: tokens,
      tokens_limit: b.max_tokens,
      elapsed_ms: elapsed,
      time_limit_ms: b.max_duration_ms,
      cost_usd: t.cost_usd,
      cost_limit_usd: b.max_cost_usd,
      steps: t.step_count,
      steps_limit: b.max_steps,
    };
  }

  /** Every tool call of the conversation without a result gets one (an error saying it did not run). */
  fillMissingResults(why: string): void {
    this.d.threads.fillMissingResults(this.threadId, why);
  }

  /** Accounts tokens and their cost on the thread. */
  addUsage(input: number, output: number): void {
    const p = this.d.config.pricing;
    const cost = (input / 1000) * p.input_per_1k_tokens + (output / 1000) * p.output_per_1k_tokens;
    this.d.threads.addTokens(this.threadId, input, output, cost);
  }

  async llmComplete(kwargs: Record<string, unknown>, ctx: HostContext): Promise<HostAnswer> {
    const budget = this.budget();
    if (!budget.ok) throw new HostStop("failed", `budget exhausted: ${String(budget.reason)}`);
    this.fillMissingResults("not run: the orchestrator moved on without running this call");
    const { threads } = this.d;
    const { messages, system } = toModelMessages(threads.messages(this.threadId));
    const sys = [str(kwargs.system, this.d.config.systemPrompt), ...system].join("\n\n");
    const defs = Array.isArray(kwargs.actions) ? (kwargs.actions as Record<string, unknown>[]) : [];
    const tools: ToolDef[] = defs.map((a) => ({
      name: str(a.name),
      description: str(a.description),
      inputSchema: (a.parameters as Record<string, unknown>) ?? { type: "object" },
    }));
    let completion: Awaited<ReturnType<ReturnType<EngineDeps["model"]>["complete"]>>;
    try {
      completion = await this.d.model().complete({
        system: sys,
        messages,
        tools,
        timeoutMs: LLM_TIMEOUT_MS,
        ...(typeof kwargs.max_tokens === "number" ? { maxOutputTokens: kwargs.max_tokens } : {}),
        ...(this.d.signal ? { signal: this.d.signal } : {}),
        onText: (delta) => this.d.onEvent?.({ type: "text", delta }),
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === ErrorCode.Cancelled) throw new HostStop("suspended", "interrupted");
      const msg = `model call failed: ${(e as Error).message}`;
      this.hooks.hostError(msg);
      return ctx.commit(pyError("RuntimeError", msg));
    }
    const valid = completion.toolCalls.filter((c) => !c.invalid);
    const answer: HostAnswer = {
      value: {
        text: completion.text,
        action_calls: valid.map((c) => ({ call_id: c.id, name: c.name, args: c.args ?? {} })),
        usage: { input: completion.usage.inputTokens, output: completion.usage.outputTokens },
        finish_reason: completion.finishReason,
      },
    };
    return ctx.commit(answer, () => {
      this.addUsage(completion.usage.inputTokens, completion.usage.outputTokens);
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
        input_tokens: completion.usage.inputTokens,
        output_tokens: completion.usage.outputTokens,
        tool_calls: completion.toolCalls.map((c) => c.name),
        finish_reason: completion.finishReason,
      });
    });
  }

  emitEvent(kind: string, kwargs: Record<string, unknown>, ctx: HostContext): HostAnswer {
    const { threads } = this.d;
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(kind))
      return pyError("ValueError", `__emit_event__: kind must be snake_case (got ${JSON.stringify(kind)})`);
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
      const names = str(kwargs.skill_names)
        .split(",")
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

  transitionTo(state: string, reason: string, ctx: HostContext): HostAnswer {
    if (state === "running") return ctx.commit({ value: null });
    if (state === "failed")
      throw new HostStop("failed", reason || "the orchestrator moved the thread to failed");
    return pyError(
      "ValueError",
      `__transition_to__: ${state} is entered by the host (waiting: approvals; suspended: restarts; completed: FINAL)`,
    );
  }

  skills(): Record<string, unknown>[] {
    return this.d.docs.list(DocKind.Skill).map((r) => {
      const m = parseMeta(r);
      return {
        doc_id: r.doc_id,
        name: r.title,
        content: r.content,
        tags: parseTags(r),
        keywords: (m.keywords as string[]) ?? [],
        excluded_keywords: (m.excluded_keywords as string[]) ?? [],
        patterns: (m.patterns as string[]) ?? [],
        source: (m.source as string) ?? "authored",
        usage_count: (m.usage_count as number) ?? 0,
        success_count: (m.success_count as number) ?? 0,
        failure_count: (m.failure_count as number) ?? 0,
      };
    });
  }

  recordSkillUsage(docId: string, success: boolean, ctx: HostContext): HostAnswer {
    const doc = this.d.docs.get(docId);
    if (!doc || doc.kind !== DocKind.Skill) return pyError("ValueError", `no skill ${docId}`);
    return ctx.commit({ value: null }, () => {
      // Read again inside the transaction: another thread may have counted a use meanwhile.
      const m = parseMeta(this.d.docs.get(docId) ?? doc);
      m.usage_count = ((m.usage_count as number) ?? 0) + 1;
      const key = success ? "success_count" : "failure_count";
      m[key] = ((m[key] as number) ?? 0) + 1;
      this.d.docs.updateMeta(docId, m);
    });
  }
}
