import { hostname } from "node:os";
import { join } from "node:path";
import type { BridgeConfig } from "../bridge/index.js";
import { type Clock, ErrorCode, RatchetError, systemClock } from "../core/index.js";
import type { ProcessRunner, SandboxInfo } from "../exec/index.js";
import type { Ledger } from "../ledger/index.js";
import { cachedReviewer } from "../review/cache.js";
import type { Store, Workspace } from "../store/index.js";
import { type BridgeEndpoint, prestartForkserver, savedLanguage } from "./fast-path.js";
import { recoverInterruptedRuns } from "./interrupt.js";
import { newRunId, type RunHome, workflowHome } from "./layout.js";
import type { ModelStepRunner, OrchestratorContext } from "./model-step.js";
import { RunBridge } from "./run-bridge.js";
import { CANCEL_POLL_MS, DEFAULT_STEP_TIMEOUT_SECONDS, LEASE_MARGIN_SECONDS } from "./run-limits.js";
import { type RunState, runSteps } from "./run-loop.js";
import { DeferredMetadata, NextStep } from "./run-overlap.js";
import {
  needsSubAgents,
  planSteps,
  probeLanguages,
  type RunSelection,
  runEnding,
  selectRun,
} from "./run-report.js";
import { prepareRunSetup, type RunSetup } from "./run-setup.js";
import { RunStatus, type RunStepOutcome, type RunStore, runStoreOf } from "./run-store.js";
import { ExecutionMode, type Workflow } from "./types.js";

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
  store: Store;
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
  /** Called when a step starts, as its script prints, and when it finishes (the CLI prints progress). */
  onProgress?: (p: RunProgress) => void;
  /**
   * Runs `direct` / `code_exec` steps and serves orchestrators' `call_sub_agent` (the Builder
   * module's `createModelStepRunner`). Without it such steps fail with `needs_model`.
   */
  modelSteps?: ModelStepRunner;
  /**
   * Executes a `queued` run (a worker, src/queue/): the run row exists; recording it claims it
   * (`queued` → `running`) with a lease of `leaseMs`, which a heartbeat moves every third of it.
   * A lost lease (another process marked the run interrupted) aborts the run.
   * With `maxRunning` (the workflow's `concurrency`) the claim is refused while that many runs of
   * the workflow are running: the run stays queued.
   * @throws RatchetError `illegal_transition` naming `run_id` when the run is not queued any more,
   *   naming `concurrency` when the workflow is at its limit (nothing written).
   */
  claim?: { runId: string; leaseMs: number; maxRunning?: number };
  /** Called once the run is recorded, before any step runs. */
  onStarted?: (r: { run_id: string; plan_id: string; write_protection: SandboxInfo }) => void;
  /**
   * Where the run writes its outputs, working copies and the scripts' run history (layout.ts).
   * Default: the workspace's (`<workspace>/.ratchet/runs`, `scripts`). A worker running workflows
   * from a read-only bundle passes its own; never the workflow's folder.
   */
  home?: RunHome;
}

export type RunProgress =
  | { kind: "step_started"; step_id: string; mode: ExecutionMode }
  | { kind: "step_finished"; step: StepReport }
  /** A learned script's output as it arrives (redacted; a chunk, not always whole lines). */
  | { kind: "step_output"; step_id: string; stream: "stdout" | "stderr"; text: string };

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
  const sel = selectRun(wf, opts.only);
  // Everything that can refuse the run happens before anything is recorded. Only the sandboxes
  // this run needs are probed.
  const setup = await prepareRunSetup({
    workflow: wf,
    workspaceDir: ctx.workspace.dir,
    redactor: ctx.ledger.redactor,
    languages: probeLanguages(sel, (id) => savedLanguage(wf, id)),
    vars: opts.vars,
    group: opts.group,
    env,
    secretsFile: opts.secretsFile,
    stepTimeoutSeconds: opts.stepTimeoutSeconds,
    home: opts.home,
  });
  // The first step's pre-started interpreter starts now, while the run is recorded and the step prepared.
  if (startsWithPythonScript(wf, sel))
    prestartForkserver({
      workflow: wf,
      home: setup.home,
      sandbox: setup.sandbox,
      baseEnv: env,
      readPolicy: setup.readPolicy,
      runner: opts.runner,
    });
  const recovered = recoverInterruptedRuns(ctx).map((r) => r.run_id);
  // A cancel request recorded in the store (by any process) aborts the run like the caller's signal.
  const cancel = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, cancel.signal]) : cancel.signal;
  const run = openRun(ctx, wf, sel, setup, { ...opts, env, signal });
  const poll = setInterval(() => {
    try {
      if (run.runs.cancelRequested({ run_id: run.runId, plan_id: run.planId })) {
        clearInterval(poll);
        cancel.abort();
      }
    } catch {
      // the store is busy or closing: the next tick looks again
    }
  }, CANCEL_POLL_MS);
  poll.unref();
  const beat = opts.claim
    ? heartbeat(run.runs, run.runId, opts.claim.leaseMs, () => cancel.abort())
    : undefined;
  opts.onStarted?.({ run_id: run.runId, plan_id: run.planId, write_protection: setup.sandbox });
  try {
    await runSteps(run);
  } finally {
    clearInterval(poll);
    if (beat) clearInterval(beat);
  }
  const requested = cancel.signal.aborted;
  const ending = runEnding(run.reports, run.cancelled);
  const { status, error } = requested
    ? { status: RunStatus.Cancelled, error: "the run was cancelled on request (ratchet runs cancel)" }
    : ending;
  run.runs.finishRun(run.runId, status, error);
  return {
    run_id: run.runId,
    workflow_id: wf.id,
    workflow_path: wf.source,
    plan_id: run.planId,
    trigger: opts.trigger ?? RunTrigger.Manual,
    group_name: opts.group ?? null,
    status,
    write_protection: setup.sandbox,
    steps: run.reports,
    error,
    recovered,
  };
}

/**
 * Records the run — its ledger plan and its `workflow_runs` row with one row per selected step,
 * in one transaction — and returns the state its steps share. The run's own bridge is only
 * constructed here: it starts when the first script is about to run.
 */
function openRun(
  ctx: RunContext,
  wf: Workflow,
  sel: RunSelection,
  setup: RunSetup,
  opts: RunWorkflowOptions & { env: NodeJS.ProcessEnv },
): RunState {
  const clock = opts.clock ?? systemClock;
  const runs = runStoreOf(ctx.store);
  // Reports of unchanged scripts come from the workspace's review cache (see review/cache.ts).
  const review = cachedReviewer(join(ctx.workspace.dir, "cache", "review"));
  const runId = opts.claim?.runId ?? newRunId(clock.now());
  const { planId, ledgerIds } = recordRun(ctx, runs, wf, sel, runId, opts);
  const run: RunState = {
    ctx,
    wf,
    opts,
    env: opts.env,
    clock,
    sel,
    setup,
    runs,
    review,
    runId,
    planId,
    ledgerIds,
    leaseSeconds: setup.timeoutSeconds + LEASE_MARGIN_SECONDS,
    runBridge: opts.bridge ? undefined : ownBridge(ctx, sel, opts, () => run.orchestrator),
    deferred: new DeferredMetadata(ctx),
    nextStep: new NextStep(),
    reports: [],
    outcomeOf: new Map(),
    seals: new Map(),
    cancelled: false,
    orchestrator: undefined,
  };
  return run;
}

/**
 * The run's own tool bridge (when the caller gives none); constructing it costs nothing. It serves
 * `call_sub_agent` for `orchestrator()` when an orchestrator may delegate (`needsSubAgents`).
 */
function ownBridge(
  ctx: RunContext,
  sel: RunSelection,
  opts: RunWorkflowOptions & { env: NodeJS.ProcessEnv },
  orchestrator: () => OrchestratorContext | undefined,
): RunBridge {
  return new RunBridge({
    workspaceDir: ctx.workspace.dir,
    ...(opts.bridgeConfig ? { config: opts.bridgeConfig } : {}),
    redactor: ctx.ledger.redactor,
    env: opts.env,
    ...(needsSubAgents(sel, opts.modelSteps) && opts.modelSteps
      ? { tools: [opts.modelSteps.subAgentTool(orchestrator)] }
      : {}),
  });
}

/** The run's ledger plan and its run rows, written together. */
function recordRun(
  ctx: RunContext,
  runs: RunStore,
  wf: Workflow,
  sel: RunSelection,
  runId: string,
  opts: RunWorkflowOptions,
): { planId: string; ledgerIds: string[] } {
  const { selected, byId, modes } = sel;
  return ctx.store.tx(() => {
    const plan = ctx.ledger.publish(
      { goal: `run ${wf.id} ${runId}`, steps: planSteps(selected, byId, modes) },
      { kind: "workflow_run", cwd: workflowHome(wf) },
    );
    const ids = plan.step_ids.slice(0, selected.length);
    const owner = runOwner();
    const steps = selected.map((id, i) => ({
      step_id: id,
      ledger_step_id: ids[i] ?? null,
      mode: modes.get(id) as string,
    }));
    if (opts.claim) {
      const claim = {
        plan_id: plan.plan_id,
        owner,
        lease_expires_at: Date.now() + opts.claim.leaseMs,
        ...(opts.claim.maxRunning !== undefined ? { max_running: opts.claim.maxRunning } : {}),
      };
      // Not queued any more (claimed, cancelled, interrupted): nothing of this attempt is kept.
      if (!runs.claimRun(runId, claim, steps)) {
        if (opts.claim.maxRunning !== undefined && runs.getRun(runId)?.status === RunStatus.Queued)
          throw new RatchetError(
            ErrorCode.IllegalTransition,
            `workflow ${wf.id} has ${opts.claim.maxRunning} run(s) running (concurrency ${opts.claim.maxRunning}): run ${runId} stays queued`,
            { field: "concurrency", runId },
          );
        throw new RatchetError(ErrorCode.IllegalTransition, `run ${runId} is not queued any more`, {
          field: "run_id",
          runId,
          to: RunStatus.Running,
        });
      }
    } else
      runs.startRun(
        {
          run_id: runId,
          workflow_id: wf.id,
          workflow_path: wf.source,
          plan_id: plan.plan_id,
          trigger: opts.trigger ?? RunTrigger.Manual,
          group_name: opts.group ?? null,
          owner,
        },
        steps,
      );
    return { planId: plan.plan_id, ledgerIds: ids };
  });
}

/** `<pid>@<host>`: the owner of the runs this process executes (workers included). */
export function runOwner(): string {
  return `${process.pid}@${hostname()}`;
}

/** Moves a claimed run's lease every third of it; calls `lost` once when the lease is gone. */
function heartbeat(runs: RunStore, runId: string, leaseMs: number, lost: () => void): NodeJS.Timeout {
  const owner = runOwner();
  const t = setInterval(
    () => {
      try {
        if (!runs.heartbeat(runId, owner, Date.now() + leaseMs)) {
          clearInterval(t);
          lost();
        }
      } catch {
        // the store is busy or unreachable: the next beat tries again (the lease still runs)
      }
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  t.unref();
  return t;
}

/** Whether the run's first selected step is a learned step with a saved Python script. */
function startsWithPythonScript(wf: Workflow, sel: RunSelection): boolean {
  const first = sel.selected[0];
  return (
    first !== undefined &&
    sel.modes.get(first) === ExecutionMode.LearnCode &&
    savedLanguage(wf, first) === "python"
  );
}
