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
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { BridgeConfig } from "../bridge/index.js";
import { type Clock, ErrorCode, RatchetError, systemClock } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import type { ModelClient } from "../model/index.js";
import {
  type BridgeProvider,
  dependencyDirs,
  ExecutionMode,
  isOrchestrator,
  type LearnedStepResult,
  learningsDir,
  newRunId,
  type OrchestratorContext,
  prepareRunSetup,
  RunBridge,
  type RunContext,
  RunStore,
  resolveMode,
  runLearnedStep,
  savedScript,
  stepCodeDir,
  stepOutputDir,
  type Workflow,
  type WorkflowStep,
  workflowHome,
  writeFileAtomic,
} from "../workflow/index.js";
import { type AgentResult, runAgent } from "./agent.js";
import { attemptError, attemptLog, notRunAttempt } from "./attempts.js";
import { unifiedDiff } from "./diff.js";
import {
  AGENT_MAX_ROUNDS,
  AGENT_MAX_TOKENS,
  AGENT_MAX_TOOL_CALLS,
  AGENT_TIMEOUT_MS,
  CODE_EXEC_FALLBACK_ATTEMPTS,
  MAX_REPAIR_ITERATIONS,
  SKILL_NOTES_MAX_CHARS,
} from "./limits.js";
import { createModelStepRunner } from "./model-steps.js";
import { builderSystemPrompt, initialTask, repairFeedback, type TaskFacts } from "./prompt.js";
import { AttemptRecorder } from "./record.js";
import { saveBack } from "./save-back.js";
import { scriptTools, skillNotesPath } from "./script-tools.js";
import { RanCode, readCodeText } from "./snapshot.js";
import { headTailChars } from "./text.js";

export type AttemptKind = "fast_path" | "author" | "repair" | "code_exec";

export interface AttemptReport {
  n: number;
  kind: AttemptKind;
  ledger_step_id: string;
  outcome: string;
  exit_code: number | null;
  tokens: number;
  /** Relative to the workflow home, when the attempt changed main.py. */
  diff: string | null;
  error: string | null;
}

export interface BuildReport {
  workflow_id: string;
  step_id: string;
  run_id: string;
  plan_id: string;
  /** `passed`: the latest script passes; `failed`: it does not. */
  verdict: "passed" | "failed";
  attempts: AttemptReport[];
  tokens: number;
  /** The save-back, or why nothing was saved. */
  saved: { script_version: number; relearn_count: number; changed: boolean; diff: string | null } | null;
  not_saved_reason: string | null;
  model: string | null;
  output_dir: string;
}

export interface BuildOptions {
  /** The model (resolved only when an agent is needed). */
  model?: () => ModelClient;
  vars?: Record<string, string>;
  group?: string;
  env?: NodeJS.ProcessEnv;
  secretsFile?: string;
  signal?: AbortSignal;
  runner?: ProcessRunner;
  clock?: Clock;
  bridgeConfig?: BridgeConfig;
  /** Time limit of each script run, in seconds. Default 600. */
  stepTimeoutSeconds?: number;
  /** Told about each attempt as it closes. */
  onAttempt?: (a: AttemptReport) => void;
}

const SCRIPT = "main.py";

function readIf(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

function outputFiles(step: WorkflowStep): string[] {
  return (step.validation?.files ?? []).map((f) => f.file_name);
}

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
  const env = opts.env ?? process.env;
  const clock = opts.clock ?? systemClock;
  const now = () => new Date(clock.now());
  const redactor = ctx.ledger.redactor;
  // The same set-up as a run (workflow/run-setup.ts): nothing is written before it succeeded.
  const { variables, secrets, sandbox, readPolicy, timeoutSeconds } = await prepareRunSetup({
    workflow: wf,
    workspaceDir: ctx.workspace.dir,
    redactor,
    languages: ["python"],
    vars: opts.vars,
    group: opts.group,
    env,
    secretsFile: opts.secretsFile,
    stepTimeoutSeconds: opts.stepTimeoutSeconds,
  });
  const runId = newRunId(clock.now());
  const runs = new RunStore(ctx.store);
  const deps = dependencyDirs(wf, runId, step, [], new Map(), runs);
  if ("blocked" in deps)
    throw new RatchetError(ErrorCode.NotFound, `cannot build step ${stepId}: ${deps.blocked}; run it first`, {
      stepId,
    });
  const home = workflowHome(wf);
  const _savedDir = learningsDir(wf, stepId);
  const outputDir = stepOutputDir(wf, runId, stepId);
  const codeDir = stepCodeDir(wf, runId, stepId);
  const locked = step.agent_configs.lock_code === true;
  const access = step.agent_configs.learnings_access ?? wf.defaults.learnings_access ?? "read";

  // An orchestrator's script is tried with real sub-agents: its bridge serves call_sub_agent, and
  // the sub-agents' tokens count toward the attempt that ran the script.
  let orchestrator: OrchestratorContext | undefined;
  const runBridge = new RunBridge({
    workspaceDir: ctx.workspace.dir,
    ...(opts.bridgeConfig ? { config: opts.bridgeConfig } : {}),
    redactor,
    env,
    ...(isOrchestrator(step)
      ? { tools: [createModelStepRunner({ client: () => model() }).subAgentTool(() => orchestrator)] }
      : {}),
  });
  // The step's scripts reach only its allowed_tools, as in a run.
  const bridge: BridgeProvider = () => runBridge.endpoint(step.allowed_tools);
  if (isOrchestrator(step))
    orchestrator = {
      workflow: wf,
      step,
      outputDir,
      bridge,
      redactor,
      tokens: 0,
      log: [],
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
  let subAgentTokensSeen = 0;
  const runInput = {
    workflow: wf,
    step,
    runId,
    dependencyDirs: deps.dirs,
    variables,
    secrets,
    bridge,
    baseEnv: env,
    timeoutSeconds,
    groupName: opts.group ?? null,
    sandbox,
    readPolicy,
    redactor,
    clock,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.runner ? { runner: opts.runner } : {}),
  };
  // THE one place a candidate script (the working copy in code/) runs: through the fast path's
  // runLearnedStep, hence exec's door, with the run's own set-up. Every attempt goes through here.
  // Save-back keeps code/ as the latest working-copy run found it (snapshot before, verified after).
  const ran = new RanCode(codeDir);
  const evaluate = (): Promise<LearnedStepResult> =>
    ran.around(() => runLearnedStep({ ...runInput, workingCopy: true }));

  const notesFile = skillNotesPath(home);
  const notes = access === "none" ? undefined : readIf(notesFile);
  const facts: TaskFacts = {
    stepId,
    description: step.description,
    declared: [...Object.keys(wf.variables).map((n) => `VAR_${n}`), ...wf.secrets.map((n) => `SECRET_${n}`)],
    outputFiles: outputFiles(step),
    dependencies: step.context_dependencies,
    ...(notes
      ? { skillNotes: headTailChars(notes, SKILL_NOTES_MAX_CHARS / 2, SKILL_NOTES_MAX_CHARS / 2) }
      : {}),
    ...(access === "read-write" && step.agent_configs.learning_objective
      ? { learningObjective: step.agent_configs.learning_objective }
      : {}),
  };
  const tools = scriptTools({
    codeDir,
    evaluate,
    bridge,
    ...(step.allowed_tools ? { allowedTools: step.allowed_tools } : {}),
    ...(facts.learningObjective ? { skillNotesFile: notesFile } : {}),
    stepId,
    now,
  });
  let client: ModelClient | undefined;
  const model = (): ModelClient => {
    if (!opts.model)
      throw new RatchetError(ErrorCode.InvalidValue, "the Builder needs a model: set RATCHET_MODEL", {
        field: "RATCHET_MODEL",
      });
    client ??= opts.model();
    return client;
  };
  const agent = (kind: "learn_code" | "code_exec", message: string): Promise<AgentResult> =>
    runAgent({
      client: model(),
      system: builderSystemPrompt(kind),
      message,
      tools,
      limits: {
        maxRounds: AGENT_MAX_ROUNDS,
        maxToolCalls: AGENT_MAX_TOOL_CALLS,
        maxTokens: AGENT_MAX_TOKENS,
        timeoutMs: AGENT_TIMEOUT_MS,
      },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });

  const saved = savedScript(wf, stepId);
  const hasSaved = saved?.language === "python";
  const recorder = AttemptRecorder.open(
    ctx,
    `build ${wf.id} step ${stepId} ${runId}`,
    hasSaved ? "attempt 1: the saved script (fast path)" : "attempt 1: write main.py",
    home,
  );
  const attempts: AttemptReport[] = [];
  let tokens = 0;
  let previous: string | undefined;
  let lastRun: LearnedStepResult | undefined;

  /** Records one attempt's diff and closes it in the ledger. */
  const close = async (
    kind: AttemptKind,
    run: LearnedStepResult,
    agentResult: AgentResult | undefined,
    next: string | undefined,
  ): Promise<void> => {
    const n = attempts.length + 1;
    const current = readCodeText(codeDir, SCRIPT);
    let diffRel: string | null = null;
    if (kind !== "fast_path" && current !== undefined && current !== previous) {
      const text = await unifiedDiff(previous, current, {
        from: previous === undefined ? "/dev/null" : `main.py (before attempt ${n})`,
        to: `main.py (attempt ${n})`,
      });
      const file = join(codeDir, "fix-diffs", `attempt-${n}.diff`);
      writeFileAtomic(file, `${text}\n`);
      diffRel = relative(home, file);
    }
    previous = current;
    const sub = (orchestrator?.tokens ?? 0) - subAgentTokensSeen;
    subAgentTokensSeen += sub;
    const t = (agentResult?.tokens ?? 0) + sub;
    tokens += t;
    const passed = run.outcome === "passed";
    const error = attemptError(passed, agentResult?.error, run.error);
    const log = attemptLog({
      n,
      kind,
      tokens: t,
      agentLog: agentResult?.log,
      subAgentLog: orchestrator?.log.splice(0),
      runLog: run.log,
      diff: diffRel,
    });
    const ledgerId = recorder.current;
    recorder.close({
      passed,
      summary: `${kind}: ${run.outcome}${error ? `: ${error.split("\n")[0]}` : ""}`,
      log,
      tokens: t,
      exitCode: run.exitCode,
      ...(next ? { next } : {}),
    });
    const report: AttemptReport = {
      n,
      kind,
      ledger_step_id: ledgerId,
      outcome: run.outcome,
      exit_code: run.exitCode,
      tokens: t,
      diff: diffRel,
      error,
    };
    attempts.push(report);
    lastRun = run;
    opts.onAttempt?.(report);
  };

  let notSaved: string | null = null;
  let savedInfo: BuildReport["saved"] = null;
  try {
    // Attempt 1: the saved script on the fast path, or the first agent.
    if (hasSaved) {
      let run = await runLearnedStep(runInput);
      // The repairs start from the saved folder (the fast path copied it into code/, unless it
      // stopped before: a changed contract).
      if (!existsSync(join(codeDir, SCRIPT)) && saved) {
        mkdirSync(codeDir, { recursive: true });
        copyFileSync(saved.path, join(codeDir, SCRIPT));
      }
      const recheck = run.outcome === "contract_changed" && !locked;
      if (recheck) {
        // The contract changed: check the saved script against the new one before calling a model.
        const w = await evaluate();
        run = { ...w, log: `${run.error}\n--- the saved script against the new contract ---\n${w.log}` };
      }
      const passed = run.outcome === "passed";
      const more = !passed && !locked;
      await close(
        "fast_path",
        run,
        undefined,
        more ? `attempt 2: repair 1 of ${MAX_REPAIR_ITERATIONS}` : undefined,
      );
      if (passed && !recheck) notSaved = "the saved script passes: nothing to build";
      else if (locked) notSaved = "lock_code is set: no repair, nothing saved";
      previous = readCodeText(codeDir, SCRIPT);
    } else if (locked) {
      await close(
        "fast_path",
        notRunAttempt(
          "lock_code is set and there is no saved script: unlock the step to build one",
          "no saved script; lock_code is set",
        ),
        undefined,
        undefined,
      );
      notSaved = "lock_code is set: nothing is written";
    } else {
      mkdirSync(codeDir, { recursive: true });
      const a = await agent("learn_code", initialTask(facts, false));
      const run = await evaluateOrMissing(evaluate, codeDir);
      await close(
        "author",
        run,
        a,
        run.outcome === "passed" ? undefined : `attempt 2: repair 1 of ${MAX_REPAIR_ITERATIONS}`,
      );
    }

    // Repairs: each a fresh agent with exactly the spec's feedback.
    if (notSaved === null) {
      const cancelled = () => opts.signal?.aborted === true;
      for (let i = 1; i <= MAX_REPAIR_ITERATIONS && lastRun?.outcome !== "passed" && !cancelled(); i++) {
        const findings = (lastRun?.review?.findings ?? [])
          .filter((f) => f.severity === "blocking")
          .map((f) => ({ line: f.line, rule: f.rule, message: f.message, fix: f.fix }));
        const feedback = repairFeedback(facts, {
          attempt: i,
          maxAttempts: MAX_REPAIR_ITERATIONS,
          scriptPath: relative(home, join(codeDir, SCRIPT)),
          findings,
          lastOutput: lastRun?.output ?? lastRun?.error ?? "",
          lastExitCode: lastRun?.exitCode ?? null,
        });
        const a = await agent("learn_code", feedback);
        const run = await evaluateOrMissing(evaluate, codeDir);
        const passed = run.outcome === "passed";
        const next = passed
          ? undefined
          : i < MAX_REPAIR_ITERATIONS
            ? `attempt ${attempts.length + 2}: repair ${i + 1} of ${MAX_REPAIR_ITERATIONS}`
            : CODE_EXEC_FALLBACK_ATTEMPTS > 0
              ? `attempt ${attempts.length + 2}: code_exec (repairs exhausted)`
              : undefined;
        await close("repair", run, a, next);
      }
      const verdictPassed = lastRun?.outcome === "passed";

      // Save-back of the latest learned script (before any code_exec attempt touches code/).
      const saveResult = cancelled()
        ? { saved: null, reason: "the build was cancelled: nothing saved" }
        : await saveBack({
            workflow: wf,
            step,
            code: ran.last,
            passed: verdictPassed,
            declared: facts.declared,
            outputDir,
            runId,
            groupName: opts.group ?? null,
            lastRun,
            now: now(),
          });
      savedInfo = saveResult.saved;
      notSaved = saveResult.reason;

      // Repairs exhausted: plain code_exec attempts, an authoring aid only.
      if (!verdictPassed) {
        for (let i = 1; i <= CODE_EXEC_FALLBACK_ATTEMPTS && !cancelled(); i++) {
          const a = await agent("code_exec", initialTask(facts, true));
          const run = await evaluateOrMissing(evaluate, codeDir);
          await close(
            "code_exec",
            run,
            a,
            i < CODE_EXEC_FALLBACK_ATTEMPTS ? `attempt ${attempts.length + 2}: code_exec` : undefined,
          );
          // A code_exec pass shows what an agent can do; it does not make the learned script pass.
          lastRun = { ...run, outcome: run.outcome === "passed" ? "script_failed" : run.outcome };
        }
      }
    }
    if (opts.signal?.aborted) recorder.abort("the build was cancelled");
  } catch (e) {
    recorder.abort(`build stopped: ${e instanceof Error ? e.message : String(e)}`);
    throw e;
  } finally {
    await runBridge.close();
  }

  const verdict = lastRun?.outcome === "passed" ? "passed" : "failed";
  return {
    workflow_id: wf.id,
    step_id: stepId,
    run_id: runId,
    plan_id: recorder.planId,
    verdict,
    attempts,
    tokens,
    saved: savedInfo,
    not_saved_reason: savedInfo ? null : notSaved,
    model: client?.model ?? null,
    output_dir: outputDir,
  };
}

/** Runs the working copy, or reports that the agent left no main.py. */
async function evaluateOrMissing(
  evaluate: () => Promise<LearnedStepResult>,
  codeDir: string,
): Promise<LearnedStepResult> {
  if (existsSync(join(codeDir, SCRIPT))) return evaluate();
  return notRunAttempt("the agent did not write code/main.py");
}
