/**
 * The JSON input contract of every write flow (executing-plans spec), strict: unknown fields are
 * refused by name. `OP_INPUTS` maps each marker op name to its schema; docs/plans.md lists them.
 */
import {
  arr,
  bool,
  ErrorCode,
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
  RatchetError,
  type Schema,
  str,
} from "../core/index.js";
import { STEP_TYPES, type StepType } from "./states.js";

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

/** Where a skill activation came from (the original's enum; anything else is refused). */
export const SKILL_SOURCES = ["iron-law", "auto-search", "explicit-mention", "deferred-load"] as const;

function refuse(path: string, message: string): never {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${path}\`: ${message}`, { field: path });
}

/** Any JSON value kept as given (the original's extension keys), at most MAX_TEXT_CHARS serialised. */
function jsonValue(description: string): Schema<unknown> {
  return {
    parse(v, path) {
      const size = JSON.stringify(v)?.length ?? 0;
      if (size > MAX_TEXT_CHARS)
        refuse(path, `must be at most ${MAX_TEXT_CHARS} characters as JSON (got ${size})`);
      return v;
    },
    json: () => ({ description }),
  };
}

const StepObject = obj({
  title: opt(str({ min: 1, max: MAX_TITLE_CHARS, description: "short name (default: the description)" })),
  type: opt(stepType),
  step_type: opt(stepType),
  description: opt(text("what the step does (the original's only required step field)")),
  ctx_estimate_k: opt(
    num({
      min: 0,
      max: 1_000_000,
      description: "the original's context estimate in k tokens (accepted, not stored)",
    }),
  ),
});

/** A step as published or added by `deviate`, normalised: `type` absent = untyped until start/run. */
export interface StepSpecInput {
  title: string;
  type?: StepType;
  description?: string;
}

/**
 * A step in either shape: a bare string (the original's), `{description, type?|step_type?}`
 * (the original's object), or `{title, type?, description?}` (Ratchet's). The title defaults to
 * the description's first line.
 */
export const StepSpecInput: Schema<StepSpecInput> = {
  parse(v, path) {
    if (typeof v === "string") {
      const description = str({ min: 1, max: MAX_TEXT_CHARS }).parse(v, path);
      return { title: titleOf(description), description };
    }
    const o = StepObject.parse(v, path);
    if (o.type !== undefined && o.step_type !== undefined && o.type !== o.step_type)
      refuse(`${path}.step_type`, `says ${o.step_type} but \`type\` says ${o.type}: give one`);
    const title = o.title ?? (o.description !== undefined ? titleOf(o.description) : undefined);
    if (title === undefined || title.trim() === "")
      refuse(`${path}.title`, "is required (or give `description`)");
    const type = o.type ?? o.step_type;
    return {
      title,
      ...(type !== undefined ? { type } : {}),
      ...(o.description !== undefined ? { description: o.description } : {}),
    };
  },
  json: () => ({
    oneOf: [
      { type: "string", minLength: 1, description: "the step's description (an untyped step)" },
      StepObject.json(),
    ],
  }),
};

function titleOf(description: string): string {
  const line = description.trim().split("\n")[0] ?? "";
  return line.length > MAX_TITLE_CHARS ? `${line.slice(0, MAX_TITLE_CHARS - 1)}…` : line;
}

const SkillSpec = obj({
  name: str({ min: 1, max: MAX_TITLE_CHARS, description: "skill name" }),
  source: oneOf(SKILL_SOURCES, "how the skill was activated"),
  reason: opt(text("why it was activated")),
});

const PublishFields = obj({
  goal: str({ min: 1, max: MAX_TEXT_CHARS, description: "what the plan achieves" }),
  prefix: opt(
    str({
      min: 1,
      max: 64,
      pattern: /^[a-z0-9-]+$/,
      description: "plan id prefix: the id becomes <prefix>-<YYYYMMDDHHMMSS> (default: a slug of the goal)",
    }),
  ),
  project: opt(id('registered project the plan belongs to, or "none" for an explicit no-project plan')),
  max_revisions: opt(num({ int: true, min: 0, max: 1000, description: "revision budget (default 5)" })),
  steps: arr(StepSpecInput, { min: 1, max: MAX_STEPS_PER_PLAN, description: "the plan's steps, in order" }),
  user_query: opt(text("the user's prompt, verbatim (stored on the plan)")),
  skills: opt(arr(SkillSpec, { max: 100, description: "skills active at publish (recorded with no step)" })),
  declared_targets: opt(jsonValue("impact preflight targets (stored as given)")),
  expectations: opt(jsonValue("expected outcomes (stored as given)")),
  headline_notes: opt(jsonValue("headline notes (stored as given)")),
});

/** Publish input; a missing goal or steps is named with the original's wording. */
export const PublishInput: Schema<Infer<typeof PublishFields>> & { shape: typeof PublishFields.shape } = {
  shape: PublishFields.shape,
  parse(v, path) {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      for (const f of ["goal", "steps"]) {
        const got = (v as Record<string, unknown>)[f];
        if (got === undefined || got === null)
          refuse(
            f,
            `is required (missing required field: '${f}'; required: goal, steps; prefix recommended)`,
          );
      }
    }
    return PublishFields.parse(v, path);
  },
  json: () => PublishFields.json(),
};

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
  justification: str({ min: 1, max: MAX_TEXT_CHARS, description: "why the plan changes" }),
  sub_steps: arr(StepSpecInput, {
    min: 1,
    max: MAX_STEPS_PER_PLAN,
    description: "new sub-steps: strings, {description, type?|step_type?} or {title, type?}",
  }),
});

export const RecordSkillInput = obj({
  plan_id: id("plan"),
  name: str({ min: 1, max: MAX_TITLE_CHARS, description: "skill name" }),
  source: oneOf(SKILL_SOURCES, "how the skill was activated"),
  step_id: opt(id("step")),
  reason: opt(text("why it was activated")),
});

const NUMERIC = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A metric value: a JSON number, or a strictly numeric string (trimmed). */
const metricValue: Schema<number> = {
  parse(v, path) {
    if (typeof v === "number" && Number.isFinite(v)) return v;
    if (typeof v === "string" && NUMERIC.test(v.trim())) {
      const n = Number(v.trim());
      if (Number.isFinite(n)) return n;
    }
    return refuse(path, `must be a number or a numeric string (got ${JSON.stringify(v) ?? String(v)})`);
  },
  json: () => ({
    oneOf: [{ type: "number" }, { type: "string", pattern: NUMERIC.source }],
    description: "the observation",
  }),
};

export const MetricInput = obj({
  name: str({ min: 1, max: MAX_TITLE_CHARS, description: "metric name" }),
  value: metricValue,
  unit: opt(str({ max: MAX_UNIT_CHARS, description: "unit" })),
  project: opt(id('project (default: the plan\'s; "none" counts as none; one is required)')),
  plan_id: opt(id("plan")),
  step_id: opt(id("step (its plan is used when plan_id is absent)")),
  source: opt(str({ min: 1, max: MAX_TITLE_CHARS, description: "who recorded it (default record-metric)" })),
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

export type PublishInput = Infer<typeof PublishFields>;
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
