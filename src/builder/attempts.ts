/**
 * The pure pieces of a Builder build and its attempts: which step may be built, what the agents
 * are told about the step, the result of an attempt whose script did not run, the next attempt's
 * title, the repair feedback's facts, an attempt's summary and ledger log. No I/O (build.ts
 * reads, runs and writes).
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  ExecutionMode,
  type LearnedStepResult,
  type LearningsAccess,
  notRun,
  resolveMode,
  StepOutcome,
  type Workflow,
  type WorkflowStep,
} from "../workflow/index.js";
import { CODE_EXEC_FALLBACK_ATTEMPTS, MAX_REPAIR_ITERATIONS, SKILL_NOTES_MAX_CHARS } from "./limits.js";
import type { FeedbackFinding, RepairFacts, TaskFacts } from "./prompt.js";
import { headTailChars } from "./text.js";

/** What kind of attempt: the saved script, the first agent, a repair, or a code_exec fallback. */
export type AttemptKind = "fast_path" | "author" | "repair" | "code_exec";

/**
 * The step `stepId` of `wf`, when it can be built.
 * @throws RatchetError `step_not_found` (no such step), `usage` (not a learn_code step).
 */
export function buildableStep(wf: Workflow, stepId: string): WorkflowStep {
  const step = wf.steps.find((s) => s.id === stepId);
  if (!step)
    throw new RatchetError(
      ErrorCode.StepNotFound,
      `workflow ${wf.id} has no step ${stepId} (steps: ${wf.steps.map((s) => s.id).join(", ")})`,
      { stepId, field: "step" },
    );
  const mode = resolveMode(step, wf.defaults);
  if (mode.mode !== ExecutionMode.LearnCode)
    throw new RatchetError(
      ErrorCode.Usage,
      `step ${stepId} runs in ${mode.mode} mode (${mode.reason}): only learn_code steps are built`,
      { stepId, field: "step" },
    );
  return step;
}

/** The step's `learnings_access`, else the workflow's, else `read`. */
export function learningsAccess(wf: Workflow, step: WorkflowStep): LearningsAccess {
  return step.agent_configs.learnings_access ?? wf.defaults.learnings_access ?? "read";
}

/**
 * What every agent of the build is told about the step: its task, the declared `VAR_*` /
 * `SECRET_*` names, the output file names, the dependencies, the shared notes (`notes`, read
 * only when the access allows it, cut to {@link SKILL_NOTES_MAX_CHARS}) and, with `read-write`,
 * the learning objective.
 */
export function taskFacts(
  wf: Workflow,
  step: WorkflowStep,
  access: LearningsAccess,
  notes: string | undefined,
): TaskFacts {
  return {
    stepId: step.id,
    description: step.description,
    declared: [...Object.keys(wf.variables).map((n) => `VAR_${n}`), ...wf.secrets.map((n) => `SECRET_${n}`)],
    outputFiles: (step.validation?.files ?? []).map((f) => f.file_name),
    dependencies: step.context_dependencies,
    ...(notes
      ? { skillNotes: headTailChars(notes, SKILL_NOTES_MAX_CHARS / 2, SKILL_NOTES_MAX_CHARS / 2) }
      : {}),
    ...(access === "read-write" && step.agent_configs.learning_objective
      ? { learningObjective: step.agent_configs.learning_objective }
      : {}),
  };
}

/** How the attempt that just closed ended, as far as the next one is concerned. */
export interface AttemptEnd {
  kind: AttemptKind;
  passed: boolean;
  /** `lock_code` (a failing saved script is not repaired). */
  locked?: boolean;
  /** The repair's or code_exec attempt's own counter, from 1. */
  round?: number;
}

/**
 * The ledger title of the attempt after attempt `n`, or undefined when `n` is the last: repairs
 * follow a failing first attempt (unless locked) up to `repairs`, then `codeExec` plain
 * attempts, which run whatever their outcome.
 */
export function nextAttemptTitle(
  n: number,
  end: AttemptEnd,
  limits: { repairs: number; codeExec: number } = {
    repairs: MAX_REPAIR_ITERATIONS,
    codeExec: CODE_EXEC_FALLBACK_ATTEMPTS,
  },
): string | undefined {
  const next = `attempt ${n + 1}`;
  const round = end.round ?? 1;
  switch (end.kind) {
    case "fast_path":
      return end.passed || end.locked ? undefined : `${next}: repair 1 of ${limits.repairs}`;
    case "author":
      return end.passed ? undefined : `${next}: repair 1 of ${limits.repairs}`;
    case "repair":
      if (end.passed) return undefined;
      if (round < limits.repairs) return `${next}: repair ${round + 1} of ${limits.repairs}`;
      return limits.codeExec > 0 ? `${next}: code_exec (repairs exhausted)` : undefined;
    case "code_exec":
      return round < limits.codeExec ? `${next}: code_exec` : undefined;
  }
}

/**
 * What repair `attempt` is told about the last run: the blocking review findings, the output (or
 * the error when there is none) and the exit code. Never the validation details.
 */
export function repairFacts(
  last: LearnedStepResult | undefined,
  attempt: number,
  scriptPath: string,
  maxAttempts: number = MAX_REPAIR_ITERATIONS,
): RepairFacts {
  const findings: FeedbackFinding[] = (last?.review?.findings ?? [])
    .filter((f) => f.severity === "blocking")
    .map((f) => ({ line: f.line, rule: f.rule, message: f.message, fix: f.fix }));
  return {
    attempt,
    maxAttempts,
    scriptPath,
    findings,
    lastOutput: last?.output ?? last?.error ?? "",
    lastExitCode: last?.exitCode ?? null,
  };
}

/** A code_exec attempt as the build's last run: its pass shows what an agent can do, not that the learned script passes. */
export function asAuthoringAid(run: LearnedStepResult): LearnedStepResult {
  return { ...run, outcome: run.outcome === "passed" ? "script_failed" : run.outcome };
}

/** The ledger summary of an attempt: its kind, its outcome, the first line of its error. */
export function attemptSummary(kind: AttemptKind, outcome: string, error: string | null): string {
  return `${kind}: ${outcome}${error ? `: ${error.split("\n")[0]}` : ""}`;
}

/** The result of an attempt whose script did not run (no main.py, or lock_code without a script). */
export function notRunAttempt(error: string, log: string = error): LearnedStepResult {
  return notRun(StepOutcome.MissingScript, error, log);
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
