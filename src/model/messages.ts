/**
 * Converts Ratchet's plain messages and tool definitions to the AI SDK's. Pure: no I/O.
 *
 * Consecutive `tool` messages become one SDK tool message (one part per result): Anthropic needs
 * every result of a turn in one message, and the OpenAI-compatible adapter still sends one
 * `role: "tool"` message per result.
 */
import type { JSONSchema7, ModelMessage as SdkMessage, ToolResultPart, ToolSet } from "ai";
import { jsonSchema, tool } from "ai";
import type { ModelMessage, ToolDef } from "./types.js";

/** The AI SDK form of a conversation. */
export function toSdkMessages(messages: readonly ModelMessage[]): SdkMessage[] {
  const out: SdkMessage[] = [];
  for (const m of messages) {
    switch (m.role) {
      case "user":
        out.push({ role: "user", content: m.content });
        break;
      case "assistant": {
        const calls = m.toolCalls ?? [];
        if (calls.length === 0) {
          out.push({ role: "assistant", content: m.content });
          break;
        }
        out.push({
          role: "assistant",
          content: [
            ...(m.content ? [{ type: "text" as const, text: m.content }] : []),
            ...calls.map((c) => ({
              type: "tool-call" as const,
              toolCallId: c.id,
              toolName: c.name,
              input: c.args,
            })),
          ],
        });
        break;
      }
      case "tool": {
        const part: ToolResultPart = {
          type: "tool-result",
          toolCallId: m.toolCallId,
          toolName: m.toolName,
          output: m.isError ? { type: "error-text", value: m.content } : { type: "text", value: m.content },
        };
        const last = out.at(-1);
        if (last?.role === "tool") last.content.push(part);
        else out.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return out;
}

/**
 * The AI SDK tool set of some definitions. No `execute`: the SDK reports the calls and the caller
 * runs them. The arguments are not validated here (each tool validates its own input).
 */
export function toSdkTools(defs: readonly ToolDef[]): ToolSet {
  const tools: ToolSet = {};
  for (const d of defs) {
    tools[d.name] = tool({
      description: d.description,
      inputSchema: jsonSchema(d.inputSchema as JSONSchema7),
    });
  }
  return tools;
}
