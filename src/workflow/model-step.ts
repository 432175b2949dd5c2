/**
 * The seam between runs and the model-driven half of Steps. A run executes `direct` and
 * `code_exec` steps, and gives orchestrator scripts their `call_sub_agent` tool, through a
 * {@link ModelStepRunner} it is handed (the Builder module provides the real one, see
 * `src/builder/`). Without one, such steps fail with `needs_model` and the reason given.
 * This keeps `workflow/` free of the model layer: a run of learned steps loads no model code.
 */
import type { BuiltinToolSpec } from "../bridge/index.js";
import type { Clock, Redactor } from "../core/index.js";
import type { ProcessRunner, SandboxInfo } from "../exec/index.js";
import type { BridgeProvider, LearnedStepResult } from "./fast-path.js";
import type { RunHome } from "./layout.js";
import type { Workflow, WorkflowStep } from "./types.js";

export interface ModelStepInput {
  workflow: Workflow;
  step: WorkflowStep;
  mode: "direct" | "code_exec";
  runId: string;
  /** Where the run writes (layout.ts): the step's output folder and working copy. */
  home: RunHome;
  dependencyDirs: readonly string[];
  variables: Record<string, string>;
  secrets: Record<string, string>;
  bridge: BridgeProvider;
  baseEnv: NodeJS.ProcessEnv;
  timeoutSeconds: number;
  groupName: string | null;
  sandbox: SandboxInfo;
  redactor: Redactor;
  signal?: AbortSignal;
  runner?: ProcessRunner;
  clock?: Clock;
}

/** A model-driven step's result: a step result plus the tokens its model calls used. */
export interface ModelStepResult extends LearnedStepResult {
  tokens: number;
}

/** The orchestrator step a `call_sub_agent` call belongs to (set by the run while it runs). */
export interface OrchestratorContext {
  workflow: Workflow;
  step: WorkflowStep;
  outputDir: string;
  bridge: BridgeProvider;
  redactor: Redactor;
  /** Tokens of the sub-agents so far (the handler adds to it). */
  tokens: number;
  /** Lines for the step's log. */
  log: string[];
  signal?: AbortSignal;
}

export interface ModelStepRunner {
  /** `provider:model`, or the reason no model can be used (then every call fails the step). */
  readonly model: string;
  /** Set when no model is configured: the message says what to set. */
  readonly unavailable?: string;
  /** Runs a `direct` or `code_exec` step. Never throws for a failure of the step itself. */
  runStep(input: ModelStepInput): Promise<ModelStepResult>;
  /** The `call_sub_agent` custom tool, delegating for whichever orchestrator `current()` names. */
  subAgentTool(current: () => OrchestratorContext | undefined): BuiltinToolSpec;
}

/** Whether a step is an orchestrator (todo_task): at least one predefined route. */
export function isOrchestrator(step: WorkflowStep): boolean {
  return (step.predefined_routes?.length ?? 0) > 0;
}

/** A fresh {@link OrchestratorContext} for an orchestrator step about to run: no tokens, no log yet. */
export function newOrchestratorContext(a: {
  workflow: Workflow;
  step: WorkflowStep;
  outputDir: string;
  bridge: BridgeProvider;
  redactor: Redactor;
  signal?: AbortSignal | undefined;
}): OrchestratorContext {
  return {
    workflow: a.workflow,
    step: a.step,
    outputDir: a.outputDir,
    bridge: a.bridge,
    redactor: a.redactor,
    tokens: 0,
    log: [],
    ...(a.signal ? { signal: a.signal } : {}),
  };
}
