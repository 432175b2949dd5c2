/**
 * The one service behind every tool route: allowlist, arguments, lookup, schema check, then the
 * call under a deadline. HTTP routes and the CLI call this; it never touches HTTP.
 */
import { BridgeError, BridgeErrorKind, toBridgeError } from "./errors.js";
import { checkSchema, describeProblem } from "./json-schema.js";
import { DEFAULT_CALL_TIMEOUT_MS } from "./limits.js";
import { assertAllowed, qualifiedName, type ToolRef } from "./names.js";
import type { ToolRegistry } from "./registry.js";
import { type CallContext, raceSignal } from "./tools.js";

/** Options of {@link invokeTool}; every field is optional. */
export interface InvokeOptions {
  /** Tools the run may use (`mcp:server/tool`, `mcp:server/*`, `custom:tool`, …). Default: all. */
  allowedTools?: readonly string[];
  /** Time limit of the call when the tool declares none. Default {@link DEFAULT_CALL_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Aborts the call (e.g. the HTTP client went away). */
  signal?: AbortSignal;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The JSON type of a body that is not an object, for the 400 message. */
function kindOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

/**
 * Runs `fn` under a deadline of `timeoutMs` and the caller's `signal`. When either fires, the
 * context's signal aborts with a `timeout` / `cancelled` BridgeError naming `label`, and that
 * error is what the promise rejects with.
 */
export async function withDeadline<T>(
  label: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  fn: (ctx: CallContext) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const timer = setTimeout(
    () => ac.abort(new BridgeError(BridgeErrorKind.Timeout, `${label} timed out after ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onCallerAbort = () =>
    ac.abort(new BridgeError(BridgeErrorKind.Cancelled, `${label} was cancelled: the caller went away`));
  if (signal?.aborted) onCallerAbort();
  else signal?.addEventListener("abort", onCallerAbort, { once: true });
  try {
    // Raced as well: a built-in handler may ignore the signal, and the deadline still holds.
    return await raceSignal(
      fn({ signal: ac.signal, timeoutMs, deadline: performance.now() + timeoutMs }),
      ac.signal,
    );
  } catch (err) {
    if (err instanceof BridgeError) throw err;
    if (ac.signal.aborted) throw ac.signal.reason;
    throw toBridgeError(err);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onCallerAbort);
  }
}

/**
 * Calls one tool with `args` (the parsed request body) and returns its result.
 *
 * @throws BridgeError `forbidden` (allowlist), `bad_request` (not an object, fails the schema —
 *   the message names the argument), `not_found` (server or tool), `unavailable`, `tool_failed`,
 *   `timeout`, `cancelled`.
 */
export async function invokeTool(
  registry: ToolRegistry,
  ref: ToolRef,
  args: unknown,
  opts: InvokeOptions = {},
): Promise<unknown> {
  assertAllowed(opts.allowedTools, ref);
  const name = qualifiedName(ref);
  if (ref.kind === "mcp") registry.server(ref.server); // 404 before anything is started
  const custom = ref.kind === "custom" ? registry.customTool(ref.tool) : undefined;
  if (!isObject(args))
    throw new BridgeError(
      BridgeErrorKind.BadRequest,
      `the body must be a JSON object of ${name}'s arguments (got ${kindOf(args)})`,
    );
  const timeoutMs = custom?.timeoutMs ?? opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  return withDeadline(`tool ${name}`, timeoutMs, opts.signal, async (ctx) => {
    const desc = await registry.describe(ref, ctx.signal);
    const problem = checkSchema(desc.inputSchema, args);
    if (problem) throw new BridgeError(BridgeErrorKind.BadRequest, `${name}: ${describeProblem(problem)}`);
    return registry.call(ref, args, ctx);
  });
}
