/**
 * `workflow/`: the Steps capability. Workflow files (schema), execution modes, output validation,
 * learned-script metadata, variables and secrets, and where a workflow keeps its files.
 */

export type { CancelResult } from "./cancel.js";
export { cancelRun } from "./cancel.js";
// Runs (the fast path, run tables, write scope, promotion).
export type { ModeChange } from "./config-edit.js";
export { editStepMode, modeFields, writeStepMode } from "./config-edit.js";
export type { SavedContract, StepContract } from "./contract.js";
export {
  CONTRACT_FILE,
  changedContractFields,
  contractHash,
  readContract,
  saveContract,
  stepContract,
} from "./contract.js";
export type { DoctorReport, ToolReport } from "./doctor.js";
export { doctor } from "./doctor.js";
export type { BridgeEndpoint, BridgeProvider, LearnedStepInput, LearnedStepResult } from "./fast-path.js";
export { notRun, runLearnedStep } from "./fast-path.js";
export type { InterruptedRun } from "./interrupt.js";
export { interruptReason, parseOwner, processAlive, recoverInterruptedRuns } from "./interrupt.js";
export type { PathSegment, QueryResult } from "./jsonpath.js";
export { formatPath, parsePath, queryPath } from "./jsonpath.js";
export type { RunHome, WorkflowPaths } from "./layout.js";
export {
  diffsDir,
  historyDir,
  isRunId,
  learningsDir,
  metadataPath,
  newRunId,
  RUN_ID_PATTERN,
  runDir,
  runHomeOf,
  type SavedScript,
  savedScript,
  stepCodeDir,
  stepOutputDir,
  workflowHome,
} from "./layout.js";
export {
  ERROR_SNIPPET_MAX_CHARS,
  LOCKED_FAILURES_BEFORE_REVIEW,
  MAX_DB_CHECKS,
  MAX_JSON_CHECKS_PER_FILE,
  MAX_OUTPUT_FILE_BYTES,
  MAX_VALIDATION_FILES,
  MAX_WORKFLOW_STEPS,
  RECENT_RUNS_KEPT,
} from "./limits.js";
export type { ScriptRun } from "./metadata.js";
export {
  applyRun,
  NO_GROUP_KEY,
  noteSavedScript,
  readMetadata,
  recordScriptRun,
  SCRIPT_METADATA_FILE,
  sha256Hex,
  writeFileAtomic,
} from "./metadata.js";
export type {
  ModelStepInput,
  ModelStepResult,
  ModelStepRunner,
  OrchestratorContext,
} from "./model-step.js";
export { isOrchestrator, newOrchestratorContext } from "./model-step.js";
export type { ModeResolution } from "./modes.js";
export { resolveMode } from "./modes.js";
export { executionOrder, parseOnly, selectSteps } from "./order.js";
export type { Classified, FailureReason, ScriptFacts } from "./outcomes.js";
export { classifyScriptRun, describeScriptFailure } from "./outcomes.js";
export type { RunBridgeOptions } from "./run-bridge.js";
export { RunBridge } from "./run-bridge.js";
export {
  BRIDGE_LOG_MAX_LINES,
  DEFAULT_STEP_TIMEOUT_SECONDS,
  MAX_STEP_TIMEOUT_SECONDS,
  PROMOTION_MIN_SUCCESSES,
  STEP_MAX_CAPTURE_BYTES,
} from "./run-limits.js";
export { selectRun } from "./run-report.js";
export type { RunSetup, RunSetupInput, StepSpecifics } from "./run-setup.js";
export { learnedStepInput, prepareRunSetup } from "./run-setup.js";
export { dependencyDirs } from "./run-steps.js";
export type { RunStepOutcome, StepEvidence, WorkflowRunRow, WorkflowStepRunRow } from "./run-store.js";
export { RunStatus, type RunStore, runStoreOf, summariseEvidence } from "./run-store.js";
export type { RunContext, RunProgress, RunReport, RunWorkflowOptions, StepReport } from "./runs.js";
export { RunTrigger, runOwner, runWorkflow } from "./runs.js";
export {
  loadWorkflow,
  normaliseSecretName,
  normaliseVariableName,
  parseWorkflow,
  parseWorkflowText,
  STEP_ID_PATTERN,
  VARIABLE_NAME_PATTERN,
  WORKFLOW_ID_PATTERN,
} from "./schema.js";
export type { ResolveSecretsOptions, ResolveVariablesOptions } from "./secrets.js";
export { parseSecretsFile, resolveSecrets, resolveVariables } from "./secrets.js";
export type {
  AgentConfigs,
  DbCheck,
  FileValidation,
  JsonCheck,
  LearningsAccess,
  PredefinedRoute,
  RecentRun,
  ScriptMetadata,
  ValidationIssue,
  ValidationResult,
  ValidationSchema,
  WebhookTrigger,
  Workflow,
  WorkflowStep,
} from "./types.js";
export { ExecutionMode, StepOutcome } from "./types.js";
export type { ValidateOutputsOptions } from "./validation.js";
export { validateOutputs } from "./validation.js";
export { checkDbRows, checkJsonDocument, evaluateJsonCheck, isReadOnlyQuery } from "./validation-checks.js";
