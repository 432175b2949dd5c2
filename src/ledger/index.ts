export type { OpContext, OpOutcome } from "./dispatch.js";
export { applyOp, errorMarker, markerFor, OP_NAMES } from "./dispatch.js";
export { childStepId, planIdFor, reviewStepId, stepLetters, topStepId } from "./ids.js";
export type {
  AbandonInput,
  CompleteInput,
  DeviateInput,
  FailInput,
  FinishInput,
  HeartbeatInput,
  LogInput,
  MetricInput,
  PublishInput,
  RaiseBudgetInput,
  RecordSkillInput,
  ReviewCloseInput,
  RunInput,
  StartInput,
  StepSpecInput,
  SweepInput,
} from "./inputs.js";
export { OP_INPUTS, Op } from "./inputs.js";
export type { LedgerDeps, RollupReport } from "./ledger.js";
export { gitRoot, Ledger } from "./ledger.js";
export type { ParsedMetric } from "./metrics.js";
export { parseMetricLines } from "./metrics.js";
export type { PlanView, StepView } from "./reads.js";
export { renderPlan, showPlan, treeOrder } from "./reads.js";
export type { RollupDecision, RollupStep } from "./rollup.js";
export { isSound, rollUp } from "./rollup.js";
export type { RunStepOptions } from "./run-step.js";
export {
  cleanStaleRunDirs,
  EXIT_CANCELLED,
  EXIT_NOT_STARTED,
  EXIT_TIMED_OUT,
  exitStatusOf,
  RUN_DIR_PREFIX,
  redactingLineSink,
  runStep,
} from "./run-step.js";
export {
  checkPlanMove,
  checkStepMove,
  isTerminalStep,
  PLAN_TRANSITIONS,
  PlanStatus,
  STEP_TRANSITIONS,
  STEP_TYPES,
  StepRole,
  StepStatus,
  StepType,
} from "./states.js";
