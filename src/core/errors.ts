/**
 * Errors with stable string codes.
 *
 * Every failure Ratchet reports carries a `code` from {@link ErrorCode}. Callers switch on the code,
 * never on the message. {@link exitStatusFor} maps a code to the CLI exit status of DESIGN.md §6;
 * the mapping is pinned by a test, so a change here is a change of contract.
 */

/** The closed list of error codes. Stored and printed as strings; never renamed. */
export const ErrorCode = {
  /** A bug in Ratchet. */
  Internal: "internal",
  /** Command-line usage is wrong (unknown flag, missing argument). */
  Usage: "usage",
  /** An input file or stream could not be read. */
  UnreadableInput: "unreadable_input",
  /** Input is not valid JSON / YAML. */
  MalformedInput: "malformed_input",
  /** Input parsed but violates its schema (the message names the field). */
  SchemaViolation: "schema_violation",
  /** A value is well-formed but not acceptable (e.g. new_max not above the current budget). */
  InvalidValue: "invalid_value",
  /** No Ratchet workspace was found walking up from the current directory. */
  WorkspaceNotFound: "workspace_not_found",
  PlanNotFound: "plan_not_found",
  StepNotFound: "step_not_found",
  ProjectNotFound: "project_not_found",
  NotFound: "not_found",
  /** A state machine refused the move (names both states). Nothing was written. */
  IllegalTransition: "illegal_transition",
  /** A soft circuit breaker refused the write (deviate on COMPLETED, depth > 3). Nothing was written. */
  SoftBreaker: "soft_breaker",
  /** `complete` on a COMMAND step: shell work goes through `step run`. */
  CompleteOnCommand: "complete_on_command",
  /** The revision budget (hard breaker) refused a deviation. Raise it with a reason. */
  RevisionBudget: "revision_budget_exhausted",
  /** `finish` on a plan whose review step awaits an agent review. */
  AwaitsReview: "plan_awaits_review",
  /** The work ran and failed (a workflow step, a DoD, a thread). */
  WorkFailed: "work_failed",
  /** Static review found blocking issues. */
  ReviewBlocked: "review_blocked",
  /** Provenance: the project has no node source (no repo on disk, or never analysed). */
  NoStateGraph: "no_state_graph",
  /** Provenance: a node key outside the plan's changed set. */
  UnknownNodeKey: "unknown_node_key",
  /** Publish refused by an unanswered finding on a human constraint declared `block: true`. */
  HeadlineBlocked: "headline_blocked",
  /** An operation ran out of time. */
  Timeout: "timeout",
  /** An operation was cancelled by a signal. */
  Cancelled: "cancelled",
  /**
   * The process's store session is lost for good (its PostgreSQL bridge broke: the connection
   * ended, or the bridge stopped answering); the process must be restarted.
   */
  StoreLost: "store_lost",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The exit status of every code (DESIGN.md §6). */
const EXIT_STATUS: Record<ErrorCode, number> = {
  internal: 1,
  usage: 2,
  unreadable_input: 2,
  malformed_input: 2,
  schema_violation: 2,
  invalid_value: 2,
  workspace_not_found: 3,
  plan_not_found: 3,
  step_not_found: 3,
  project_not_found: 3,
  not_found: 3,
  illegal_transition: 4,
  soft_breaker: 4,
  complete_on_command: 5,
  revision_budget_exhausted: 6,
  plan_awaits_review: 7,
  work_failed: 8,
  review_blocked: 9,
  no_state_graph: 10,
  unknown_node_key: 10,
  headline_blocked: 4,
  timeout: 8,
  cancelled: 8,
  store_lost: 11,
};

/** Maps an error code to the CLI exit status. Unknown codes are internal errors (1). */
export function exitStatusFor(code: string): number {
  return Object.hasOwn(EXIT_STATUS, code) ? (EXIT_STATUS as Record<string, number>)[code]! : 1;
}

/** Maps an error code to an HTTP status (used by the server). */
export function httpStatusFor(code: string): number {
  switch (exitStatusFor(code)) {
    case 2:
      return 400;
    case 3:
      return 404;
    case 4:
    case 5:
    case 6:
    case 7:
    case 10:
      return 409;
    case 8:
    case 9:
      return 422;
    case 11:
      return 503;
    default:
      return 500;
  }
}

/** Typed context an error may carry. */
export interface ErrorDetails {
  planId?: string;
  stepId?: string;
  field?: string;
  from?: string;
  to?: string;
  /** Which breaker refused: `soft` or `hard`. */
  breaker?: "soft" | "hard";
  /** Anything else worth printing in a JSON error. */
  [key: string]: unknown;
}

/** The one error class of Ratchet. `code` is stable; `message` is for people. */
export class RatchetError extends Error {
  override readonly name = "RatchetError";
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.details = details;
  }

  /** The CLI exit status for this error. */
  get exitStatus(): number {
    return exitStatusFor(this.code);
  }

  /** A refusal wrote nothing and is reported with `accepted:false`. */
  get isRefusal(): boolean {
    const s = this.exitStatus;
    return s >= 4 && s <= 7;
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...this.details };
  }
}

/** Wraps anything thrown into a RatchetError (unknown errors become `internal`). */
export function toRatchetError(err: unknown): RatchetError {
  if (err instanceof RatchetError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RatchetError(ErrorCode.Internal, message, {}, { cause: err });
}

export function isRatchetError(err: unknown, code?: ErrorCode): err is RatchetError {
  return err instanceof RatchetError && (code === undefined || err.code === code);
}
