/**
 * Scoring and the assertion check (pure). The DoD dominates: a passing DoD scores 1.0; a failing
 * one scores below 0.5, scaled by the passing share in its test runner's summary line.
 */
import { parseDodSummary } from "./dod-summary.js";
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

/**
 * Test counts of a DoD output, read only from its test runner's summary line (see dod-summary.ts):
 * `failed` includes errors. `undefined` when no summary line is recognised.
 */
export function parseTestCounts(output: string): { passed: number; failed: number } | undefined {
  const s = parseDodSummary(output);
  return s ? { passed: s.passed, failed: s.failed + s.errors } : undefined;
}

/**
 * The score of a round: 1.0 when the DoD passes, else `0.49 × passed/(passed+failed)` from the
 * runner's summary line; 0 (pass/fail only) when no summary line is recognised.
 */
export function scoreRound(passed: boolean, output: string): number {
  if (passed) return 1;
  const counts = parseTestCounts(output);
  if (!counts || counts.passed + counts.failed === 0) return 0;
  const share = counts.passed / (counts.passed + counts.failed);
  return Math.round((FAILING_SCORE_CAP - 0.01) * share * 1000) / 1000;
}
