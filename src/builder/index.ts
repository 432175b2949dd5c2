/**
 * `builder/`: the Builder (`ratchet build`, the only writer of learned scripts) and the
 * model-driven steps of runs (`direct`, `code_exec`, orchestrators' sub-agents). See docs/builder.md.
 */
export type { AttemptKind } from "./attempts.js";
export type { AttemptReport, BuildOptions, BuildReport } from "./build.js";
export { buildStep } from "./build.js";
export {
  AGENT_MAX_ROUNDS,
  AGENT_MAX_TOKENS,
  AGENT_MAX_TOOL_CALLS,
  AGENT_TIMEOUT_MS,
  CODE_EXEC_FALLBACK_ATTEMPTS,
  MAX_REPAIR_ITERATIONS,
  SUB_AGENT_MAX_ROUNDS,
  SUB_AGENT_TIMEOUT_MS,
} from "./limits.js";
export { modelClientFor, resolveModelOptions, workspaceModelConfig } from "./model-config.js";
export { createModelStepRunner } from "./model-steps.js";
export type { FeedbackFinding, RepairFacts, TaskFacts } from "./prompt.js";
export { builderSystemPrompt, NO_FABRICATION_RULE, repairFeedback } from "./prompt.js";
export { confinedPath, ToolRefusal } from "./tools.js";
