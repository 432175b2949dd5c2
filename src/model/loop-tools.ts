/**
 * The tools side of the tool loop: the built-in `finish` tool, checking a tool set, and running one
 * tool call into exactly one result (a throw, a timeout or a cancellation becomes an error result).
 */
import { ErrorCode, headTail, RatchetError } from "../core/index.js";
import { TOOL_RESULT_HEAD_BYTES, TOOL_RESULT_TAIL_BYTES } from "./limits.js";
import type { ToolCall, ToolDef } from "./types.js";

/** A tool the loop may run. */
export interface LoopTool {
  def: ToolDef;
  /**
   * Runs the call. The value is sent to the model as text (strings as is, anything else as JSON);
   * a throw is sent as an error result. `signal` aborts when the loop is cancelled or times out:
   * the loop stops waiting then, whether or not the tool honours it.
   */
  execute(args: unknown, ctx: { signal: AbortSignal; callId: string }): Promise<unknown>;
}

/** The name of the built-in tool that ends the loop. Reserved: no caller tool may use it. */
export const FINISH_TOOL_NAME = "finish";

/** The built-in `finish` tool: `{ summary: string }`. */
export const FINISH_TOOL: ToolDef = {
  name: FINISH_TOOL_NAME,
  description:
    "Call this when the task is done (or cannot be done). Give a short summary of what was done and what is left. No other tool runs after it.",
  inputSchema: {
    type: "object",
    properties: { summary: { type: "string", description: "What was done, and anything left undone." } },
    required: ["summary"],
    additionalProperties: false,
  },
};

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The tools by name.
 * @throws RatchetError `invalid_value` for a bad or duplicate name, or the reserved `finish`.
 */
export function toolsByName(tools: readonly LoopTool[]): Map<string, LoopTool> {
  const byName = new Map<string, LoopTool>();
  for (const t of tools) {
    const name = t.def.name;
    const field = `tools.${name}`;
    if (!TOOL_NAME.test(name)) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `tool name ${JSON.stringify(name)} must match ${TOOL_NAME}`,
        { field },
      );
    }
    if (name === FINISH_TOOL_NAME) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `tool name "${FINISH_TOOL_NAME}" is reserved for the loop's own finish tool`,
        { field },
      );
    }
    if (byName.has(name))
      throw new RatchetError(ErrorCode.InvalidValue, `tool ${name} is given twice`, { field });
    byName.set(name, t);
  }
  return byName;
}

/** The result of one tool call, as sent to the model. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}

/** Cuts a result to {@link TOOL_RESULT_HEAD_BYTES} + {@link TOOL_RESULT_TAIL_BYTES}. */
function clip(text: string): string {
  return headTail(text, TOOL_RESULT_HEAD_BYTES, TOOL_RESULT_TAIL_BYTES).text;
}

/** The text of a tool's return value: strings as is, `undefined` as empty, anything else as JSON. */
export function resultText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** An error result. */
export function errorOutcome(message: string): ToolOutcome {
  return { content: clip(`error: ${message}`), isError: true };
}

/** The `summary` of a `finish` call, or why the call is not valid. */
export function finishSummary(call: ToolCall): { summary: string } | { error: string } {
  const args = call.args as { summary?: unknown } | null;
  if (call.invalid) return { error: call.invalid };
  if (!args || typeof args !== "object" || typeof args.summary !== "string") {
    return { error: 'finish needs {"summary": string}' };
  }
  return { summary: args.summary };
}

/** Resolves with `promise`, or rejects as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error("aborted"));
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener("abort", onAbort));
}

/**
 * Runs one call of a known tool. Never throws: a throw becomes an error result, and an abort of
 * `signal` ends the wait with the error result `abortMessage()`.
 */
export async function runTool(
  tool: LoopTool,
  call: ToolCall,
  signal: AbortSignal,
  abortMessage: () => string,
): Promise<ToolOutcome> {
  try {
    const value = await untilAborted(
      Promise.resolve().then(() => tool.execute(call.args, { signal, callId: call.id })),
      signal,
    );
    return { content: clip(resultText(value)), isError: false };
  } catch (err) {
    if (signal.aborted) return errorOutcome(abortMessage());
    return errorOutcome(err instanceof Error ? err.message : String(err));
  }
}
