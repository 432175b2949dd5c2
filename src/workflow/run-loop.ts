/**
 * The steps of one run, each a small named step around the exec door: gate a step (dependencies,
 * seals, cancellation, model), run it (a model-driven step through the caller's
 * `ModelStepRunner`, a learned step through the fast path), close it (seal, log, ledger and run
 * tables, deferred metadata, progress). runs.ts records the run and hands the loop a
 * {@link RunState}; the decisions themselves are the pure functions of run-report.ts.
 */
import type { Clock } from "../core/index.js";
import type { Reviewer } from "../review/cache.js";
import {
  type BridgeProvider,
  type LearnedStepResult,
  type PreparedStep,
  prepareLearnedStep,
} from "./fast-path.js";
import { failOpenSteps } from "./interrupt.js";
import { stepOutputDir } from "./layout.js";
import { isOrchestrator, newOrchestratorContext, type OrchestratorContext } from "./model-step.js";
import { type OutputSeal, sealBroken, sealOutputs } from "./output-seal.js";
import type { RunBridge } from "./run-bridge.js";
import { type DeferredMetadata, discardPrepared, type NextStep } from "./run-overlap.js";
import { type RunSelection, sealProblemText, stepReport, whyNotRun, withLogSection } from "./run-report.js";
import { learnedStepInput, type RunSetup } from "./run-setup.js";
import { dependencyDirs, recordStep, runLearnedStepSafely } from "./run-steps.js";
import type { RunStepOutcome, RunStore } from "./run-store.js";
import type { RunContext, RunWorkflowOptions, StepReport } from "./runs.js";
import { ExecutionMode, StepOutcome, type Workflow, type WorkflowStep } from "./types.js";

/** What every step of one recorded run shares, and what the earlier steps left. */
export interface RunState {
  readonly ctx: RunContext;
  readonly wf: Workflow;
  readonly opts: RunWorkflowOptions;
  readonly env: NodeJS.ProcessEnv;
  readonly clock: Clock;
  readonly sel: RunSelection;
  readonly setup: RunSetup;
  readonly runs: RunStore;
  readonly review: Reviewer;
  readonly runId: string;
  readonly planId: string;
  /** The ledger step of each selected step, in the same order. */
  readonly ledgerIds: readonly string[];
  readonly leaseSeconds: number;
  /** The run's own bridge (undefined when the caller gave one). */
  readonly runBridge: RunBridge | undefined;
  /** The previous step's script_metadata.json update and the next step's preparation (run-overlap.ts). */
  readonly deferred: DeferredMetadata;
  readonly nextStep: NextStep;
  readonly reports: StepReport[];
  readonly outcomeOf: Map<string, RunStepOutcome>;
  /** The validated outputs of this run's passed steps (output-seal.ts), checked before a dependent starts. */
  readonly seals: Map<string, OutputSeal>;
  cancelled: boolean;
  /** The orchestrator step running now: `call_sub_agent` delegates on its behalf. */
  orchestrator: OrchestratorContext | undefined;
}

/** One step's result and the model tokens it used. */
interface Ran {
  result: LearnedStepResult;
  tokens: number;
}

/**
 * Runs the selected steps in order. An internal error closes the run as interrupted (so it does
 * not look alive) and is rethrown; the overlap and the run's own bridge are always wound down.
 */
export async function runSteps(run: RunState): Promise<void> {
  try {
    for (const i of run.sel.selected.keys()) await runStep(run, i);
  } catch (e) {
    closeOnError(run, e);
    throw e;
  } finally {
    try {
      run.deferred.flush();
      await run.deferred.settle();
      await run.nextStep.discardAhead();
    } finally {
      await run.runBridge?.close();
    }
  }
}

/** The `i`-th selected step: gated, run (or not), closed. */
async function runStep(run: RunState, i: number): Promise<void> {
  const id = run.sel.selected[i] as string;
  const step = run.sel.byId.get(id) as WorkflowStep;
  const mode = run.sel.modes.get(id) as ExecutionMode;
  const ledgerStepId = run.ledgerIds[i] as string;
  run.opts.onProgress?.({ kind: "step_started", step_id: id, mode });
  const prepared = run.nextStep.take(id);
  const gate = await gateStep(run, step, mode, prepared);
  const ran: Ran =
    "notRunning" in gate
      ? { result: gate.notRunning, tokens: 0 }
      : mode !== ExecutionMode.LearnCode
        ? await runModelStep(run, step, mode, ledgerStepId, gate.dirs)
        : await runLearnedScript(run, i, step, ledgerStepId, gate.dirs, prepared);
  closeStep(run, id, mode, ledgerStepId, ran);
}

/**
 * Whether the step runs: its dependencies' output folders, or the result of a step that does not
 * run (cancelled, blocked, broken seal, no model). A preparation made ahead for a step that will
 * not run is discarded.
 */
async function gateStep(
  run: RunState,
  step: WorkflowStep,
  mode: ExecutionMode,
  prepared: Promise<PreparedStep | LearnedStepResult> | undefined,
): Promise<{ dirs: string[] } | { notRunning: LearnedStepResult }> {
  const { wf, runId, opts } = run;
  const deps = dependencyDirs(wf, run.setup.home, runId, step, run.sel.selected, run.outcomeOf, run.runs);
  const blocked = "blocked" in deps ? deps.blocked : undefined;
  const sealProblem = blocked === undefined ? brokenSeal(run, step) : undefined;
  if (run.cancelled || opts.signal?.aborted || blocked !== undefined || sealProblem)
    await discardPrepared(prepared);
  if (opts.signal?.aborted) run.cancelled = true;
  const notRunning = whyNotRun({
    step,
    mode,
    cancelled: run.cancelled,
    blocked,
    sealProblem,
    modelSteps: opts.modelSteps,
  });
  if (notRunning) return { notRunning };
  return { dirs: "blocked" in deps ? [] : deps.dirs };
}

/** The first dependency of this run whose sealed outputs changed, as the step's harness failure. */
function brokenSeal(run: RunState, step: WorkflowStep): string | undefined {
  for (const dep of step.context_dependencies ?? []) {
    const seal = run.seals.get(dep);
    const broken = seal && sealBroken(stepOutputDir(run.setup.home, run.runId, dep), seal);
    if (broken) return sealProblemText(dep, broken);
  }
  return undefined;
}

/** A `direct` / `code_exec` step through the caller's model runner (whyNotRun checked it is there). */
async function runModelStep(
  run: RunState,
  step: WorkflowStep,
  mode: Exclude<ExecutionMode, typeof ExecutionMode.LearnCode>,
  ledgerStepId: string,
  dirs: readonly string[],
): Promise<Ran> {
  markStarted(run, step.id, ledgerStepId, `${mode}: model-driven step ${step.id}`, false);
  const modelSteps = run.opts.modelSteps as NonNullable<RunWorkflowOptions["modelSteps"]>;
  const r = await modelSteps.runStep({ ...stepInput(run, step, dirs), mode });
  if (run.opts.signal?.aborted) run.cancelled = true;
  return { result: r, tokens: r.tokens };
}

/**
 * A learned step's saved script through the fast path (exec's door). The step is marked started
 * in the ledger as soon as the script's process exists (or, when no script starts, just before it
 * is closed): the write happens while the script boots instead of before it. While the script
 * runs, the previous step's metadata is written and the next step prepared.
 */
async function runLearnedScript(
  run: RunState,
  i: number,
  step: WorkflowStep,
  ledgerStepId: string,
  dirs: readonly string[],
  prepared: Promise<PreparedStep | LearnedStepResult> | undefined,
): Promise<Ran> {
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    markStarted(run, step.id, ledgerStepId, `fast path: saved script of step ${step.id}`, true);
  };
  if (isOrchestrator(step))
    run.orchestrator = newOrchestratorContext({
      workflow: run.wf,
      step,
      outputDir: stepOutputDir(run.setup.home, run.runId, step.id),
      bridge: bridgeFor(run, step),
      redactor: run.ctx.ledger.redactor,
      signal: run.opts.signal,
    });
  const result = await runLearnedStepSafely({
    ...stepInput(run, step, dirs),
    review: run.review,
    deferMetadata: true,
    ...(run.opts.onProgress
      ? {
          onOutput: (text: string, stream: "stdout" | "stderr") =>
            run.opts.onProgress?.({ kind: "step_output", step_id: step.id, stream, text }),
        }
      : {}),
    whileRunning: (ahead) => {
      start();
      run.deferred.flush();
      prepareNext(run, i, ahead.tmpParent);
    },
    ...(prepared ? { prepared } : {}),
  });
  start();
  if (result.tmpRemoved) run.deferred.track(result.tmpRemoved);
  const ran = takeOrchestrator(run, result);
  if (run.opts.signal?.aborted) run.cancelled = true;
  return ran;
}

/** The orchestrator's sub-agent tokens and log, folded into its step's result (and cleared). */
function takeOrchestrator(run: RunState, result: LearnedStepResult): Ran {
  const orchestrator = run.orchestrator;
  if (!orchestrator) return { result, tokens: 0 };
  run.orchestrator = undefined;
  return {
    result: { ...result, log: withLogSection(result.log, "sub-agents", orchestrator.log) },
    tokens: orchestrator.tokens,
  };
}

/** Starts the step in the ledger and the run tables, in one transaction. */
function markStarted(
  run: RunState,
  id: string,
  ledgerStepId: string,
  agentInput: string,
  fastPath: boolean,
): void {
  run.ctx.store.tx(() => {
    run.ctx.ledger.start({ step_id: ledgerStepId, agent_input: agentInput, lease_seconds: run.leaseSeconds });
    run.runs.startStep(run.runId, id, { fast_path: fastPath });
  });
}

/**
 * Starts preparing the step after the `i`-th while its script runs, when that one is a plain learned
 * step (its TMPDIR made ahead in `tmpParent`, where the running script's was made).
 */
function prepareNext(run: RunState, i: number, tmpParent: string | undefined): void {
  const next = run.sel.selected[i + 1];
  if (next === undefined || run.cancelled || run.opts.signal?.aborted) return;
  const step = run.sel.byId.get(next) as WorkflowStep;
  if (run.sel.modes.get(next) !== ExecutionMode.LearnCode || isOrchestrator(step)) return;
  run.nextStep.prepare(
    next,
    prepareLearnedStep({
      workflow: run.wf,
      step,
      runId: run.runId,
      home: run.setup.home,
      review: run.review,
      sandbox: run.setup.sandbox,
      baseEnv: run.env,
      readPolicy: run.setup.readPolicy,
      tmpParent,
    }),
  );
}

/**
 * Closes a step: its outcome noted (and its outputs sealed when its script passed), the bridge's
 * log appended, the ledger and the run tables written, its metadata deferred, progress told.
 */
function closeStep(run: RunState, id: string, mode: ExecutionMode, ledgerStepId: string, ran: Ran): void {
  const { result, tokens } = ran;
  const outputDir = stepOutputDir(run.setup.home, run.runId, id);
  run.outcomeOf.set(id, result.outcome);
  if (result.outcome === StepOutcome.Passed && result.fastPath) run.seals.set(id, sealOutputs(outputDir));
  const log = withLogSection(result.log, "tool bridge", run.runBridge?.takeLog() ?? []);
  const report = stepReport({
    id,
    ledgerStepId,
    mode,
    result,
    tokens,
    outputDir,
    redactor: run.ctx.ledger.redactor,
  });
  recordStep(run.ctx, run.runs, run.runId, report, log, run.leaseSeconds);
  run.reports.push(report);
  // A step that did not start a script leaves nothing to overlap with: write now.
  run.deferred.flush();
  run.deferred.defer(result, report);
  run.opts.onProgress?.({ kind: "step_finished", step: report });
}

/** What a model-driven step and a learned step are both run with. */
function stepInput(run: RunState, step: WorkflowStep, dirs: readonly string[]) {
  return learnedStepInput(run.setup, {
    workflow: run.wf,
    step,
    runId: run.runId,
    dependencyDirs: dirs,
    bridge: bridgeFor(run, step),
    baseEnv: run.env,
    groupName: run.opts.group ?? null,
    redactor: run.ctx.ledger.redactor,
    clock: run.clock,
    signal: run.opts.signal,
    runner: run.opts.runner,
  });
}

/** The step's bridge: the caller's, or a token of the run's own that reaches only its allowed_tools. */
function bridgeFor(run: RunState, step: WorkflowStep): BridgeProvider {
  const given = run.opts.bridge;
  return () => (given ? Promise.resolve(given) : (run.runBridge as RunBridge).endpoint(step.allowed_tools));
}

/** A bug or an unusable store: the run is marked interrupted and its open ledger steps failed. Never throws. */
function closeOnError(run: RunState, e: unknown): void {
  const reason = `run stopped by an internal error: ${e instanceof Error ? e.message : String(e)}`;
  try {
    run.ctx.store.tx(() => {
      run.runs.markInterrupted(run.runId, reason);
      failOpenSteps(run.ctx.ledger, run.ctx.store, run.planId, reason);
    });
  } catch {
    // the original error is the one to report
  }
}
