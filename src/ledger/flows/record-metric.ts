/** `record-metric` (`ratchet metric record`): Record a numeric observation; its project is given or its plan's, and one is required. */
import {
  ErrorCode,
  type Infer,
  MAX_TITLE_CHARS,
  MAX_UNIT_CHARS,
  obj,
  opt,
  RatchetError,
  type Schema,
  str,
} from "../../core/index.js";
import { type LedgerCore, NO_PROJECT } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { id, refuse } from "../inputs.js";

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
export type MetricInput = Infer<typeof MetricInput>;

/** The `record-metric` op: a metric needs a project (given, or its plan's); `"none"` is none. */
export function recordMetric(l: LedgerCore, input: MetricInput) {
  return l.store.tx(() => recordMetricInTx(l, input, { requireProject: true }));
}

/** Records a metric inside the caller's transaction (run-step capture keeps a plan with no project). */
export function recordMetricInTx(l: LedgerCore, input: MetricInput, opts: { requireProject?: boolean } = {}) {
  // Like publish: a metric names only a registered project (exit 3, nothing written).
  const given = input.project === NO_PROJECT ? undefined : input.project;
  if (given !== undefined && !l.store.getProject(given))
    throw new RatchetError(
      ErrorCode.ProjectNotFound,
      `field \`project\`: project ${input.project} is not registered (run \`ratchet project add ${input.project}\`)`,
      { field: "project" },
    );
  let planId = input.plan_id;
  if (input.step_id !== undefined) {
    const step = l.requireStep(input.step_id);
    if (planId !== undefined && step.plan_id !== planId) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `field \`step_id\`: step ${step.step_id} belongs to plan ${step.plan_id}, not ${planId}`,
        { field: "step_id" },
      );
    }
    planId = step.plan_id;
  }
  const plan = planId !== undefined ? l.requirePlan(planId) : undefined;
  const fromPlan = plan?.project === NO_PROJECT ? null : (plan?.project ?? null);
  const project = given ?? fromPlan;
  if (project === null && opts.requireProject) {
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `field \`project\`: 'project' is required — give one, or a plan_id/step_id whose plan has a project${plan ? ` (plan ${plan.plan_id} has none)` : ""}; nothing written`,
      { field: "project" },
    );
  }
  const source = input.source ?? (opts.requireProject ? "record-metric" : "run-step");
  const id = l.store.insertMetric({
    source,
    name: input.name,
    value: input.value,
    unit: input.unit ?? null,
    project,
    plan_id: plan?.plan_id ?? null,
    step_id: input.step_id ?? null,
    created_at: l.now(),
  });
  l.store.appendEvent({
    entityKind: "metric",
    entityId: String(id),
    planId: plan?.plan_id ?? null,
    type: LedgerEvent.MetricRecorded,
    payload: { name: input.name, value: input.value, unit: input.unit, project, step_id: input.step_id },
  });
  return {
    metric_id: id,
    name: input.name,
    value: input.value,
    unit: input.unit ?? null,
    project,
    plan_id: plan?.plan_id ?? null,
    step_id: input.step_id ?? null,
    source,
  };
}

export const RECORD_METRIC_FLOW = defineFlow({
  op: "record-metric",
  command: ["metric", "record"],
  summary: "Record a numeric observation; its project is given or its plan's, and one is required.",
  input: MetricInput,
  example: { name: "auc", value: 0.91, plan_id: "fix-login-20260101120000" },
  refusals: [
    { code: ErrorCode.ProjectNotFound, exit: 3, when: "`project` names no registered project" },
    { code: ErrorCode.SchemaViolation, exit: 2, when: "no project given and the plan has none" },
    { code: ErrorCode.InvalidValue, exit: 2, when: "`step_id` belongs to another plan" },
  ],
  result: ["metric_id", "name", "value", "unit", "project", "plan_id", "step_id", "source"],
  run: (l, i) => recordMetric(l, i),
});
