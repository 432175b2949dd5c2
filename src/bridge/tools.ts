/** The shapes every tool shares: its description (for validation and the spec) and how it is called. */
import type { JsonSchema } from "./json-schema.js";
import type { ToolRef } from "./names.js";

/** What the bridge knows about a tool: enough to validate its arguments and print its spec. */
export interface ToolDescription {
  ref: ToolRef;
  /** `mcp:server/tool` or `custom:tool`. */
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** Bounds of one call. `signal` aborts on the deadline or when the caller goes away. */
export interface CallContext {
  signal: AbortSignal;
  /** The call's time limit in milliseconds (for messages). */
  timeoutMs: number;
  /** When the call must be over, on the `performance.now()` clock. */
  deadline: number;
}

/** Milliseconds left before the deadline (at least 1). */
export function remainingMs(ctx: CallContext): number {
  return Math.max(1, Math.ceil(ctx.deadline - performance.now()));
}

/** Resolves like `promise`, or rejects with `signal.reason` as soon as `signal` aborts. */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * A custom tool: a command from the config, or a built-in function. `call` resolves to the result
 * or throws (a `BridgeError` keeps its kind; anything else is a `tool_failed`).
 */
export interface CustomTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  /** Its own time limit, replacing the bridge's call timeout. */
  timeoutMs?: number;
  origin: "command" | "builtin";
  call(args: Record<string, unknown>, ctx: CallContext): Promise<unknown>;
}
