/**
 * The shapes `__llm_complete__` works with (pure): stored messages and the script's own message
 * dicts → the model's conversation, and a model reply → the original engine's reply dict, with
 * the host classifying a reply that holds a ```` ```repl ```` / ```` ```python ```` block as code.
 */
import type { ModelMessage, ToolCall } from "../model/index.js";
import type { MessageRow } from "./thread-records.js";

const str = (v: unknown, fallback = ""): string =>
  typeof v === "string" ? v : v === undefined || v === null ? fallback : JSON.stringify(v);

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

/**
 * The script's messages (`{role, content, action_calls?, action_call_id?, action_name?}`, roles
 * `System`/`User`/`Assistant`/`ActionResult` in either case) → the model's conversation.
 */
export function scriptMessagesToModel(list: readonly unknown[]): {
  messages: ModelMessage[];
  system: string[];
} {
  const messages: ModelMessage[] = [];
  const system: string[] = [];
  for (const raw of list) {
    if (!raw || typeof raw !== "object") continue;
    const m = raw as Record<string, unknown>;
    const role = str(m.role).toLowerCase();
    const content = str(m.content);
    if (role === "system") system.push(content);
    else if (role === "assistant") {
      const calls = Array.isArray(m.action_calls)
        ? (m.action_calls as Record<string, unknown>[]).map((c) => ({
            id: str(c.call_id ?? c.id),
            name: str(c.name),
            args: (c.params ?? c.args ?? {}) as unknown,
          }))
        : [];
      messages.push({ role: "assistant", content, ...(calls.length ? { toolCalls: calls } : {}) });
    } else if (role === "actionresult" || role === "tool")
      messages.push({
        role: "tool",
        toolCallId: str(m.action_call_id ?? m.call_id),
        toolName: str(m.action_name ?? m.name),
        content,
      });
    else messages.push({ role: "user", content });
  }
  return { messages, system };
}

const CODE_BLOCK = /```(?:repl|python|py)[^\n]*\n([\s\S]*?)```/g;

/** The code of every ```` ```repl ```` / ```` ```python ```` block in a reply, joined; null when there is none. */
export function extractCode(text: string): string | null {
  const blocks = [...text.matchAll(CODE_BLOCK)].map((m) => m[1] ?? "");
  return blocks.length ? blocks.join("\n") : null;
}

/** A model reply as `__llm_complete__` answers it. */
export interface ScriptReply {
  type: "text" | "code" | "actions";
  content: string;
  code: string | null;
  calls: { name: string; call_id: string; params: unknown }[];
  usage: { input_tokens: number; output_tokens: number; cost_usd: number };
  finish_reason: string;
}

export function classifyReply(
  text: string,
  calls: readonly ToolCall[],
  usage: { input: number; output: number; costUsd: number },
  finishReason: string,
): ScriptReply {
  const code = calls.length ? null : extractCode(text);
  return {
    type: calls.length ? "actions" : code !== null ? "code" : "text",
    content: text,
    code,
    calls: calls.map((c) => ({ name: c.name, call_id: c.id, params: c.args ?? {} })),
    usage: { input_tokens: usage.input, output_tokens: usage.output, cost_usd: usage.costUsd },
    finish_reason: finishReason,
  };
}
