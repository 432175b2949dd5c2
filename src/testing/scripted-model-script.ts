/**
 * The script of the scripted model: its zod schema, loading from a JSON or YAML file, and the pure
 * choice of the turn that answers a request. The server is in `scripted-model.ts`; the wire format
 * of a reply in `scripted-model-replies.ts`. The format is documented in docs/models.md.
 */
import { readFileSync } from "node:fs";
import { extname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ErrorCode, MAX_INPUT_BYTES, RatchetError } from "../core/index.js";

const toolCallSchema = z.strictObject({
  /** The tool's name. */
  name: z.string().min(1),
  /** An object (sent as its JSON text) or a raw string (sent as is, e.g. to script broken JSON). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).default({}),
  /** The call id. Default `call_<request number>_<index>`. */
  id: z.string().min(1).optional(),
});

const usageSchema = z.strictObject({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
});

const errorSchema = z.strictObject({
  status: z.number().int().min(400).max(599),
  /** The JSON body. Default `{"error":{"message":"scripted model: HTTP <status>",…}}`. */
  body: z.unknown().optional(),
  /** Seconds, sent as the `Retry-After` header. */
  retry_after: z.number().int().nonnegative().optional(),
});

const replyShape = {
  text: z.string().optional(),
  tool_calls: z.array(toolCallSchema).optional(),
  usage: usageSchema.optional(),
  /** Default `tool_calls` when the reply has tool calls, else `stop`. */
  finish_reason: z.string().min(1).optional(),
  error: errorSchema.optional(),
  /**
   * Answer 200, then report an error inside the reply: a streamed reply sends its text and tool
   * call deltas, then the frame `data: {"error": {"message", "type", "param": null, "code"}}` and
   * `[DONE]` (no finish chunk), as OpenAI-compatible servers (vLLM, LiteLLM, llama.cpp) do when
   * generation fails mid-way; a plain reply is the 200 JSON body `{"error": {…}}`.
   */
  stream_error: z
    .strictObject({
      message: z.string(),
      /** Default `server_error`. */
      type: z.string().optional(),
      code: z.union([z.string(), z.number()]).nullable().optional(),
    })
    .optional(),
  /**
   * End the reply mid-way: `true` closes the SSE stream cleanly after about half of it (no
   * `finish_reason`, no `[DONE]`); `"reset"` destroys the connection at the same point.
   */
  cut: z.union([z.literal(true), z.literal("reset")]).optional(),
  /** Wait this long before answering (the request is marked `aborted` if the client gives up). */
  delay_ms: z.number().int().nonnegative().max(600_000).optional(),
};

const matchSchema = z.strictObject({
  /** Text in the last `user` or `tool` message of the request. */
  contains: z.string().optional(),
  /** Text in one of the tool results after the request's last assistant message. */
  tool_result_contains: z.string().optional(),
  /** The request's `model`, exactly. */
  model: z.string().optional(),
});

const turnSchema = z.strictObject({
  ...replyShape,
  match: matchSchema.optional(),
  /** How many requests this turn answers. Default 1. */
  repeat: z.number().int().min(1).max(10_000).optional(),
});

const replySchema = z.strictObject(replyShape);

export const scriptSchema = z.strictObject({
  turns: z.array(turnSchema).max(10_000).default([]),
  /** Answers every request no turn answers (unlimited). Without it, such a request gets a 500. */
  default: replySchema.optional(),
  /** Model ids listed by `GET /v1/models`. Default `["scripted"]`. */
  models: z.array(z.string().min(1)).optional(),
});

/** A script as written (input: optional fields may be missing). */
export type ScriptInput = z.input<typeof scriptSchema>;
/** A validated script. */
export type Script = z.output<typeof scriptSchema>;
export type ScriptTurn = Script["turns"][number];
export type ScriptReply = NonNullable<Script["default"]>;
export type ScriptToolCall = z.output<typeof toolCallSchema>;

/**
 * Validates a script object.
 * @throws RatchetError `schema_violation` naming every offending field.
 */
export function parseScript(value: unknown, source = "script"): Script {
  const parsed = scriptSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => i.path.map(String).join(".") || "(root)");
  throw new RatchetError(
    ErrorCode.SchemaViolation,
    `${source} is not a valid scripted-model script:\n${z.prettifyError(parsed.error)}`,
    { field: fields[0] },
  );
}

/**
 * Reads a script file: `.yaml`/`.yml` as YAML, anything else as JSON.
 * @throws RatchetError `unreadable_input`, `malformed_input` or `schema_violation`.
 */
export function loadScriptFile(path: string): Script {
  const full = resolve(path);
  let bytes: Buffer;
  try {
    bytes = readFileSync(full);
  } catch (err) {
    const message = `cannot read script ${full}: ${(err as Error).message}`;
    throw new RatchetError(ErrorCode.UnreadableInput, message, { path: full });
  }
  if (bytes.length > MAX_INPUT_BYTES) {
    const message = `script ${full} is larger than ${MAX_INPUT_BYTES} bytes`;
    throw new RatchetError(ErrorCode.InvalidValue, message, { path: full });
  }
  const ext = extname(full).toLowerCase();
  const yaml = ext === ".yaml" || ext === ".yml";
  let value: unknown;
  try {
    const text = bytes.toString("utf8");
    value = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    const message = `script ${full} is not valid ${yaml ? "YAML" : "JSON"}: ${(err as Error).message}`;
    throw new RatchetError(ErrorCode.MalformedInput, message, { path: full });
  }
  return parseScript(value, `script ${full}`);
}

/** The parts of a chat-completions request a `match` looks at. */
export interface RequestView {
  model?: string;
  messages: { role: string; content: string }[];
}

/** The {@link RequestView} of a chat-completions request body. */
export function requestView(body: Record<string, unknown>): RequestView {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  return {
    model: typeof body.model === "string" ? body.model : undefined,
    messages: messages.map((m) => ({ role: String(m?.role ?? ""), content: contentText(m?.content) })),
  };
}

/**
 * Characters of everything a model reads in a chat-completions request: every message's text
 * (system, user, assistant, tool), the names and argument texts of the assistant's tool calls, and
 * the tool definitions as the JSON they are sent as. The usage estimate divides this by
 * `CHARS_PER_TOKEN`, so a prompt's tools and earlier tool calls are counted like its text.
 */
export function requestChars(body: Record<string, unknown>): number {
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  let n = 0;
  for (const m of messages) {
    n += contentText(m?.content).length;
    const calls = Array.isArray(m?.tool_calls) ? (m.tool_calls as Record<string, unknown>[]) : [];
    for (const c of calls) {
      const f = (c?.function ?? {}) as Record<string, unknown>;
      n += String(f.name ?? "").length;
      n += typeof f.arguments === "string" ? f.arguments.length : JSON.stringify(f.arguments ?? "").length;
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) n += JSON.stringify(body.tools).length;
  return n;
}

/** Flattens an OpenAI message `content` (string, or array of parts) to text. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (p && typeof p === "object" && typeof p.text === "string" ? (p.text as string) : ""))
      .join("");
  }
  return "";
}

/** Whether a turn's `match` (if any) accepts the request. */
export function turnMatches(turn: ScriptTurn, req: RequestView): boolean {
  const m = turn.match;
  if (!m) return true;
  if (m.model !== undefined && req.model !== m.model) return false;
  if (m.contains !== undefined) {
    const last = req.messages.findLast((msg) => msg.role === "user" || msg.role === "tool");
    if (!last?.content.includes(m.contains)) return false;
  }
  if (m.tool_result_contains !== undefined) {
    const lastAssistant = req.messages.findLastIndex((msg) => msg.role === "assistant");
    const results = req.messages.slice(lastAssistant + 1).filter((msg) => msg.role === "tool");
    if (!results.some((msg) => msg.content.includes(m.tool_result_contains as string))) return false;
  }
  return true;
}

/**
 * Picks the turn for a request: the first turn with uses left whose `match` accepts it. `uses[i]`
 * counts the uses of turn `i` so far (the caller increments it). Returns the index, or `-1`.
 */
export function pickTurn(script: Script, uses: readonly number[], req: RequestView): number {
  return script.turns.findIndex((turn, i) => (uses[i] ?? 0) < (turn.repeat ?? 1) && turnMatches(turn, req));
}
