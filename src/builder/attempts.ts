/**
 * The pure pieces of a Builder attempt: the result of an attempt whose script did not run, and the
 * attempt's ledger log. No I/O (build.ts writes).
 */
import type { LearnedStepResult } from "../workflow/index.js";

/** The result of an attempt whose script did not run (no main.py, or lock_code without a script). */
export function notRunAttempt(error: string, log: string = error): LearnedStepResult {
  return {
    outcome: "missing_script",
    fastPath: false,
    exitCode: null,
    durationMs: null,
    error,
    log,
    protection: "none",
    failureReason: null,
    metadataRecorded: false,
  };
}

/** One attempt's ledger log: its kind and tokens, the agent's log, sub-agents, the run, the diff. */
export function attemptLog(a: {
  n: number;
  kind: string;
  tokens: number;
  agentLog?: readonly string[] | undefined;
  subAgentLog?: readonly string[] | undefined;
  runLog: string;
  diff: string | null;
}): string {
  return [
    `attempt ${a.n} (${a.kind}), ${a.tokens} tokens`,
    ...(a.agentLog ? ["--- agent ---", ...a.agentLog] : []),
    ...(a.subAgentLog && a.subAgentLog.length > 0 ? ["--- sub-agents ---", ...a.subAgentLog] : []),
    "--- static review + run + validation ---",
    a.runLog,
    ...(a.diff ? [`--- diff: ${a.diff} ---`] : []),
  ].join("\n");
}

/** The error an attempt reports: none when it passed, the model's when the agent failed, else the run's. */
export function attemptError(
  passed: boolean,
  agentError: string | undefined,
  runError: string | null,
): string | null {
  if (passed) return null;
  return agentError ? `model failed: ${agentError}` : runError;
}
