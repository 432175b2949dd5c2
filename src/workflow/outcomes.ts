/**
 * Classifying a learned script's run and wording its error. Pure: no I/O.
 *
 * The rules (specs/README.md, "Steps"):
 * - exit 0 and valid outputs → `passed`;
 * - a plain non-zero exit whose outputs still validate counts as success, as the original did —
 *   but only when there was something to validate (a schema with files or db checks, or declared
 *   outputs); with nothing to check, a non-zero exit is a failure (no silent success);
 * - a time-out, a cancellation or death by a signal is always an execution error;
 * - otherwise `script_failed` (execution_error), `validation_failed` (validation_error) or
 *   `execution_and_validation_failed` (execution_and_validation_error).
 */
import { StepOutcome, type ValidationIssue } from "./types.js";

export type FailureReason = "execution_error" | "validation_error" | "execution_and_validation_error";

export interface ScriptFacts {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
}

export interface Classified {
  outcome:
    | typeof StepOutcome.Passed
    | typeof StepOutcome.ScriptFailed
    | typeof StepOutcome.ValidationFailed
    | typeof StepOutcome.ScriptAndValidationFailed;
  success: boolean;
  failureReason: FailureReason | null;
  /** The script exited non-zero but its outputs validated, so it passed. */
  nonZeroAccepted: boolean;
}

/** Classifies one script run given its process facts and its validation verdict. */
export function classifyScriptRun(
  facts: ScriptFacts,
  validation: { ok: boolean },
  opts: { somethingToValidate: boolean },
): Classified {
  const exitedCleanly = facts.exitCode === 0 && !facts.timedOut && !facts.cancelled && facts.signal === null;
  const plainNonZero = facts.exitCode !== null && facts.exitCode !== 0 && !facts.timedOut && !facts.cancelled;
  if (validation.ok && exitedCleanly)
    return { outcome: StepOutcome.Passed, success: true, failureReason: null, nonZeroAccepted: false };
  if (validation.ok && plainNonZero && opts.somethingToValidate)
    return { outcome: StepOutcome.Passed, success: true, failureReason: null, nonZeroAccepted: true };
  if (validation.ok)
    return {
      outcome: StepOutcome.ScriptFailed,
      success: false,
      failureReason: "execution_error",
      nonZeroAccepted: false,
    };
  if (exitedCleanly)
    return {
      outcome: StepOutcome.ValidationFailed,
      success: false,
      failureReason: "validation_error",
      nonZeroAccepted: false,
    };
  return {
    outcome: StepOutcome.ScriptAndValidationFailed,
    success: false,
    failureReason: "execution_and_validation_error",
    nonZeroAccepted: false,
  };
}

/** "exited with 3", "was killed at its 600 s time limit", "was killed by SIGKILL", "was cancelled". */
export function describeExit(facts: ScriptFacts, timeoutSeconds: number): string {
  if (facts.timedOut) return `was killed at its ${timeoutSeconds} s time limit`;
  if (facts.cancelled) return "was cancelled";
  if (facts.exitCode !== null) return `exited with ${facts.exitCode}`;
  return `was killed by ${facts.signal ?? "a signal"}`;
}

/** One line per validation issue: `out.json $.count: must be ≥ 1 (min_value)`. */
export function formatIssues(issues: readonly ValidationIssue[], max: number): string {
  const lines = issues
    .slice(0, max)
    .map(
      (i) =>
        `${[i.file, i.path].filter(Boolean).join(" ")}${i.file || i.path ? ": " : ""}${i.message} (${i.check})`,
    );
  if (issues.length > max) lines.push(`… and ${issues.length - max} more`);
  return lines.join("; ");
}

/** The last `maxChars` characters of `text`, trimmed, with `…` when cut. */
export function tail(text: string, maxChars: number): string {
  const t = text.trimEnd();
  if (t.length <= maxChars) return t.trim();
  return `…${t.slice(t.length - maxChars).trimStart()}`;
}

/**
 * The step's error: what failed and the real evidence — the script's stderr tail (or its combined
 * output when stderr is empty) and the validation issues.
 */
export function describeScriptFailure(
  c: Classified,
  facts: ScriptFacts,
  evidence: { stderr: string; combined: string; issues: readonly ValidationIssue[] },
  limits: { timeoutSeconds: number; tailChars: number; maxIssues: number },
): string | null {
  if (c.success) return null;
  const parts: string[] = [];
  if (c.failureReason !== "validation_error") {
    const out = evidence.stderr.trim() ? evidence.stderr : evidence.combined;
    const shown = tail(out, limits.tailChars);
    parts.push(
      `script ${describeExit(facts, limits.timeoutSeconds)}${shown ? `: ${shown}` : " (no output)"}`,
    );
  }
  if (c.failureReason !== "execution_error")
    parts.push(`outputs failed validation: ${formatIssues(evidence.issues, limits.maxIssues)}`);
  return parts.join("\n");
}
