import { describe, expect, it } from "vitest";
import { classifyScriptRun, describeExit, describeScriptFailure, formatIssues, tail } from "./outcomes.js";

const exit = (
  code: number | null,
  extra: Partial<{ signal: string; timedOut: boolean; cancelled: boolean }> = {},
) => ({
  exitCode: code,
  signal: extra.signal ?? null,
  timedOut: extra.timedOut ?? false,
  cancelled: extra.cancelled ?? false,
});
const ok = { ok: true };
const bad = { ok: false };
const checked = { somethingToValidate: true };
const unchecked = { somethingToValidate: false };

describe("classifyScriptRun", () => {
  it.each([
    ["exit 0, valid", exit(0), ok, checked, "passed", null, false],
    ["exit 0, valid, nothing declared", exit(0), ok, unchecked, "passed", null, false],
    [
      "exit 2 but outputs validate against a schema (the original's rule)",
      exit(2),
      ok,
      checked,
      "passed",
      null,
      true,
    ],
    [
      "exit 2 with nothing to validate is a failure",
      exit(2),
      ok,
      unchecked,
      "script_failed",
      "execution_error",
      false,
    ],
    [
      "time-out with valid outputs",
      exit(null, { timedOut: true, signal: "SIGTERM" }),
      ok,
      checked,
      "script_failed",
      "execution_error",
      false,
    ],
    [
      "killed by a signal",
      exit(null, { signal: "SIGKILL" }),
      ok,
      checked,
      "script_failed",
      "execution_error",
      false,
    ],
    ["exit 0, invalid", exit(0), bad, checked, "validation_failed", "validation_error", false],
    [
      "exit 1, invalid",
      exit(1),
      bad,
      checked,
      "execution_and_validation_failed",
      "execution_and_validation_error",
      false,
    ],
    [
      "time-out, invalid",
      exit(null, { timedOut: true }),
      bad,
      checked,
      "execution_and_validation_failed",
      "execution_and_validation_error",
      false,
    ],
  ] as const)("%s", (_name, facts, validation, opts, outcome, reason, accepted) => {
    const c = classifyScriptRun(facts, validation, opts);
    expect(c).toEqual({
      outcome,
      success: outcome === "passed",
      failureReason: reason,
      nonZeroAccepted: accepted,
    });
  });
});

describe("wording", () => {
  it("describes how the script ended", () => {
    expect(describeExit(exit(3), 600)).toBe("exited with 3");
    expect(describeExit(exit(null, { timedOut: true }), 600)).toBe("was killed at its 600 s time limit");
    expect(describeExit(exit(null, { signal: "SIGKILL" }), 600)).toBe("was killed by SIGKILL");
    expect(describeExit(exit(null, { cancelled: true }), 600)).toBe("was cancelled");
  });

  it("keeps the tail of long output", () => {
    expect(tail("  short\n", 10)).toBe("short");
    expect(tail("0123456789abcdef", 6)).toBe("…abcdef");
  });

  it("lists validation issues, capped", () => {
    const issues = [
      { file: "a.json", path: "$.n", check: "min_value", message: "must be ≥ 1" },
      { file: "b.json", check: "must_exist", message: "b.json does not exist" },
      { check: "builtin_has_output", message: "no output" },
    ];
    expect(formatIssues(issues, 2)).toBe(
      "a.json $.n: must be ≥ 1 (min_value); b.json: b.json does not exist (must_exist); … and 1 more",
    );
  });

  const limits = { timeoutSeconds: 600, tailChars: 40, maxIssues: 5 };

  it("a script failure quotes stderr's tail", () => {
    const facts = exit(1);
    const c = classifyScriptRun(facts, ok, unchecked);
    const text = describeScriptFailure(
      c,
      facts,
      { stderr: "Traceback …\nValueError: upstream said no\n", combined: "x", issues: [] },
      limits,
    );
    expect(text).toBe("script exited with 1: Traceback …\nValueError: upstream said no");
    const cut = describeScriptFailure(
      c,
      facts,
      { stderr: `${"x".repeat(100)}\nfatal: boom`, combined: "", issues: [] },
      limits,
    );
    expect(cut).toBe(`script exited with 1: …${"x".repeat(28)}\nfatal: boom`);
  });

  it("falls back to the combined output when stderr is empty", () => {
    const facts = exit(4);
    const c = classifyScriptRun(facts, ok, unchecked);
    expect(
      describeScriptFailure(c, facts, { stderr: "", combined: "printed on stdout", issues: [] }, limits),
    ).toBe("script exited with 4: printed on stdout");
    expect(describeScriptFailure(c, facts, { stderr: "", combined: "", issues: [] }, limits)).toBe(
      "script exited with 4 (no output)",
    );
  });

  it("names both failures when both happened, and nothing when it passed", () => {
    const facts = exit(1);
    const issues = [{ file: "out.json", check: "must_exist", message: "out.json does not exist" }];
    const both = classifyScriptRun(facts, bad, checked);
    expect(describeScriptFailure(both, facts, { stderr: "boom", combined: "boom", issues }, limits)).toBe(
      "script exited with 1: boom\noutputs failed validation: out.json: out.json does not exist (must_exist)",
    );
    const passed = classifyScriptRun(exit(0), ok, checked);
    expect(
      describeScriptFailure(passed, exit(0), { stderr: "", combined: "", issues: [] }, limits),
    ).toBeNull();
  });
});
