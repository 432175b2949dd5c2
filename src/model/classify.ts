/**
 * Turns whatever one attempt of a model call threw (an AI SDK `APICallError`, a fetch failure, an
 * error part in the stream, an abort) into a {@link ModelError} with its kind. No I/O; the current
 * time comes in as `nowMs`.
 */
import { AISDKError, APICallError } from "ai";
import { kindForStatus, ModelError, type ModelErrorKind, parseRetryAfter } from "./errors.js";
import { MAX_ERROR_DETAIL_CHARS } from "./limits.js";

export interface FailureContext {
  /** `provider:model`. */
  model: string;
  /** The attempt that failed (1-based). */
  attempt: number;
  /** The reply had started streaming (response headers accepted) when it failed. */
  started: boolean;
  /** The call's own time limit passed. */
  timedOut: boolean;
  /** The caller's signal aborted. */
  cancelled: boolean;
  timeoutMs: number;
  /** Masks secrets (the API key) in every text that goes into the error. */
  redact: (text: string) => string;
  nowMs: number;
}

const NETWORK_CODES =
  /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|UND_ERR_\w+)$/;

const STATUS_LABEL: Partial<Record<ModelErrorKind, string>> = {
  rate_limited: "rate limited",
  server_error: "server error",
  auth: "authentication failed",
};

/**
 * The text of an error frame a server sent inside a 200 stream: OpenAI-compatible
 * `data: {"error": {"message": …, "type": …, "code": …}}` or Anthropic's `event: error` (`{type,
 * message}`). The SDKs hand the parsed object over as is; `String()` of it is `[object Object]`.
 */
function frameText(frame: object): string {
  const f = frame as { message?: unknown; type?: unknown; code?: unknown; error?: unknown };
  if (typeof f.message !== "string") {
    if (f.error && typeof f.error === "object") return frameText(f.error);
    try {
      return `the server sent an error frame: ${JSON.stringify(frame)}`;
    } catch {
      return "the server sent an unreadable error frame";
    }
  }
  const tags = [
    typeof f.type === "string" && f.type !== "" ? `type ${f.type}` : "",
    (typeof f.code === "string" && f.code !== "") || typeof f.code === "number" ? `code ${f.code}` : "",
  ].filter(Boolean);
  return `the server reported an error in the stream: ${f.message}${tags.length > 0 ? ` (${tags.join(", ")})` : ""}`;
}

/** An error frame's parsed body (not an `Error`: what the SDKs pass on from the stream). */
function isErrorFrame(err: unknown): err is object {
  return err !== null && typeof err === "object" && !(err instanceof Error);
}

function errorText(err: unknown): string {
  if (isErrorFrame(err)) return frameText(err);
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code ?? (err as { code?: unknown }).code;
  const parts = [err.message];
  if (cause && !err.message.includes(cause.message)) parts.push(cause.message);
  if (typeof code === "string" && !parts.some((p) => p.includes(code))) parts.push(code);
  return parts.join(": ");
}

function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof TypeError && /fetch failed|terminated|other side closed/i.test(err.message)) return true;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && NETWORK_CODES.test(code);
}

/**
 * The {@link ModelError} for a failed attempt, or `undefined` when `err` is not a model failure at
 * all (a bug elsewhere: the caller rethrows it as is).
 */
export function classifyFailure(err: unknown, ctx: FailureContext): ModelError | undefined {
  const make = (
    kind: ModelErrorKind,
    what: string,
    extra: { status?: number; retryAfterMs?: number } = {},
  ) => {
    let detail = ctx.redact(what);
    if (detail.length > MAX_ERROR_DETAIL_CHARS) detail = `${detail.slice(0, MAX_ERROR_DETAIL_CHARS)}…`;
    const after = ctx.attempt > 1 ? ` (after ${ctx.attempt} attempts)` : "";
    return new ModelError(kind, `model ${ctx.model}: ${detail}${after}`, {
      model: ctx.model,
      attempts: ctx.attempt,
      ...extra,
    });
  };

  if (ctx.cancelled) return make("cancelled", "the call was cancelled");
  if (ctx.timedOut) return make("timeout", `no complete reply within ${ctx.timeoutMs} ms`);
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    // No status: the connection failed. A 2xx: the reply was accepted, then its body broke.
    if (status === undefined || status < 400) {
      return ctx.started || status !== undefined
        ? make("incomplete_stream", `the reply stream broke off: ${errorText(err)}`)
        : make("connection", `cannot reach ${err.url}: ${errorText(err)}`);
    }
    const kind = kindForStatus(status);
    const retryAfterMs = parseRetryAfter(err.responseHeaders, ctx.nowMs);
    const label = STATUS_LABEL[kind] ?? "request refused";
    return make(kind, `${label} (HTTP ${status}): ${err.message}`, {
      status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  // Part of the reply may have reached the caller: never retried once started (see `incomplete_stream`).
  if (isErrorFrame(err)) return make(ctx.started ? "incomplete_stream" : "server_error", frameText(err));
  if (ctx.started) return make("incomplete_stream", `the reply stream broke off: ${errorText(err)}`);
  if (isNetworkError(err)) return make("connection", `connection failed: ${errorText(err)}`);
  if (AISDKError.isInstance(err)) return make("bad_request", `the request was refused: ${errorText(err)}`);
  return undefined;
}
