/**
 * Shared pieces of the write flows' input schemas (each flow's own schema is in `flows/<op>.ts`):
 * field builders with their limits, the two step shapes, the skill sources, run-step's input
 * (`run-step.ts`), and the stable marker op names.
 */
import {
  bool,
  ErrorCode,
  type Infer,
  MAX_ID_CHARS,
  MAX_LEASE_SECONDS,
  MAX_LOG_TEXT_CHARS,
  MAX_PATH_CHARS,
  MAX_STEP_RUN_TIMEOUT_SECONDS,
  MAX_TEXT_CHARS,
  MAX_TITLE_CHARS,
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
export const text = (description?: string) =>
  str({ max: MAX_TEXT_CHARS, ...(description ? { description } : {}) });
export const logText = (description?: string) =>
  str({ max: MAX_LOG_TEXT_CHARS, ...(description ? { description } : {}) });
export const id = (description: string) => str({ min: 1, max: MAX_ID_CHARS, description });
export const stepType = oneOf(STEP_TYPES, "step type");
export const leaseSeconds = num({
  int: true,
  min: 1,
  max: MAX_LEASE_SECONDS,
  description: "lease length in seconds",
});

/** Where a skill activation came from (the original's enum; anything else is refused). */
export const SKILL_SOURCES = ["iron-law", "auto-search", "explicit-mention", "deferred-load"] as const;

/** Throws `schema_violation` naming `path`. */
export function refuse(path: string, message: string): never {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${path}\`: ${message}`, { field: path });
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

export const RunInput = obj({
  step_id: id("step to run"),
  type: oneOf(STEP_TYPES, "the step's type (COMMAND for shell work)"),
  command: str({ min: 1, max: MAX_TEXT_CHARS, description: "shell command, run with bash -c" }),
  summary: opt(text("one sentence for the completed step")),
  allow_nonzero: opt(bool("complete the step even when the command exits non-zero")),
  metrics_from_stdout: opt(bool("record `metric name=<x> value=<v> [unit=<u>]` lines as metrics")),
  timeout_seconds: opt(
    num({
      int: true,
      min: 1,
      max: MAX_STEP_RUN_TIMEOUT_SECONDS,
      description: "kill the command after this long",
    }),
  ),
  cwd: opt(str({ min: 1, max: MAX_PATH_CHARS, description: "working folder (default: the current folder)" })),
  lease_seconds: opt(leaseSeconds),
});

export type RunInput = Infer<typeof RunInput>;

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
  ReasonSlots: "reason-slots",
  ReasonFill: "reason-fill",
  HeadlineRespond: "headline-respond",
  Note: "note",
  ReferenceAdd: "reference-add",
  ReferenceMark: "reference-mark",
} as const;
export type Op = (typeof Op)[keyof typeof Op];
