import { hostname } from "node:os";
import { join } from "node:path";
import type { BridgeConfig } from "../bridge/index.js";
import { type Clock, systemClock } from "../core/index.js";
import type { ProcessRunner, SandboxInfo, ScriptLanguage } from "../exec/index.js";
import type { Ledger } from "../ledger/index.js";
import { cachedReviewer } from "../review/cache.js";
import type { SqliteStore, Workspace } from "../store/index.js";
import {
  type BridgeEndpoint,
  type BridgeProvider,
  type LearnedStepResult,
  prepareLearnedStep,
  savedLanguage,
} from "./fast-path.js";
import { failOpenSteps, recoverInterruptedRuns } from "./interrupt.js";
import { newRunId, stepOutputDir, workflowHome } from "./layout.js";
import { isOrchestrator, type ModelStepRunner, type OrchestratorContext } from "./model-step.js";
import { resolveMode } from "./modes.js";
import { executionOrder, selectSteps } from "./order.js";
import { type OutputSeal, sealBroken, sealOutputs } from "./output-seal.js";
import { RunBridge } from "./run-bridge.js";
import { DEFAULT_STEP_TIMEOUT_SECONDS, LEASE_MARGIN_SECONDS } from "./run-limits.js";
import { DeferredMetadata, discardPrepared, NextStep } from "./run-overlap.js";
import { planSteps, runEnding, stepReport, whyNotRun } from "./run-report.js";
import { prepareRunSetup } from "./run-setup.js";
import { dependencyDirs, recordStep, runLearnedStepSafely } from "./run-steps.js";
import { type RunStatus, type RunStepOutcome, RunStore } from "./run-store.js";
import { ExecutionMode, StepOutcome, type Workflow, type WorkflowStep } from "./types.js";

/** How a run was started. */
export const RunTrigger = {
  Manual: "manual",
  Schedule: "schedule",
  Webhook: "webhook",
  /** `ratchet workflow run-saved`: one saved script outside a full run. */
  RunSaved: "run_saved",
} as const;
export type RunTrigger = (typeof RunTrigger)[keyof typeof RunTrigger];

export interface RunContext {
  store: SqliteStore;
  ledger: Ledger;
  workspace: Workspace;
}

/** Options of {@link runWorkflow}; all optional. */
export interface RunWorkflowOptions {
  /** `--var NAME=value` values (override group, environment and defaults). */
  vars?: Record<string, string>;
  /** A variable group of the workflow. */
  group?: string;
  /** Only these steps (in dependency order). Dependencies not selected use their newest passing run's outputs. */
  only?: readonly string[];
  /** Default `manual`. */
  trigger?: RunTrigger;
  /** Time limit of each script in seconds. Default {@link DEFAULT_STEP_TIMEOUT_SECONDS}. */
  stepTimeoutSeconds?: number;
  /** Where variables, secrets, PATH… are read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The secrets file. Default `<workspace>/.ratchet/secrets`. */
  secretsFile?: string;
  /** Cancels the run (SIGINT/SIGTERM in the CLI). */
  signal?: AbortSignal;
  runner?: ProcessRunner;
  clock?: Clock;
  /**
   * A running tool bridge for the scripts (the caller starts and closes it). Default: the run starts
   * its own when the first script is about to run, from `bridgeConfig`, and closes it at the end.
   */
  bridge?: BridgeEndpoint;
  /** Tools of the run's own bridge. Default: the workspace's `.ratchet/config.json` (missing: no tools). */
  bridgeConfig?: BridgeConfig;
  /** Called when a step starts and when it finishes (the CLI prints progress). */
  onProgress?: (p: RunProgress) => void;
  /**
   * Runs `direct` / `code_exec` steps and serves orchestrators' `call_sub_agent` (the Builder
   * module's `createModelStepRunner`). Without it such steps fail with `needs_model`.
   */
  modelSteps?: ModelStepRunner;
  /** Called once the run is recorded, before any step runs. */
  onStarted?: (r: { run_id: string; plan_id: string; write_protection: SandboxInfo }) => void;
}

export type RunProgress =
  | { kind: "step_started"; step_id: string; mode: ExecutionMode }
  | { kind: "step_finished"; step: StepReport };

export interface StepReport {
  step_id: string;
  ledger_step_id: string;
  mode: ExecutionMode;
  fast_path: boolean;
  outcome: RunStepOutcome;
  exit_code: number | null;
  duration_ms: number | null;
  tokens: number;
  error: string | null;
  write_protection: string;
  metadata_recorded: boolean;
  output_dir: string | null;
}

export interface RunReport {
  run_id: string;
  workflow_id: string;
  workflow_path: string;
  plan_id: string;
  trigger: RunTrigger;
  group_name: string | null;
  status: RunStatus;
  write_protection: SandboxInfo;
  steps: StepReport[];
  /** One line naming the failed steps, null when the run passed. */
  error: string | null;
  /** Runs found interrupted (and marked) before this one started. */
  recovered: string[];
}

/**
 * Runs a workflow. Returns the report; a failed step is a `failed` run, not an exception.
 *
 * @throws RatchetError before anything is recorded: `usage` (unknown `--only` step),
 *   `schema_violation` / `invalid_value` / `not_found` (variables, secrets, groups).
 */
export async function runWorkflow(
  ctx: RunContext,
  wf: Workflow,
  opts: RunWorkflowOptions = {},
): Promise<RunReport> {
  const env = opts.env ?? process.env;
  const clock = opts.clock ?? systemClock;
  const trigger = opts.trigger ?? RunTrigger.Manual;
  const redactor = ctx.ledger.redactor;
  const order = executionOrder(wf.steps);
  const selected = selectSteps(order, opts.only);
  const byId = new Map(wf.steps.map((s) => [s.id, s]));
  const modes = new Map(
    selected.map((id) => [id, resolveMode(byId.get(id) as WorkflowStep, wf.defaults).mode]),
  );

  // Probe only the sandboxes this run needs.
  const languages = new Set<ScriptLanguage>();
  for (const id of selected) {
    if (modes.get(id) !== ExecutionMode.LearnCode) continue;
    const lang = savedLanguage(wf, id);
    if (lang) languages.add(lang);
  }
  // Everything that can refuse the run happens before anything is recorded.
  const { variables, secrets, sandbox, readPolicy, timeoutSeconds } = await prepareRunSetup({
    workflow: wf,
    workspaceDir: ctx.workspace.dir,
    redactor,
    languages: [...languages],
    vars: opts.vars,
    group: opts.group,
    env,
    secretsFile: opts.secretsFile,
    stepTimeoutSeconds: opts.stepTimeoutSeconds,
  });

  const recovered = recoverInterruptedRuns(ctx).map((r) => r.run_id);
  const runs = new RunStore(ctx.store);
  // Reports of unchanged scripts come from the workspace's review cache (see review/cache.ts).
  const review = cachedReviewer(join(ctx.workspace.dir, "cache", "review"));

  const runId = newRunId(clock.now());
  const owner = `${process.pid}@${hostname()}`;
  const { planId, ledgerIds } = ctx.store.tx(() => {
    const plan = ctx.ledger.publish(
      {
        goal: `run ${wf.id} ${runId}`,
        steps: planSteps(selected, byId, modes),
      },
      { kind: "workflow_run", cwd: workflowHome(wf) },
    );
    const ids = plan.step_ids.slice(0, selected.length);
    runs.startRun(
      {
        run_id: runId,
        workflow_id: wf.id,
        workflow_path: wf.source,
        plan_id: plan.plan_id,
        trigger,
        group_name: opts.group ?? null,
        owner,
      },
      selected.map((id, i) => ({
        step_id: id,
        ledger_step_id: ids[i] ?? null,
        mode: modes.get(id) as string,
      })),
    );
    return { planId: plan.plan_id, ledgerIds: ids };
  });
  opts.onStarted?.({ run_id: runId, plan_id: planId, write_protection: sandbox });

  const reports: StepReport[] = [];
  const outcomeOf = new Map<string, RunStepOutcome>();
  // The validated outputs of this run's passed steps (output-seal.ts), checked before a dependent starts.
  const seals = new Map<string, OutputSeal>();
  const brokenSeal = (step: WorkflowStep): string | undefined => {
    for (const dep of step.context_dependencies ?? []) {
      const seal = seals.get(dep);
      const broken = seal && sealBroken(stepOutputDir(wf, runId, dep), seal);
      if (broken)
        return `harness failure: the outputs of ${dep} changed after validation (${broken}); this step did not run`;
    }
    return undefined;
  };
  const leaseSeconds = timeoutSeconds + LEASE_MARGIN_SECONDS;
  let cancelled = false;
  // The orchestrator step running now: `call_sub_agent` delegates on its behalf.
  let orchestrator: OrchestratorContext | undefined;
  const needsSubAgents =
    opts.modelSteps !== undefined &&
    opts.modelSteps.unavailable === undefined &&
    selected.some(
      (id) => modes.get(id) === ExecutionMode.LearnCode && isOrchestrator(byId.get(id) as WorkflowStep),
    );
  // Constructing it costs nothing: the bridge starts only when a script is about to run.
  const runBridge = opts.bridge
    ? undefined
    : new RunBridge({
        workspaceDir: ctx.workspace.dir,
        ...(opts.bridgeConfig ? { config: opts.bridgeConfig } : {}),
        redactor,
        env,
        ...(needsSubAgents && opts.modelSteps
          ? { tools: [opts.modelSteps.subAgentTool(() => orchestrator)] }
          : {}),
      });
  const given = opts.bridge;
  // A step with allowed_tools gets a token of its own that reaches only those tools.
  const bridgeFor =
    (step: WorkflowStep): BridgeProvider =>
    () =>
      given ? Promise.resolve(given) : (runBridge as RunBridge).endpoint(step.allowed_tools);

  // The previous step's script_metadata.json update and the next step's preparation, both done
  // while a script runs (run-overlap.ts).
  const deferred = new DeferredMetadata(ctx);
  const nextStep = new NextStep();
  const prepareNext = (i: number): void => {
    const next = selected[i + 1];
    if (next === undefined || cancelled || opts.signal?.aborted) return;
    const step = byId.get(next) as WorkflowStep;
    if (modes.get(next) !== ExecutionMode.LearnCode || isOrchestrator(step)) return;
    nextStep.prepare(next, prepareLearnedStep({ workflow: wf, step, runId, review }));
  };

  try {
    for (const [i, id] of selected.entries()) {
      const step = byId.get(id) as WorkflowStep;
      const mode = modes.get(id) as ExecutionMode;
      const ledgerStepId = ledgerIds[i] as string;
      opts.onProgress?.({ kind: "step_started", step_id: id, mode });
      const prepared = nextStep.take(id);

      let result: LearnedStepResult;
      let tokens = 0;
      const deps = dependencyDirs(wf, runId, step, selected, outcomeOf, runs);
      /** What a model-driven step and a learned step are both run with. */
      const stepInput = (dirs: readonly string[]) => ({
        workflow: wf,
        step,
        runId,
        dependencyDirs: dirs,
        variables,
        secrets,
        bridge: bridgeFor(step),
        baseEnv: env,
        timeoutSeconds,
        groupName: opts.group ?? null,
        sandbox,
        readPolicy,
        redactor,
        clock,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.runner ? { runner: opts.runner } : {}),
      });
      const depDirs = "blocked" in deps ? [] : deps.dirs;
      const sealProblem = "blocked" in deps ? undefined : brokenSeal(step);
      if (cancelled || opts.signal?.aborted || "blocked" in deps || sealProblem)
        await discardPrepared(prepared);
      if (opts.signal?.aborted) cancelled = true;
      const notRunning = whyNotRun({
        step,
        mode,
        cancelled,
        blocked: "blocked" in deps ? deps.blocked : undefined,
        sealProblem,
        modelSteps: opts.modelSteps,
      });
      if (notRunning) {
        result = notRunning;
      } else if (mode !== ExecutionMode.LearnCode) {
        ctx.store.tx(() => {
          ctx.ledger.start({
            step_id: ledgerStepId,
            agent_input: `${mode}: model-driven step ${id}`,
            lease_seconds: leaseSeconds,
          });
          runs.startStep(runId, id, { fast_path: false });
        });
        const modelSteps = opts.modelSteps as ModelStepRunner;
        const r = await modelSteps.runStep({ ...stepInput(depDirs), mode });
        tokens = r.tokens;
        result = r;
        if (opts.signal?.aborted) cancelled = true;
      } else {
        // The step is marked started in the ledger as soon as its script's process exists (or,
        // when no script starts, just before it is closed): the write happens while the script
        // boots instead of before it.
        let started = false;
        const markStarted = (): void => {
          if (started) return;
          started = true;
          ctx.store.tx(() => {
            ctx.ledger.start({
              step_id: ledgerStepId,
              agent_input: `fast path: saved script of step ${id}`,
              lease_seconds: leaseSeconds,
            });
            runs.startStep(runId, id, { fast_path: true });
          });
        };
        if (isOrchestrator(step))
          orchestrator = {
            workflow: wf,
            step,
            outputDir: stepOutputDir(wf, runId, id),
            bridge: bridgeFor(step),
            redactor,
            tokens: 0,
            log: [],
            ...(opts.signal ? { signal: opts.signal } : {}),
          };
        result = await runLearnedStepSafely({
          ...stepInput(depDirs),
          review,
          deferMetadata: true,
          whileRunning: () => {
            markStarted();
            deferred.flush();
            prepareNext(i);
          },
          ...(prepared ? { prepared } : {}),
        });
        markStarted();
        if (orchestrator) {
          tokens = orchestrator.tokens;
          if (orchestrator.log.length > 0)
            result = { ...result, log: `${result.log}\n--- sub-agents ---\n${orchestrator.log.join("\n")}` };
          orchestrator = undefined;
        }
        if (opts.signal?.aborted) cancelled = true;
      }
      outcomeOf.set(id, result.outcome);
      if (result.outcome === StepOutcome.Passed && result.fastPath)
        seals.set(id, sealOutputs(stepOutputDir(wf, runId, id)));
      const bridgeLog = runBridge?.takeLog() ?? [];
      const log =
        bridgeLog.length > 0 ? `${result.log}\n--- tool bridge ---\n${bridgeLog.join("\n")}` : result.log;

      const report = stepReport({
        id,
        ledgerStepId,
        mode,
        result,
        tokens,
        outputDir: stepOutputDir(wf, runId, id),
        redactor,
      });
      recordStep(ctx, runs, runId, report, log, leaseSeconds);
      reports.push(report);
      // A step that did not start a script leaves nothing to overlap with: write now.
      deferred.flush();
      deferred.defer(result, report);
      opts.onProgress?.({ kind: "step_finished", step: report });
    }
  } catch (e) {
    // A bug or an unusable store: close the run so it does not look alive, then report the error.
    const reason = `run stopped by an internal error: ${e instanceof Error ? e.message : String(e)}`;
    try {
      ctx.store.tx(() => {
        runs.markInterrupted(runId, reason);
        failOpenSteps(ctx.ledger, ctx.store, planId, reason);
      });
    } catch {
      // the original error is the one to report
    }
    throw e;
  } finally {
    try {
      deferred.flush();
      await nextStep.discardAhead();
    } finally {
      await runBridge?.close();
    }
  }

  const { status, error } = runEnding(reports, cancelled);
  runs.finishRun(runId, status, error);
  return {
    run_id: runId,
    workflow_id: wf.id,
    workflow_path: wf.source,
    plan_id: planId,
    trigger,
    group_name: opts.group ?? null,
    status,
    write_protection: sandbox,
    steps: reports,
    error,
    recovered,
  };
}
