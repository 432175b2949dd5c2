/**
 * Failures of a tool call. Each has a stable `kind` from {@link BridgeErrorKind}; the HTTP status
 * of a reply comes from {@link statusForKind} (one table, pinned by a test) and the CLI exit status
 * from {@link errorCodeForKind} through core's exit table.
 */
import { ErrorCode } from "../core/index.js";

/** The closed list of tool-call failure kinds. Stored and printed as strings; never renamed. */
export const BridgeErrorKind = {
  /** The body is not JSON, not an object, too large, or the arguments fail the tool's schema. */
  BadRequest: "bad_request",
  /** No valid bearer token. */
  Unauthorized: "unauthorized",
  /** The run may not use this tool (`allowedTools`). */
  Forbidden: "forbidden",
  /** No such MCP server, tool or route. */
  NotFound: "not_found",
  /** The tool ran and reported a failure (`isError`, non-zero exit, non-JSON output, a throw). */
  ToolFailed: "tool_failed",
  /** The tool's server could not be reached: it failed to start, crashed, or closed the connection. */
  Unavailable: "unavailable",
  /** The call ran out of time (the tool may still have done its work: ambiguous). */
  Timeout: "timeout",
  /** The caller went away before the call finished. */
  Cancelled: "cancelled",
  /** A bug in the bridge. */
  Internal: "internal",
} as const;

export type BridgeErrorKind = (typeof BridgeErrorKind)[keyof typeof BridgeErrorKind];

const STATUS: Record<BridgeErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  tool_failed: 422,
  unavailable: 502,
  timeout: 504,
  cancelled: 499,
  internal: 500,
};

const CODE: Record<BridgeErrorKind, ErrorCode> = {
  bad_request: ErrorCode.SchemaViolation,
  unauthorized: ErrorCode.InvalidValue,
  forbidden: ErrorCode.InvalidValue,
  not_found: ErrorCode.NotFound,
  tool_failed: ErrorCode.WorkFailed,
  unavailable: ErrorCode.WorkFailed,
  timeout: ErrorCode.Timeout,
  cancelled: ErrorCode.Cancelled,
  internal: ErrorCode.Internal,
};

/** The HTTP status of a reply for a failure kind. */
export function statusForKind(kind: BridgeErrorKind): number {
  return STATUS[kind];
}

/** The core error code (hence the CLI exit status) of a failure kind. */
export function errorCodeForKind(kind: BridgeErrorKind): ErrorCode {
  return CODE[kind];
}

/** A failed tool call. `message` is the `error` text of the reply (redacted before it is sent). */
export class BridgeError extends Error {
  override readonly name = "BridgeError";
  readonly kind: BridgeErrorKind;

  constructor(kind: BridgeErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }

  /** The HTTP status of the reply. */
  get status(): number {
    return statusForKind(this.kind);
  }

  /**
   * True when the tool may have done its work although the call failed (a timeout, a crash or a
   * cancellation mid-call): calling again may repeat a side effect.
   */
  get ambiguous(): boolean {
    return this.kind === "timeout" || this.kind === "cancelled" || this.kind === "unavailable";
  }
}

/** Wraps anything thrown into a BridgeError (unknown errors become `internal`). */
export function toBridgeError(err: unknown): BridgeError {
  if (err instanceof BridgeError) return err;
  return new BridgeError(BridgeErrorKind.Internal, err instanceof Error ? err.message : String(err), {
    cause: err,
  });
}
