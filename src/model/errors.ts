/**
 * Failures of a model call. Each has a stable `kind` from {@link ModelErrorKind}, says whether the
 * client retries it, and maps to a core {@link ErrorCode} (hence a CLI exit status) through one
 * table pinned by a test. Messages name the model and are redacted before the error is built.
 */
import { ErrorCode, RatchetError } from "../core/index.js";

/** The closed list of model failure kinds. Stored and printed as strings; never renamed. */
export const ModelErrorKind = {
  /** HTTP 429. Retried (honouring `Retry-After`). */
  RateLimited: "rate_limited",
  /** HTTP 5xx (and 408/409). Retried. */
  ServerError: "server_error",
  /** The endpoint could not be reached or dropped the connection before replying. Retried. */
  Connection: "connection",
  /** The call's time limit passed (retries included). Not retried. */
  Timeout: "timeout",
  /** The caller's signal aborted the call. Not retried. */
  Cancelled: "cancelled",
  /**
   * The reply started but did not finish: no finish event, an `error` finish, a broken or cut
   * stream. Never turned into a short answer. Not retried: part of it may have reached `onText`.
   */
  IncompleteStream: "incomplete_stream",
  /** Any other 4xx (unknown model, bad request, context too long), or a request the SDK refused. */
  BadRequest: "bad_request",
  /** HTTP 401/403: a missing or wrong API key. Not retried. */
  Auth: "auth",
} as const;

export type ModelErrorKind = (typeof ModelErrorKind)[keyof typeof ModelErrorKind];

const CODE: Record<ModelErrorKind, ErrorCode> = {
  rate_limited: ErrorCode.WorkFailed,
  server_error: ErrorCode.WorkFailed,
  connection: ErrorCode.WorkFailed,
  timeout: ErrorCode.Timeout,
  cancelled: ErrorCode.Cancelled,
  incomplete_stream: ErrorCode.WorkFailed,
  bad_request: ErrorCode.InvalidValue,
  auth: ErrorCode.InvalidValue,
};

const RETRYABLE: ReadonlySet<ModelErrorKind> = new Set(["rate_limited", "server_error", "connection"]);

/** The core error code (hence the CLI exit status) of a failure kind. */
export function errorCodeForModelKind(kind: ModelErrorKind): ErrorCode {
  return CODE[kind];
}

export interface ModelErrorDetails {
  /** `provider:model`. */
  model?: string;
  /** The HTTP status, when the endpoint answered. */
  status?: number;
  /** What the server asked for in `Retry-After`, in milliseconds. */
  retryAfterMs?: number;
  /** Attempts made before this error was thrown. */
  attempts?: number;
}

/**
 * A failed model call. Extends {@link RatchetError} (so the CLI and HTTP layers map it like any
 * other error); callers switch on `kind` for the model-specific reason.
 */
export class ModelError extends RatchetError {
  readonly kind: ModelErrorKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;

  constructor(kind: ModelErrorKind, message: string, details: ModelErrorDetails = {}) {
    super(CODE[kind], message, { kind, ...details });
    this.kind = kind;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts ?? 1;
  }

  /** Whether the client retries this failure (another attempt may succeed). */
  get retryable(): boolean {
    return RETRYABLE.has(this.kind);
  }
}

/** Whether `err` is a {@link ModelError} (of `kind`, when given). */
export function isModelError(err: unknown, kind?: ModelErrorKind): err is ModelError {
  return err instanceof ModelError && (kind === undefined || err.kind === kind);
}

/** The kind of an HTTP error status. */
export function kindForStatus(status: number): ModelErrorKind {
  if (status === 401 || status === 403) return "auth";
  if (status === 429) return "rate_limited";
  if (status === 408 || status === 409 || status >= 500) return "server_error";
  return "bad_request";
}

/**
 * The wait a server asked for, in milliseconds: `retry-after-ms` (OpenAI), else `retry-after` in
 * seconds or as an HTTP date (relative to `nowMs`). `undefined` when absent or unreadable.
 */
export function parseRetryAfter(
  headers: Readonly<Record<string, string | undefined>> | undefined,
  nowMs: number,
): number | undefined {
  if (!headers) return undefined;
  const ms = headers["retry-after-ms"];
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers["retry-after"]?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * The wait before attempt `attempt + 1`: the server's `Retry-After` when it gave one, else
 * `baseDelayMs * 2^(attempt-1)` capped at `maxDelayMs`.
 */
export function retryDelayMs(
  attempt: number,
  retryAfterMs: number | undefined,
  opts: { baseDelayMs: number; maxDelayMs: number },
): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  return Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** Math.max(0, attempt - 1));
}
