/**
 * Scoring and the assertion check (pure). The DoD dominates: a passing DoD scores 1.0; a failing
 * one scores below 0.5, scaled by the passing share of test counts found in its output.
 */
import type { DodAssertion } from "./spec.js";

/** Highest score of a failing DoD (exclusive). */
export const FAILING_SCORE_CAP = 0.5;

/** Whether a DoD run meets its assertion. A run that timed out or never started never passes. */
export function assertionHolds(
  assertion: DodAssertion,
  run: { exitCode: number | null; output: string; timedOut: boolean },
): boolean {
  if (run.timedOut || run.exitCode === null) return false;
  return assertion.kind === "exit_code"
    ? run.exitCode === assertion.code
    : run.output.includes(assertion.text);
}

/** Test counts in an output ("3 passed", "1 failed", "2 errors", pytest/vitest/jest/go style). */
export function parseTestCounts(output: string): { passed: number; failed: number } | undefined {
  const sum = (re: RegExp) => {
    let n = 0;
    let seen = false;
    for (const m of output.matchAll(re)) {
      n += Number(m[1]);
      seen = true;
    }
    return seen ? n : undefined;
  };
  const passed = sum(/(\d+)\s+(?:passed|passing)\b/gi);
  const failed = sum(/(\d+)\s+(?:failed|failing|errors?)\b/gi);
  if (passed === undefined && failed === undefined) return undefined;
  return { passed: passed ?? 0, failed: failed ?? 0 };
}

/** The score of a round: 1.0 when the DoD passes, else `0.49 × passed/(passed+failed)` (0 without counts). */
export function scoreRound(passed: boolean, output: string): number {
  if (passed) return 1;
  const counts = parseTestCounts(output);
  if (!counts || counts.passed + counts.failed === 0) return 0;
  const share = counts.passed / (counts.passed + counts.failed);
  return Math.round((FAILING_SCORE_CAP - 0.01) * share * 1000) / 1000;
}
