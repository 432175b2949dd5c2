import { describe, expect, it } from "vitest";
import { assertionHolds, parseTestCounts, scoreRound } from "./score.js";

describe("scoring", () => {
  it("a passing DoD scores 1", () => expect(scoreRound(true, "1 failed")).toBe(1));
  it("a failing DoD scores below 0.5, scaled by passing tests", () => {
    expect(scoreRound(false, "no counts")).toBe(0);
    expect(scoreRound(false, "3 passed, 1 failed")).toBeCloseTo(0.49 * 0.75, 2);
    expect(scoreRound(false, "10 passed")).toBeLessThan(0.5);
    expect(scoreRound(false, "1 passed, 3 failed")).toBeLessThan(scoreRound(false, "3 passed, 1 failed"));
  });
  it("parses counts", () => {
    expect(parseTestCounts("== 2 failed, 5 passed in 0.1s ==")).toEqual({ passed: 5, failed: 2 });
    expect(parseTestCounts("nothing")).toBeUndefined();
  });
  it("checks assertions", () => {
    const run = { exitCode: 0, output: "all passed", timedOut: false };
    expect(assertionHolds({ kind: "exit_code", code: 0 }, run)).toBe(true);
    expect(assertionHolds({ kind: "substring", text: "passed" }, run)).toBe(true);
    expect(assertionHolds({ kind: "substring", text: "passed" }, { ...run, timedOut: true })).toBe(false);
    expect(assertionHolds({ kind: "exit_code", code: 1 }, run)).toBe(false);
  });
});
