/**
 * The JSON input contract of every write flow (executing-plans spec), strict: unknown fields are
 * refused by name. `OP_INPUTS` maps each marker op name to its schema; docs/plans.md lists them.
 */
import {
  arr,
  bool,
  type Infer,
  MAX_ID_CHARS,
  MAX_LEASE_SECONDS,
  MAX_LOG_TEXT_CHARS,
  MAX_PATH_CHARS,
  MAX_STEP_RUN_TIMEOUT_SECONDS,
  MAX_STEPS_PER_PLAN,
  MAX_TEXT_CHARS,
  MAX_TITLE_CHARS,
  MAX_UNIT_CHARS,
  num,
  obj,
  oneOf,
  opt,
  str,
} from "../core/index.js";
import { STEP_TYPES } from "./states.js";

// Every free-text field has a limit in the schema (docs/plans.md lists them): prose and agent
// input/output MAX_TEXT_CHARS, logs MAX_LOG_TEXT_CHARS, ids MAX_ID_CHARS.
const text = (description?: string) => str({ max: MAX_TEXT_CHARS, ...(description ? { description } : {}) });
const logText = (description?: string) =>
  str({ max: MAX_LOG_TEXT_CHARS, ...(description ? { description } : {}) });
const id = (description: string) => str({ min: 1, max: MAX_ID_CHARS, description });
const stepType = oneOf(STEP_TYPES, "step type");
const leaseSeconds = num({
  int: true,
  min: 1,
  max: MAX_LEASE_SECONDS,
  description: "lease length in seconds",
});

export const StepSpecInput = obj({
  title: str({ min: 1, max: MAX_TITLE_CHARS }),
  type: stepType,
  description: opt(text()),
});

export const PublishInput = obj({
  goal: str({ min: 1, max: MAX_TEXT_CHARS, description: "what the plan achieves" }),
  project: opt(id("registered project the plan belongs to")),
  max_revisions: opt(num({ int: true, min: 0, max: 1000, description: "revision budget (default 5)" })),
  steps: arr(StepSpecInput, { min: 1, max: MAX_STEPS_PER_PLAN }),
});

export const StartInput = obj({
  step_id: id("step to start"),
  type: opt(stepType),
  agent_input: opt(text("what the agent was given")),
  log_context: opt(logText()),
  lease_seconds: opt(leaseSeconds),
});

export const CompleteInput = obj({
  step_id: id("step to complete"),
  summary: opt(text("one human-curated sentence")),
  agent_output: opt(text("what the agent produced")),
  log_context: opt(logText()),
});

export const FailInput = obj({
  step_id: id("step to fail"),
  reason: opt(text()),
  log_context: opt(logText()),
});

export const LogInput = obj({
  step_id: id("step to append to"),
  text: logText("raw output to keep"),
});

export const RunInput = obj({
  step_id: id("step to run"),
  type: stepType,
  command: str({ min: 1, max: MAX_TEXT_CHARS, description: "shell command, run with bash -c" }),
  summary: opt(text()),
  allow_nonzero: opt(bool("complete the step even when the command exits non-zero")),
  metrics_from_stdout: opt(bool("record `metric name=<x> value=<v> [unit=<u>]` lines as metrics")),
  timeout_seconds: opt(num({ int: true, min: 1, max: MAX_STEP_RUN_TIMEOUT_SECONDS })),
  cwd: opt(str({ min: 1, max: MAX_PATH_CHARS, description: "working folder (default: the current folder)" })),
  lease_seconds: opt(leaseSeconds),
});

export const HeartbeatInput = obj({
  step_id: id("step whose lease to renew"),
  lease_seconds: opt(leaseSeconds),
});

export const DeviateInput = obj({
  parent_step_id: id("step the new sub-steps hang under"),
  justification: str({ min: 1, max: MAX_TEXT_CHARS }),
  sub_steps: arr(StepSpecInput, { min: 1, max: MAX_STEPS_PER_PLAN }),
});

export const RecordSkillInput = obj({
  plan_id: id("plan"),
  name: str({ min: 1, max: MAX_TITLE_CHARS }),
  source: str({ min: 1, max: MAX_TEXT_CHARS }),
  step_id: opt(id("step")),
  reason: opt(text()),
});

export const MetricInput = obj({
  name: str({ min: 1, max: MAX_TITLE_CHARS }),
  value: num(),
  unit: opt(str({ max: MAX_UNIT_CHARS })),
  project: opt(id("project")),
  plan_id: opt(id("plan")),
  step_id: opt(id("step")),
});

export const RaiseBudgetInput = obj({
  plan_id: id("plan"),
  new_max: num({ int: true, min: 1, max: 1000 }),
  reason: str({ min: 1, max: MAX_TEXT_CHARS }),
});

export const AbandonInput = obj({
  plan_id: id("plan"),
  reason: str({ min: 1, max: MAX_TEXT_CHARS }),
});

export const FinishInput = obj({ plan_id: id("plan") });

export const ReviewCloseInput = obj({
  plan_id: id("plan"),
  outcome: oneOf(["pass", "fail"] as const),
  summary: opt(text()),
  log_context: opt(logText()),
});

export const SweepInput = obj({
  plan_id: opt(id("only this plan")),
});

export type PublishInput = Infer<typeof PublishInput>;
export type StartInput = Infer<typeof StartInput>;
export type CompleteInput = Infer<typeof CompleteInput>;
export type FailInput = Infer<typeof FailInput>;
export type LogInput = Infer<typeof LogInput>;
export type RunInput = Infer<typeof RunInput>;
export type HeartbeatInput = Infer<typeof HeartbeatInput>;
export type DeviateInput = Infer<typeof DeviateInput>;
export type RecordSkillInput = Infer<typeof RecordSkillInput>;
export type MetricInput = Infer<typeof MetricInput>;
export type RaiseBudgetInput = Infer<typeof RaiseBudgetInput>;
export type AbandonInput = Infer<typeof AbandonInput>;
export type FinishInput = Infer<typeof FinishInput>;
export type ReviewCloseInput = Infer<typeof ReviewCloseInput>;
export type SweepInput = Infer<typeof SweepInput>;
export type StepSpecInput = Infer<typeof StepSpecInput>;

/** Marker op names (stable, pinned). */
export const Op = {
  Publish: "publish-plan",
  Start: "start-step",
  Complete: "complete-step",
  Fail: "fail-step",
  Log: "append-log",
  Run: "run-step",
  Deviate: "deviate",
  RecordSkill: "record-skill",
  Metric: "record-metric",
  RaiseBudget: "raise-budget",
  Abandon: "abandon-plan",
  Finish: "finish-plan",
  ReviewClose: "agent-review-close",
  Heartbeat: "heartbeat",
  Sweep: "sweep",
} as const;
export type Op = (typeof Op)[keyof typeof Op];

export const OP_INPUTS = {
  "publish-plan": PublishInput,
  "start-step": StartInput,
  "complete-step": CompleteInput,
  "fail-step": FailInput,
  "append-log": LogInput,
  "run-step": RunInput,
  deviate: DeviateInput,
  "record-skill": RecordSkillInput,
  "record-metric": MetricInput,
  "raise-budget": RaiseBudgetInput,
  "abandon-plan": AbandonInput,
  "finish-plan": FinishInput,
  "agent-review-close": ReviewCloseInput,
  heartbeat: HeartbeatInput,
  sweep: SweepInput,
} as const;
