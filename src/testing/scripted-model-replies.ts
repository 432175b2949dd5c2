/**
 * The wire format of the scripted model's replies (OpenAI chat completions), as pure functions: the
 * `chat.completion.chunk` objects of a streamed reply, the `chat.completion` of a plain one, the
 * usage figures and the error bodies. The server (`scripted-model.ts`) only writes what these build.
 */
import type { ScriptReply, ScriptToolCall } from "./scripted-model-script.js";

/** Text is streamed in deltas of at most this many characters (code points). */
export const TEXT_DELTA_CHARS = 12;
/** The arguments of a tool call are streamed in this many fragments (fewer when shorter). */
export const ARGUMENT_FRAGMENTS = 3;
/** Characters per token when a turn has no `usage` (a deterministic estimate). */
export const CHARS_PER_TOKEN = 4;

/** What a reply needs to know about its request. */
export interface ReplyContext {
  /** 1-based number of the chat-completions request. */
  requestNo: number;
  /** The request's `model` (echoed back). */
  model: string;
  /** Characters of the whole request: messages, tool calls and tool definitions (`requestChars`). */
  promptChars: number;
}

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The tool calls of a reply with their ids and JSON argument texts. */
export function wireToolCalls(reply: ScriptReply, ctx: ReplyContext): WireToolCall[] {
  return (reply.tool_calls ?? []).map((call: ScriptToolCall, i) => ({
    id: call.id ?? `call_${ctx.requestNo}_${i}`,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
}

/** The `finish_reason` of a complete reply. */
export function finishReason(reply: ScriptReply): string {
  return reply.finish_reason ?? ((reply.tool_calls ?? []).length > 0 ? "tool_calls" : "stop");
}

/** The reply's `usage`: the scripted figures, or an estimate of {@link CHARS_PER_TOKEN} per token. */
export function replyUsage(reply: ScriptReply, ctx: ReplyContext): WireUsage {
  if (reply.usage) {
    const { prompt_tokens, completion_tokens } = reply.usage;
    return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
  }
  const outChars =
    (reply.text ?? "").length +
    wireToolCalls(reply, ctx).reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
  const prompt_tokens = Math.ceil(ctx.promptChars / CHARS_PER_TOKEN);
  const completion_tokens = Math.ceil(outChars / CHARS_PER_TOKEN);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Splits `text` into pieces of at most `size` code points (never splitting a surrogate pair). */
export function splitText(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

function chunk(ctx: ReplyContext, delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: `chatcmpl-scripted-${ctx.requestNo}`,
    object: "chat.completion.chunk",
    created: 0,
    model: ctx.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

/** The chunks of a streamed reply, in order, and where a `cut` reply stops. */
export interface StreamPlan {
  /** Every `chat.completion.chunk`, the finish chunk last (`[DONE]` follows it on the wire). */
  chunks: Record<string, unknown>[];
  /** A cut reply writes `chunks.slice(0, cutAfter)` and stops (no finish chunk, no `[DONE]`). */
  cutAfter: number;
}

/**
 * The `chat.completion.chunk` objects of a streamed reply: a role chunk, text deltas of
 * {@link TEXT_DELTA_CHARS}, for each tool call a chunk with its index, id and name followed by its
 * arguments in {@link ARGUMENT_FRAGMENTS} fragments, then a chunk with `finish_reason` (and `usage`
 * when the request asked for `stream_options.include_usage`).
 */
export function streamPlan(reply: ScriptReply, ctx: ReplyContext, includeUsage: boolean): StreamPlan {
  const content: Record<string, unknown>[] = [];
  for (const piece of splitText(reply.text ?? "", TEXT_DELTA_CHARS))
    content.push(chunk(ctx, { content: piece }));
  wireToolCalls(reply, ctx).forEach((call, index) => {
    content.push(
      chunk(ctx, {
        tool_calls: [
          { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      }),
    );
    const args = call.function.arguments;
    const size = Math.max(1, Math.ceil(Array.from(args).length / ARGUMENT_FRAGMENTS));
    for (const fragment of splitText(args, size)) {
      content.push(chunk(ctx, { tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  });
  const finish = chunk(ctx, {}, finishReason(reply));
  if (includeUsage) Object.assign(finish, { usage: replyUsage(reply, ctx) });
  const chunks = [chunk(ctx, { role: "assistant", content: "" }), ...content, finish];
  return { chunks, cutAfter: 1 + Math.ceil(content.length / 2) };
}

/** The `chat.completion` object of a non-streamed reply. */
export function completionBody(reply: ScriptReply, ctx: ReplyContext): Record<string, unknown> {
  const calls = wireToolCalls(reply, ctx);
  return {
    id: `chatcmpl-scripted-${ctx.requestNo}`,
    object: "chat.completion",
    created: 0,
    model: ctx.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.text ?? null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: finishReason(reply),
      },
    ],
    usage: replyUsage(reply, ctx),
  };
}

/** An OpenAI-shaped error body. */
export function errorBody(
  message: string,
  type: string,
  code: string | number | null = null,
): Record<string, unknown> {
  return { error: { message, type, param: null, code } };
}
