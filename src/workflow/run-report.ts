/**
 * The pure steps of a run around the door: which steps run in which mode, which sandboxes to
 * probe, what the ledger plan of a run holds, why a step does not run, what a step reports, and
 * how the run ends. No I/O: runs.ts and run-loop.ts do the reading and writing.
 */
import type { Redactor } from "../core/index.js";
import type { ScriptLanguage } from "../exec/index.js";
import { type LearnedStepResult, notRun } from "./fast-path.js";
import { isOrchestrator, type ModelStepRunner } from "./model-step.js";
import { resolveMode } from "./modes.js";
import { executionOrder, selectSteps } from "./order.js";
import { ledgerType } from "./run-steps.js";
import { RunStatus } from "./run-store.js";
import type { StepReport } from "./runs.js";
import { ExecutionMode, StepOutcome, type Workflow, type WorkflowStep } from "./types.js";

/** The ledger steps of a run: one per selected step, titled with its mode. */
export function planSteps(
  selected: readonly string[],
  byId: ReadonlyMap<string, WorkflowStep>,
  modes: ReadonlyMap<string, ExecutionMode>,
): { title: string; type: "CODE" | "SUB_AGENT"; description: string }[] {
  return selected.map((id) => {
    const step = byId.get(id) as WorkflowStep;
    const mode = modes.get(id) as ExecutionMode;
    return { title: `${id} (${mode})`, type: ledgerType(mode), description: step.description };
  });
}

/** What decides whether a step runs at all. */
export interface StepGate {
  step: WorkflowStep;
  mode: ExecutionMode;
  cancelled: boolean;
  /** Why a dependency blocks the step, if it does. */
  blocked?: string | undefined;
  /** A dependency's outputs no longer match their seal (output-seal.ts). */
  sealProblem?: string | undefined;
  modelSteps?: ModelStepRunner | undefined;
}

/** The result of a step that does not run (cancelled, blocked, broken seal, no model), or undefined. */
export function whyNotRun(g: StepGate): LearnedStepResult | undefined {
  if (g.cancelled) return notRun(StepOutcome.Skipped, "the run was cancelled before this step started");
  if (g.blocked !== undefined) return notRun(StepOutcome.Skipped, g.blocked);
  if (g.sealProblem !== undefined) return notRun(StepOutcome.HarnessFailed, g.sealProblem);
  const learned = g.mode === ExecutionMode.LearnCode;
  if (
    (!learned || isOrchestrator(g.step)) &&
    (g.modelSteps === undefined || g.modelSteps.unavailable !== undefined)
  ) {
    const why = g.modelSteps?.unavailable ?? "no model is configured for this run";
    return notRun(
      StepOutcome.NeedsModel,
      `step ${g.step.id} ${learned ? "is an orchestrator whose sub-agents" : `runs in ${g.mode} mode and`} needs a model: ${why}`,
    );
  }
  return undefined;
}

/** The report of one finished step (its error redacted). */
export function stepReport(a: {
  id: string;
  ledgerStepId: string;
  mode: ExecutionMode;
  result: LearnedStepResult;
  tokens: number;
  outputDir: string;
  redactor: Redactor;
}): StepReport {
  const r = a.result;
  return {
    step_id: a.id,
    ledger_step_id: a.ledgerStepId,
    mode: a.mode,
    fast_path: r.fastPath,
    outcome: r.outcome,
    exit_code: r.exitCode,
    duration_ms: r.durationMs === null ? null : Math.round(r.durationMs),
    tokens: a.tokens,
    error: r.error === null ? null : a.redactor.redact(r.error),
    write_protection: r.protection,
    metadata_recorded: r.metadataRecorded,
    output_dir: r.fastPath ? a.outputDir : null,
  };
}

type Ending = typeof RunStatus.Passed | typeof RunStatus.Failed | typeof RunStatus.Interrupted;

/** How the run ends: interrupted when cancelled, passed when every step passed, else failed. */
export function runEnding(
  reports: readonly StepReport[],
  cancelled: boolean,
): { status: Ending; error: string | null } {
  const failed = reports.filter((r) => r.outcome !== StepOutcome.Passed);
  const status: Ending = cancelled
    ? RunStatus.Interrupted
    : failed.length === 0
      ? RunStatus.Passed
      : RunStatus.Failed;
  const error =
    status === RunStatus.Passed
      ? null
      : cancelled
        ? "the run was cancelled"
        : `${failed.length} of ${reports.length} step${reports.length === 1 ? "" : "s"} did not pass: ${failed.map((f) => `${f.step_id} (${f.outcome})`).join(", ")}`;
  return { status, error };
}

/** The steps a run executes, in dependency order, each with its workflow step and mode. */
export interface RunSelection {
  selected: readonly string[];
  byId: ReadonlyMap<string, WorkflowStep>;
  modes: ReadonlyMap<string, ExecutionMode>;
}

/**
 * What a run executes: every step, or `only` (in dependency order), with their modes.
 * @throws RatchetError `usage` for an `only` step the workflow does not have.
 */
export function selectRun(wf: Workflow, only?: readonly string[]): RunSelection {
  const selected = selectSteps(executionOrder(wf.steps), only);
  const byId = new Map(wf.steps.map((s) => [s.id, s]));
  const modes = new Map(
    selected.map((id) => [id, resolveMode(byId.get(id) as WorkflowStep, wf.defaults).mode]),
  );
  return { selected, byId, modes };
}

/** The script languages whose sandboxes the run needs: those of its selected learned steps' saved scripts. */
export function probeLanguages(
  sel: RunSelection,
  savedLanguageOf: (stepId: string) => ScriptLanguage | undefined,
): ScriptLanguage[] {
  const languages = new Set<ScriptLanguage>();
  for (const id of sel.selected) {
    if (sel.modes.get(id) !== ExecutionMode.LearnCode) continue;
    const lang = savedLanguageOf(id);
    if (lang) languages.add(lang);
  }
  return [...languages];
}

/** Whether the run's bridge serves `call_sub_agent`: a model is at hand and a selected learned step orchestrates. */
export function needsSubAgents(sel: RunSelection, modelSteps: ModelStepRunner | undefined): boolean {
  return (
    modelSteps !== undefined &&
    modelSteps.unavailable === undefined &&
    sel.selected.some(
      (id) =>
        sel.modes.get(id) === ExecutionMode.LearnCode && isOrchestrator(sel.byId.get(id) as WorkflowStep),
    )
  );
}

/** `log` followed by a `--- heading ---` section of `lines`; unchanged when there are none. */
export function withLogSection(log: string, heading: string, lines: readonly string[]): string {
  return lines.length > 0 ? `${log}\n--- ${heading} ---\n${lines.join("\n")}` : log;
}

/** Why a dependency's sealed outputs stop a step (the seal check's own words in `broken`). */
export function sealProblemText(dep: string, broken: string): string {
  return `harness failure: the outputs of ${dep} changed after validation (${broken}); this step did not run`;
}
