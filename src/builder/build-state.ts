/**
 * The state of one Builder build and its bookkeeping: what every attempt shares (`Build`), how an
 * attempt is closed (its diff in `code/fix-diffs/`, its tokens, the ledger, the report), the
 * build's report, the model resolved on first use. build.ts runs the attempts around `evaluate`.
 */
import { join, relative } from "node:path";
import type { BridgeConfig } from "../bridge/index.js";
import { type Clock, ErrorCode, RatchetError } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import type { LoopTool, ModelClient, ToolLoopEvent } from "../model/index.js";
import {
  type LearnedStepResult,
  type learnedStepInput,
  type OrchestratorContext,
  type RunBridge,
  type RunContext,
  type RunHome,
  type SavedScript,
  type Workflow,
  type WorkflowStep,
  writeFileAtomic,
} from "../workflow/index.js";
import type { AgentResult } from "./agent.js";
import { type AttemptKind, attemptError, attemptLog, attemptSummary } from "./attempts.js";
import { unifiedDiff } from "./diff.js";
import type { TaskFacts } from "./prompt.js";
import type { AttemptRecorder } from "./record.js";
import type { SaveBackResult } from "./save-back.js";
import { type RanCode, readCodeText } from "./snapshot.js";

export const SCRIPT = "main.py";

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
  /** Told about each agent's rounds, tool calls and results as they happen (progress). */
  onAgentEvent?: (e: ToolLoopEvent) => void;
}

/** Where a build happens: its step, its run id and folders. */
export interface BuildPlace {
  readonly ctx: RunContext;
  readonly wf: Workflow;
  readonly step: WorkflowStep;
  readonly opts: BuildOptions;
  readonly clock: Clock;
  readonly runId: string;
  /** The workflow home (diff paths are relative to it). */
  readonly home: string;
  /** Where the build's attempts write (the run home of layout.ts), never the workflow's folder. */
  readonly runHome: RunHome;
  readonly outputDir: string;
  readonly codeDir: string;
}

/** What the attempts have left so far: nothing, when the build opens. */
export interface BuildProgress {
  readonly attempts: AttemptReport[];
  tokens: number;
  /** The orchestrator's sub-agent tokens already counted toward an attempt. */
  subAgentTokensSeen: number;
  /** main.py as the previous attempt left it (for the next attempt's diff). */
  previous: string | undefined;
  lastRun: LearnedStepResult | undefined;
  /** The save-back's result, or why nothing is saved; `reason` null while the build goes on. */
  saveResult: SaveBackResult;
}

/** A build's progress before its first attempt. */
export function noAttemptsYet(): BuildProgress {
  return {
    attempts: [],
    tokens: 0,
    subAgentTokensSeen: 0,
    previous: undefined,
    lastRun: undefined,
    saveResult: { saved: null, reason: null },
  };
}

/** What every attempt of one build shares, and what the earlier attempts left. */
export interface Build extends BuildPlace, BuildProgress {
  readonly locked: boolean;
  readonly facts: TaskFacts;
  /** The saved Python script the build starts from, if there is one. */
  readonly saved: SavedScript | undefined;
  /** What every script run of the build is run with (workflow/run-setup.ts). */
  readonly runInput: ReturnType<typeof learnedStepInput>;
  /** `code/` as the latest working-copy run found it: what save-back writes. */
  readonly ran: RanCode;
  readonly runBridge: RunBridge;
  readonly model: LazyModel;
  /** The tools of each kind of agent: the author and the repairs, the `code_exec` fallback. */
  readonly tools: Readonly<Record<"learn_code" | "code_exec", LoopTool[]>>;
  readonly recorder: AttemptRecorder;
  /** The orchestrator the script delegates for (its sub-agents' tokens count toward the attempt). */
  readonly orchestrator: OrchestratorContext | undefined;
}

/** Closes one attempt: its diff, its tokens (the agent's and the sub-agents' since the last one), the ledger, the report. */
export async function closeAttempt(
  b: Build,
  kind: AttemptKind,
  run: LearnedStepResult,
  agentResult: AgentResult | undefined,
  next: string | undefined,
): Promise<void> {
  const n = b.attempts.length + 1;
  const current = readCodeText(b.codeDir, SCRIPT);
  const diff = kind === "fast_path" ? null : await writeAttemptDiff(b, n, current);
  b.previous = current;
  const sub = (b.orchestrator?.tokens ?? 0) - b.subAgentTokensSeen;
  b.subAgentTokensSeen += sub;
  const tokens = (agentResult?.tokens ?? 0) + sub;
  b.tokens += tokens;
  const error = attemptError(passed(run), agentResult?.error, run.error);
  const log = attemptLog({
    n,
    kind,
    tokens,
    agentLog: agentResult?.log,
    subAgentLog: b.orchestrator?.log.splice(0),
    runLog: run.log,
    diff,
  });
  const ledgerId = b.recorder.current;
  b.recorder.close({
    passed: passed(run),
    summary: attemptSummary(kind, run.outcome, error),
    log,
    tokens,
    exitCode: run.exitCode,
    ...(next ? { next } : {}),
  });
  const report: AttemptReport = {
    n,
    kind,
    ledger_step_id: ledgerId,
    outcome: run.outcome,
    exit_code: run.exitCode,
    tokens,
    diff,
    error,
  };
  b.attempts.push(report);
  b.lastRun = run;
  b.opts.onAttempt?.(report);
}

/** Writes `code/fix-diffs/attempt-N.diff` when attempt `n` changed main.py; its path from the workflow home. */
async function writeAttemptDiff(b: Build, n: number, current: string | undefined): Promise<string | null> {
  if (current === undefined || current === b.previous) return null;
  const text = await unifiedDiff(b.previous, current, {
    from: b.previous === undefined ? "/dev/null" : `main.py (before attempt ${n})`,
    to: `main.py (attempt ${n})`,
  });
  const file = join(b.codeDir, "fix-diffs", `attempt-${n}.diff`);
  writeFileAtomic(file, `${text}\n`);
  return relative(b.home, file);
}

/** The build's report: the verdict is the latest learned script's. */
export function buildReport(b: Build): BuildReport {
  const saved = b.saveResult.saved;
  return {
    workflow_id: b.wf.id,
    step_id: b.step.id,
    run_id: b.runId,
    plan_id: b.recorder.planId,
    verdict: passed(b.lastRun) ? "passed" : "failed",
    attempts: b.attempts,
    tokens: b.tokens,
    saved,
    not_saved_reason: saved ? null : b.saveResult.reason,
    model: b.model.used()?.model ?? null,
    output_dir: b.outputDir,
  };
}

/** The build's model client, made only when an agent is needed. */
export interface LazyModel {
  /** The model client, made on first use. @throws RatchetError `invalid_value` when none is configured. */
  get(): ModelClient;
  /** The client if one was made. */
  used(): ModelClient | undefined;
}

/** A {@link LazyModel} over `make` (undefined: no model is configured). */
export function lazyModel(make: (() => ModelClient) | undefined): LazyModel {
  let client: ModelClient | undefined;
  return {
    get() {
      if (!make)
        throw new RatchetError(ErrorCode.InvalidValue, "the Builder needs a model: set RATCHET_MODEL", {
          field: "RATCHET_MODEL",
        });
      client ??= make();
      return client;
    },
    used: () => client,
  };
}

/** Whether a run (the latest, when given) passed. */
export const passed = (run: LearnedStepResult | undefined): boolean => run?.outcome === "passed";
/** Whether the build was cancelled (Ctrl-C). */
export const cancelled = (b: Build): boolean => b.opts.signal?.aborted === true;
