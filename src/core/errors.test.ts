import { describe, expect, it } from "vitest";
import {
  ErrorCode,
  exitStatusFor,
  httpStatusFor,
  isRatchetError,
  RatchetError,
  toRatchetError,
} from "./errors.js";

/** The contract: every code and its CLI exit status. A change here is a change of contract. */
const EXIT_TABLE = {
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
} as const;

const HTTP_BY_EXIT: Record<number, number> = {
  1: 500,
  2: 400,
  3: 404,
  4: 409,
  5: 409,
  6: 409,
  7: 409,
  8: 422,
  9: 422,
  10: 409,
  11: 503,
};

describe("ErrorCode", () => {
  it("pins the code strings", () => {
    expect(ErrorCode).toEqual({
      Internal: "internal",
      Usage: "usage",
      UnreadableInput: "unreadable_input",
      MalformedInput: "malformed_input",
      SchemaViolation: "schema_violation",
      InvalidValue: "invalid_value",
      WorkspaceNotFound: "workspace_not_found",
      PlanNotFound: "plan_not_found",
      StepNotFound: "step_not_found",
      ProjectNotFound: "project_not_found",
      NotFound: "not_found",
      IllegalTransition: "illegal_transition",
      SoftBreaker: "soft_breaker",
      CompleteOnCommand: "complete_on_command",
      RevisionBudget: "revision_budget_exhausted",
      AwaitsReview: "plan_awaits_review",
      WorkFailed: "work_failed",
      ReviewBlocked: "review_blocked",
      NoStateGraph: "no_state_graph",
      UnknownNodeKey: "unknown_node_key",
      HeadlineBlocked: "headline_blocked",
      Timeout: "timeout",
      Cancelled: "cancelled",
      StoreLost: "store_lost",
    });
  });

  it("the exit table covers every code and nothing else", () => {
    expect(Object.keys(EXIT_TABLE).sort()).toEqual(Object.values(ErrorCode).sort());
  });
});

describe("exitStatusFor", () => {
  it("maps every code to its pinned status", () => {
    const actual = Object.fromEntries(Object.values(ErrorCode).map((c) => [c, exitStatusFor(c)]));
    expect(actual).toEqual(EXIT_TABLE);
  });

  it.each(["", "nope", "ILLEGAL_TRANSITION", "toString", "__proto__", "constructor"])(
    "unknown code %j → 1",
    (code) => {
      expect(exitStatusFor(code)).toBe(1);
    },
  );
});

describe("httpStatusFor", () => {
  it.each(Object.entries(EXIT_TABLE))("%s → by exit status", (code, exit) => {
    expect(httpStatusFor(code)).toBe(HTTP_BY_EXIT[exit]);
  });

  it("pins the interesting ones", () => {
    expect(httpStatusFor("schema_violation")).toBe(400);
    expect(httpStatusFor("plan_not_found")).toBe(404);
    expect(httpStatusFor("illegal_transition")).toBe(409);
    expect(httpStatusFor("plan_awaits_review")).toBe(409);
    expect(httpStatusFor("work_failed")).toBe(422);
    expect(httpStatusFor("review_blocked")).toBe(422);
    expect(httpStatusFor("internal")).toBe(500);
    expect(httpStatusFor("no_such_code")).toBe(500);
  });
});

describe("RatchetError", () => {
  it.each(Object.entries(EXIT_TABLE))("%s: exitStatus %i, refusal exactly for 4–7", (code, exit) => {
    const err = new RatchetError(code as ErrorCode, "m");
    expect(err.exitStatus).toBe(exit);
    expect(err.isRefusal).toBe(exit >= 4 && exit <= 7);
  });

  it("refusals are exactly these codes", () => {
    const refusals = Object.values(ErrorCode).filter((c) => new RatchetError(c, "m").isRefusal);
    expect(refusals.sort()).toEqual(
      [
        "illegal_transition",
        "soft_breaker",
        "complete_on_command",
        "revision_budget_exhausted",
        "plan_awaits_review",
        "headline_blocked",
      ].sort(),
    );
  });

  it("carries code, message, details and cause; toJSON flattens details", () => {
    const cause = new Error("root");
    const err = new RatchetError(ErrorCode.SoftBreaker, "no", { stepId: "p-A", breaker: "soft" }, { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("RatchetError");
    expect(err.cause).toBe(cause);
    expect(err.toJSON()).toEqual({ code: "soft_breaker", message: "no", stepId: "p-A", breaker: "soft" });
  });

  it("toRatchetError keeps RatchetErrors and wraps anything else as internal", () => {
    const own = new RatchetError(ErrorCode.Usage, "u");
    expect(toRatchetError(own)).toBe(own);
    const wrapped = toRatchetError(new TypeError("boom"));
    expect(wrapped.code).toBe("internal");
    expect(wrapped.message).toBe("boom");
    expect(wrapped.exitStatus).toBe(1);
    expect(toRatchetError("text").message).toBe("text");
  });

  it("isRatchetError checks the class and optionally the code", () => {
    const err = new RatchetError(ErrorCode.Timeout, "t");
    expect(isRatchetError(err)).toBe(true);
    expect(isRatchetError(err, ErrorCode.Timeout)).toBe(true);
    expect(isRatchetError(err, ErrorCode.Cancelled)).toBe(false);
    expect(isRatchetError(new Error("x"))).toBe(false);
  });
});
