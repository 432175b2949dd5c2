export type { BatchLine } from "./batch.js";
export { applyBatch, Batch, resolveReferences } from "./batch.js";
export type { OpContext, OpOutcome } from "./dispatch.js";
export { applyOp, errorMarker, markerFor, OP_NAMES } from "./dispatch.js";
export { LedgerEvent } from "./events.js";
export type { FlowDef, Refusal } from "./flow.js";
export type { AbandonInput } from "./flows/abandon-plan.js";
export type { ReviewCloseInput } from "./flows/agent-review-close.js";
export type { LogInput } from "./flows/append-log.js";
export type { CompleteInput } from "./flows/complete-step.js";
export type { DeviateInput } from "./flows/deviate.js";
export type { FailInput } from "./flows/fail-step.js";
export type { FinishInput } from "./flows/finish-plan.js";
export type { HeartbeatInput } from "./flows/heartbeat.js";
export type { AnyFlow } from "./flows/index.js";
export { FLOW_BY_OP, FLOWS, OP_INPUTS } from "./flows/index.js";
export type { PublishInput } from "./flows/publish-plan.js";
export type { RaiseBudgetInput } from "./flows/raise-budget.js";
export type { MetricInput } from "./flows/record-metric.js";
export type { RecordSkillInput } from "./flows/record-skill.js";
export type { StartInput } from "./flows/start-step.js";
export type { SweepInput } from "./flows/sweep.js";
export { childStepId, planIdFor, reviewStepId, stepLetters, topStepId } from "./ids.js";
export type { RunInput, StepSpecInput } from "./inputs.js";
export { Op, SKILL_SOURCES } from "./inputs.js";
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
