/**
 * The Builder: `ratchet build <workflow> --step ID` (the spec's `execute_step`). The only place
 * where a model writes, repairs and saves a learned step's `main.py`.
 *
 * 1. A saved script that passes: it ran on the fast path, nothing else happens.
 * 2. `lock_code`: the saved script runs, no repair, nothing saved; metadata is recorded.
 * 3. Otherwise: an agent writes `code/main.py` (or, for a failing saved script, the repairs start
 *    from it), then static review + run + validation; up to {@link MAX_REPAIR_ITERATIONS} repairs,
 *    each a fresh agent fed exactly the spec's feedback. Diffs between iterations go to
 *    `code/fix-diffs/`. The latest script is saved back to `learnings/{step-id}/` unless it fails
 *    static review (a syntax error included); a real unified diff goes to `diffs/`, the version
 *    and relearn count go up only when the bytes changed, the contract is saved beside it.
 * 4. Repairs exhausted: plain `code_exec` attempts (nothing saved from them).
 *
 * Every Builder run is a ledger plan whose steps are the attempts (record.ts).
 *
 * `buildStep` is a few named steps: `buildableStep` and `taskFacts` (pure, attempts.ts), the shared
 * `prepareRunSetup`, `openBuild` (the state of build-state.ts, the first ledger write),
 * `firstAttempt` (`fastPathAttempt` or the author), `repairSaveFallBack` (`repairAttempt` ×N,
 * save-back, code_exec), each attempt closed by `closeAttempt`. Every candidate runs through
 * {@link evaluate}.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError, systemClock } from "../core/index.js";
import type { LoopTool } from "../model/index.js";
import {
  type BridgeProvider,
  dependencyDirs,
  isOrchestrator,
  type LearnedStepResult,
  learnedStepInput,
  newOrchestratorContext,
  newRunId,
  type OrchestratorContext,
  prepareRunSetup,
  RunBridge,
  type RunContext,
  type RunHome,
  type RunSetup,
  runLearnedStep,
  runStoreOf,
  type SavedScript,
  savedScript,
  stepCodeDir,
  stepOutputDir,
  type Workflow,
  type WorkflowStep,
  workflowHome,
} from "../workflow/index.js";
import { type AgentResult, runAgent } from "./agent.js";
import {
  asAuthoringAid,
  buildableStep,
  learningsAccess,
  nextAttemptTitle,
  notRunAttempt,
  repairFacts,
  taskFacts,
} from "./attempts.js";
import {
  type Build,
  type BuildOptions,
  type BuildPlace,
  type BuildReport,
  buildReport,
  cancelled,
  closeAttempt,
  type LazyModel,
  lazyModel,
  noAttemptsYet,
  passed,
  SCRIPT,
} from "./build-state.js";
import {
  AGENT_MAX_ROUNDS,
  AGENT_MAX_TOKENS,
  AGENT_MAX_TOOL_CALLS,
  AGENT_TIMEOUT_MS,
  CODE_EXEC_FALLBACK_ATTEMPTS,
  MAX_REPAIR_ITERATIONS,
} from "./limits.js";
import { createModelStepRunner } from "./model-steps.js";
import { builderSystemPrompt, initialTask, repairFeedback, type TaskFacts } from "./prompt.js";
import { AttemptRecorder } from "./record.js";
import { saveBack } from "./save-back.js";
import { scriptTools, skillNotesPath } from "./script-tools.js";
import { RanCode, readCodeText } from "./snapshot.js";

export type { AttemptReport, BuildOptions, BuildReport } from "./build-state.js";

/**
 * Builds (or checks) one learn_code step.
 * @throws RatchetError `usage` (not a learn_code step), `step_not_found`, variable/secret errors,
 *   `invalid_value` when an agent is needed and no model is configured.
 */
export async function buildStep(
  ctx: RunContext,
  wf: Workflow,
  stepId: string,
  opts: BuildOptions = {},
): Promise<BuildReport> {
  const step = buildableStep(wf, stepId);
  const env = opts.env ?? process.env;
  // The same set-up as a run (workflow/run-setup.ts): nothing is written before it succeeded.
  const setup = await prepareRunSetup({
    workflow: wf,
    workspaceDir: ctx.workspace.dir,
    redactor: ctx.ledger.redactor,
    languages: ["python"],
    vars: opts.vars,
    group: opts.group,
    env,
    secretsFile: opts.secretsFile,
    stepTimeoutSeconds: opts.stepTimeoutSeconds,
  });
  const b = openBuild(ctx, wf, step, setup, env, opts);
  try {
    await firstAttempt(b);
    if (b.saveResult.reason === null) await repairSaveFallBack(b);
    if (opts.signal?.aborted) b.recorder.abort("the build was cancelled");
  } catch (e) {
    b.recorder.abort(`build stopped: ${e instanceof Error ? e.message : String(e)}`);
    throw e;
  } finally {
    await b.runBridge.close();
  }
  return buildReport(b);
}

/**
 * The build's state, from the shared set-up: where it happens, the run's bridge, the task facts,
 * the agents' tools, and the ledger plan of the attempts with the first one started — the
 * build's first write.
 * @throws RatchetError `not_found` when a dependency has no passing run (nothing written).
 */
function openBuild(
  ctx: RunContext,
  wf: Workflow,
  step: WorkflowStep,
  setup: RunSetup,
  env: NodeJS.ProcessEnv,
  opts: BuildOptions,
): Build {
  const { place, dependencyDirs } = placeBuild(ctx, wf, step, setup.home, opts);
  const { redactor } = ctx.ledger;
  const { signal } = opts;
  const model = lazyModel(opts.model);
  const runBridge = buildBridge(ctx, step, env, opts, model, () => b.orchestrator);
  // The step's scripts reach only its allowed_tools, as in a run.
  const bridge: BridgeProvider = () => runBridge.endpoint(step.allowed_tools);
  const access = learningsAccess(wf, step);
  const notesFile = skillNotesPath(place.home);
  const facts = taskFacts(wf, step, access, access === "none" ? undefined : readIf(notesFile));
  const found = savedScript(wf, step.id);
  const saved = found?.language === "python" ? found : undefined;
  const b: Build = {
    ...place,
    locked: step.agent_configs.lock_code === true,
    facts,
    saved,
    orchestrator: isOrchestrator(step)
      ? newOrchestratorContext({ workflow: wf, step, outputDir: place.outputDir, bridge, redactor, signal })
      : undefined,
    runInput: scriptInput(place, setup, env, dependencyDirs, bridge),
    ran: new RanCode(place.codeDir),
    runBridge,
    model,
    tools: {
      learn_code: agentTools("learn_code", place, facts, notesFile, bridge, () => evaluate(b)),
      code_exec: agentTools("code_exec", place, facts, notesFile, bridge, () => evaluate(b)),
    },
    recorder: openAttempts(place, saved !== undefined),
    ...noAttemptsYet(),
  };
  return b;
}

/**
 * Where the build happens (a new run id, its folders) and its dependencies' output folders:
 * their newest passing runs'.
 * @throws RatchetError `not_found` naming a dependency without one.
 */
function placeBuild(
  ctx: RunContext,
  wf: Workflow,
  step: WorkflowStep,
  runHome: RunHome,
  opts: BuildOptions,
): { place: BuildPlace; dependencyDirs: string[] } {
  const clock = opts.clock ?? systemClock;
  const runId = newRunId(clock.now());
  const deps = dependencyDirs(wf, runHome, runId, step, [], new Map(), runStoreOf(ctx.store));
  if ("blocked" in deps)
    throw new RatchetError(
      ErrorCode.NotFound,
      `cannot build step ${step.id}: ${deps.blocked}; run it first`,
      {
        stepId: step.id,
      },
    );
  const home = workflowHome(wf);
  // The build's working folders are the run home's, like a run's: only save-back writes the workflow's folder.
  const outputDir = stepOutputDir(runHome, runId, step.id);
  const codeDir = stepCodeDir(runHome, runId, step.id);
  return {
    place: { ctx, wf, step, opts, clock, runId, home, runHome, outputDir, codeDir },
    dependencyDirs: deps.dirs,
  };
}

/** What every script run of the build is run with: the shared set-up and the step's own parts. */
function scriptInput(
  place: BuildPlace,
  setup: RunSetup,
  env: NodeJS.ProcessEnv,
  dependencyDirs: readonly string[],
  bridge: BridgeProvider,
): Build["runInput"] {
  const { ctx, opts } = place;
  return learnedStepInput(setup, {
    workflow: place.wf,
    step: place.step,
    runId: place.runId,
    dependencyDirs,
    bridge,
    baseEnv: env,
    groupName: opts.group ?? null,
    redactor: ctx.ledger.redactor,
    clock: place.clock,
    signal: opts.signal,
    runner: opts.runner,
  });
}

/** The build's ledger plan, its first attempt started: the build's first write. */
function openAttempts(place: BuildPlace, hasSaved: boolean): AttemptRecorder {
  const { wf, step, runId } = place;
  return AttemptRecorder.open(
    place.ctx,
    `build ${wf.id} step ${step.id} ${runId}`,
    hasSaved ? "attempt 1: the saved script (fast path)" : "attempt 1: write main.py",
    place.home,
  );
}

/**
 * The tools of the build's agents of one kind: file tools in code/, run_script (`evaluate`), the
 * bridge (`call_tool` for `code_exec` only, script-tools.ts), the notes when writable.
 */
function agentTools(
  kind: "learn_code" | "code_exec",
  place: BuildPlace,
  facts: TaskFacts,
  notesFile: string,
  bridge: BridgeProvider,
  evaluate: () => Promise<LearnedStepResult>,
): LoopTool[] {
  const { step, clock } = place;
  return scriptTools({
    kind,
    codeDir: place.codeDir,
    evaluate,
    bridge,
    ...(step.allowed_tools ? { allowedTools: step.allowed_tools } : {}),
    ...(facts.learningObjective ? { skillNotesFile: notesFile } : {}),
    stepId: step.id,
    now: () => new Date(clock.now()),
  });
}

/**
 * The build's tool bridge (started when a script first runs). An orchestrator's script is tried
 * with real sub-agents: its bridge serves call_sub_agent for `orchestrator()`, whose tokens count
 * toward the attempt that ran the script.
 */
function buildBridge(
  ctx: RunContext,
  step: WorkflowStep,
  env: NodeJS.ProcessEnv,
  opts: BuildOptions,
  model: LazyModel,
  orchestrator: () => OrchestratorContext | undefined,
): RunBridge {
  return new RunBridge({
    workspaceDir: ctx.workspace.dir,
    ...(opts.bridgeConfig ? { config: opts.bridgeConfig } : {}),
    redactor: ctx.ledger.redactor,
    env,
    ...(isOrchestrator(step)
      ? { tools: [createModelStepRunner({ client: () => model.get() }).subAgentTool(orchestrator)] }
      : {}),
  });
}

/**
 * THE one place a candidate script (the working copy in code/) runs: through the fast path's
 * runLearnedStep, hence exec's door, with the run's own set-up. Every attempt goes through here.
 * Save-back keeps code/ as the latest working-copy run found it (snapshot before, verified after).
 */
function evaluate(b: Build): Promise<LearnedStepResult> {
  return b.ran.around(() => runLearnedStep({ ...b.runInput, workingCopy: true }));
}

/** Runs the working copy, or reports that the agent left no main.py. */
function evaluateOrMissing(b: Build): Promise<LearnedStepResult> {
  if (existsSync(join(b.codeDir, SCRIPT))) return evaluate(b);
  return Promise.resolve(notRunAttempt("the agent did not write code/main.py"));
}

/** One fresh agent of the build, with the script tools (the model is resolved on first use). */
function agent(b: Build, kind: "learn_code" | "code_exec", message: string): Promise<AgentResult> {
  return runAgent({
    client: b.model.get(),
    system: builderSystemPrompt(kind),
    message,
    tools: b.tools[kind],
    limits: {
      maxRounds: AGENT_MAX_ROUNDS,
      maxToolCalls: AGENT_MAX_TOOL_CALLS,
      maxTokens: AGENT_MAX_TOKENS,
      timeoutMs: AGENT_TIMEOUT_MS,
    },
    ...(b.opts.signal ? { signal: b.opts.signal } : {}),
    ...(b.opts.onAgentEvent ? { onEvent: b.opts.onAgentEvent } : {}),
  });
}

/** Attempt 1: the saved script on the fast path, a locked step without one, or the first agent. */
async function firstAttempt(b: Build): Promise<void> {
  if (b.saved) return fastPathAttempt(b, b.saved);
  if (b.locked) {
    const run = notRunAttempt(
      "lock_code is set and there is no saved script: unlock the step to build one",
      "no saved script; lock_code is set",
    );
    await closeAttempt(b, "fast_path", run, undefined, undefined);
    b.saveResult = { saved: null, reason: "lock_code is set: nothing is written" };
    return;
  }
  mkdirSync(b.codeDir, { recursive: true });
  const a = await agent(b, "learn_code", initialTask(b.facts, false));
  const run = await evaluateOrMissing(b);
  await closeAttempt(b, "author", run, a, nextAttemptTitle(1, { kind: "author", passed: passed(run) }));
}

/**
 * The saved script on the fast path. The repairs start from the saved folder (the fast path
 * copied it into code/, unless it stopped before: a changed contract); a changed contract is
 * checked against the saved script before a model is called.
 */
async function fastPathAttempt(b: Build, saved: SavedScript): Promise<void> {
  let run = await runLearnedStep(b.runInput);
  if (!existsSync(join(b.codeDir, SCRIPT))) {
    mkdirSync(b.codeDir, { recursive: true });
    copyFileSync(saved.path, join(b.codeDir, SCRIPT));
  }
  const recheck = run.outcome === "contract_changed" && !b.locked;
  if (recheck) {
    const w = await evaluate(b);
    run = { ...w, log: `${run.error}\n--- the saved script against the new contract ---\n${w.log}` };
  }
  const next = nextAttemptTitle(1, { kind: "fast_path", passed: passed(run), locked: b.locked });
  await closeAttempt(b, "fast_path", run, undefined, next);
  if (passed(run) && !recheck)
    b.saveResult = { saved: null, reason: "the saved script passes: nothing to build" };
  else if (b.locked) b.saveResult = { saved: null, reason: "lock_code is set: no repair, nothing saved" };
  b.previous = readCodeText(b.codeDir, SCRIPT);
}

/**
 * Repairs (each a fresh agent with exactly the spec's feedback), then the save-back of the latest
 * learned script (before any code_exec attempt touches code/), then, when the repairs are
 * exhausted, plain code_exec attempts — an authoring aid only.
 */
async function repairSaveFallBack(b: Build): Promise<void> {
  for (let i = 1; i <= MAX_REPAIR_ITERATIONS && !passed(b.lastRun) && !cancelled(b); i++)
    await repairAttempt(b, i);
  const verdictPassed = passed(b.lastRun);
  b.saveResult = cancelled(b)
    ? { saved: null, reason: "the build was cancelled: nothing saved" }
    : await saveBack({
        workflow: b.wf,
        step: b.step,
        code: b.ran.last,
        passed: verdictPassed,
        declared: b.facts.declared,
        outputDir: b.outputDir,
        runHome: b.runHome,
        runId: b.runId,
        groupName: b.opts.group ?? null,
        lastRun: b.lastRun,
        now: new Date(b.clock.now()),
      });
  if (verdictPassed) return;
  for (let i = 1; i <= CODE_EXEC_FALLBACK_ATTEMPTS && !cancelled(b); i++) {
    const a = await agent(b, "code_exec", initialTask(b.facts, true));
    const run = await evaluateOrMissing(b);
    const next = nextAttemptTitle(b.attempts.length + 1, {
      kind: "code_exec",
      passed: passed(run),
      round: i,
    });
    await closeAttempt(b, "code_exec", run, a, next);
    b.lastRun = asAuthoringAid(run);
  }
}

/** Repair `i`: a fresh agent told the task and the last run (never the validation details). */
async function repairAttempt(b: Build, i: number): Promise<void> {
  // Absolute: the working copy lives in the run home, outside the workflow's folder.
  const scriptPath = join(b.codeDir, SCRIPT);
  const a = await agent(b, "learn_code", repairFeedback(b.facts, repairFacts(b.lastRun, i, scriptPath)));
  const run = await evaluateOrMissing(b);
  const next = nextAttemptTitle(b.attempts.length + 1, { kind: "repair", passed: passed(run), round: i });
  await closeAttempt(b, "repair", run, a, next);
}

function readIf(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}
