/**
 * reason-fill's input, checked by hand in the spec's order (§4.3) rather than by a strict schema
 * at the edge: the "no state graph" refusal (10) must win over a shape error (2), and the old
 * `{node_key, text}` shape gets its own message. `ReasonFillInput.parse` only sees that the input
 * is an object; `parseFill` does the rest after the graph check. Pure.
 */
import {
  arr,
  bool,
  ErrorCode,
  MAX_ID_CHARS,
  MAX_TEXT_CHARS,
  num,
  obj,
  oneOf,
  opt,
  RatchetError,
  type Schema,
  str,
} from "../../core/index.js";

export const KINDS = ["technical", "organizational", "mixed"] as const;
export type ReasonKind = (typeof KINDS)[number];
export const SOURCES = ["human", "agent", "system"] as const;
export type FillSource = (typeof SOURCES)[number];

/** One answer, its shape decided: the tier follows from it (callers never pass a tier). */
export type Answer = {
  node_key: string;
  kind: ReasonKind;
  because: number[];
  path: string;
} & (
  | { shape: "stated"; utterance_id: number; span: [number, number] }
  | { shape: "asserted"; interpretation: string; refs: number[] }
  | { shape: "unstated" }
);

export interface FillInput {
  plan_id: string;
  project?: string;
  run_id?: number;
  step_id?: string;
  source: FillSource;
  reasons: Answer[];
}

const idStr = str({ min: 1, max: MAX_ID_CHARS });
const int = num({ int: true, min: 0 });

/** The documented shape (for `--help`, the docs table, `/openapi.json` and the MCP tool). */
const Documented = obj({
  plan_id: str({ min: 1, max: MAX_ID_CHARS, description: "the plan whose slots are answered" }),
  project: opt(str({ min: 1, max: MAX_ID_CHARS, description: "its project (default: the plan's)" })),
  run_id: opt(
    num({ int: true, min: 1, description: "the analysis run answered (default: each node's slot run)" }),
  ),
  step_id: opt(
    str({ min: 1, max: MAX_ID_CHARS, description: "the step recording them (e.g. <plan>-REVIEW.1)" }),
  ),
  source: opt(oneOf(SOURCES, "who answers (default agent; recorded_by)")),
  reasons: arr(
    obj({
      node_key: str({
        min: 1,
        max: MAX_ID_CHARS,
        description: "the slot answered (an nk_… key of the plan's changed set)",
      }),
      utterance_id: opt(num({ int: true, min: 0, description: "stated: the recorded utterance quoted" })),
      span: opt(
        arr(int, {
          min: 2,
          max: 2,
          description: "stated: [start, end) character offsets into the utterance",
        }),
      ),
      interpretation: opt(
        str({
          min: 1,
          max: MAX_TEXT_CHARS,
          description: "asserted: the reading of why (not a description of the edit)",
        }),
      ),
      refs: opt(arr(int, { description: "asserted: reference ids the interpretation rests on" })),
      unstated: opt(bool("true: nobody said why (recorded as a gap)")),
      because: opt(arr(int, { description: "reason ids this change leaned on (written as influence)" })),
      kind: opt(oneOf(KINDS, "technical (default), organizational or mixed")),
    }),
    {
      min: 1,
      description:
        "answers: {node_key, utterance_id, span:[start,end]} (stated), {node_key, interpretation, refs?} (asserted) or {node_key, unstated:true}; each may add because:[reason_id] and kind",
    },
  ),
});

/** The edge schema: an object, anything inside (checked by {@link parseFill} in the spec's order). */
export const ReasonFillInput: Schema<Record<string, unknown>> = {
  parse(v, path) {
    if (v === null || typeof v !== "object" || Array.isArray(v))
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `field \`${path || "(input)"}\`: must be a JSON object`,
        {
          field: path || "(input)",
        },
      );
    const rec = v as Record<string, unknown>;
    if (typeof rec.plan_id !== "string" || rec.plan_id.trim() === "")
      throw new RatchetError(ErrorCode.SchemaViolation, "field `plan_id`: is required (a plan id)", {
        field: "plan_id",
      });
    return rec;
  },
  json: () => Documented.json(),
};

function bad(field: string, message: string): never {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${field}\`: ${message}`, { field });
}

/** The path of the first `text` key anywhere in `v`, if any. */
export function findKey(v: unknown, key: string, path = ""): string | undefined {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const hit = findKey(v[i], key, `${path}[${i}]`);
      if (hit) return hit;
    }
  } else if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      const here = path ? `${path}.${k}` : k;
      if (k === key) return here;
      const hit = findKey(x, key, here);
      if (hit) return hit;
    }
  }
  return undefined;
}

/**
 * An integer ≥ 0; a string of digits is taken too, so a `{{label.path}}` reference of `step apply`
 * (which always substitutes text) can carry an id.
 */
function intOf(v: unknown, field: string): number {
  const n = typeof v === "string" && /^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
    bad(field, `must be an integer ≥ 0 (got ${JSON.stringify(v)})`);
  return n;
}

function idsOf(v: unknown, field: string): number[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) bad(field, "must be an array of ids");
  return [...new Set(v.map((x, i) => intOf(x, `${field}[${i}]`)))];
}

const TOP = ["plan_id", "project", "run_id", "step_id", "source", "reasons"];
const ANSWER = ["node_key", "utterance_id", "span", "interpretation", "refs", "unstated", "because", "kind"];

/** Checks the shapes (step 2 of the spec's order). @throws `schema_violation` (2) naming the field. */
export function parseFill(raw: Record<string, unknown>): FillInput {
  const text = findKey(raw, "text");
  // The old `{node_key, text}` shape: the message starts with the spec's wording.
  if (text)
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `"text" is not accepted (field \`${text}\`): a reason is never free text; give \`interpretation\` (asserted) or \`utterance_id\` + \`span\` of the user's recorded words (stated), or \`unstated: true\``,
      { field: text },
    );
  const tier = findKey(raw, "tier");
  if (tier) bad(tier, '"tier" is not accepted: the tier follows from the answer\'s shape');
  for (const k of Object.keys(raw))
    if (!TOP.includes(k)) bad(k, `unknown field (allowed: ${TOP.join(", ")})`);
  const project =
    raw.project === undefined || raw.project === null ? undefined : idStr.parse(raw.project, "project");
  const run_id = raw.run_id === undefined || raw.run_id === null ? undefined : intOf(raw.run_id, "run_id");
  const step_id =
    raw.step_id === undefined || raw.step_id === null ? undefined : idStr.parse(raw.step_id, "step_id");
  const source: FillSource = (SOURCES as readonly unknown[]).includes(raw.source)
    ? (raw.source as FillSource)
    : "agent";
  if (!Array.isArray(raw.reasons) || raw.reasons.length === 0)
    bad("reasons", "is required: a non-empty list of answers");
  const reasons = raw.reasons.map((a, i) => parseAnswer(a, `reasons[${i}]`));
  return {
    plan_id: raw.plan_id as string,
    ...(project !== undefined ? { project } : {}),
    ...(run_id !== undefined ? { run_id } : {}),
    ...(step_id !== undefined ? { step_id } : {}),
    source,
    reasons,
  };
}

function parseAnswer(a: unknown, path: string): Answer {
  if (a === null || typeof a !== "object" || Array.isArray(a)) bad(path, "must be an object");
  const o = a as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!ANSWER.includes(k)) bad(`${path}.${k}`, `unknown field (allowed: ${ANSWER.join(", ")})`);
  if (typeof o.node_key !== "string" || o.node_key.trim() === "") bad(`${path}.node_key`, "is required");
  const shapes = [
    o.utterance_id !== undefined || o.span !== undefined ? "stated" : undefined,
    o.interpretation !== undefined || o.refs !== undefined ? "asserted" : undefined,
    o.unstated !== undefined ? "unstated" : undefined,
  ].filter((s) => s !== undefined);
  if (shapes.length !== 1)
    bad(
      path,
      `${shapes.length === 0 ? "no" : "more than one"} answer shape: give exactly one of {utterance_id, span}, {interpretation, refs?}, {unstated: true}`,
    );
  const kind = o.kind === undefined ? "technical" : o.kind;
  if (!(KINDS as readonly unknown[]).includes(kind))
    bad(`${path}.kind`, `must be one of ${KINDS.join(", ")}`);
  const base = {
    node_key: o.node_key,
    kind: kind as ReasonKind,
    because: idsOf(o.because, `${path}.because`),
    path,
  };
  if (shapes[0] === "stated") {
    if (o.utterance_id === undefined) bad(`${path}.utterance_id`, "is required with `span`");
    const utterance_id = intOf(o.utterance_id, `${path}.utterance_id`);
    if (!Array.isArray(o.span) || o.span.length !== 2)
      bad(`${path}.span`, "must be two integers [start, end]");
    const span: [number, number] = [intOf(o.span[0], `${path}.span[0]`), intOf(o.span[1], `${path}.span[1]`)];
    return { ...base, shape: "stated", utterance_id, span };
  }
  if (shapes[0] === "asserted") {
    if (typeof o.interpretation !== "string" || o.interpretation.trim() === "")
      bad(`${path}.interpretation`, "must be a non-empty string");
    if (o.interpretation.length > MAX_TEXT_CHARS)
      bad(`${path}.interpretation`, `must be at most ${MAX_TEXT_CHARS} characters`);
    return {
      ...base,
      shape: "asserted",
      interpretation: o.interpretation.trim(),
      refs: idsOf(o.refs, `${path}.refs`),
    };
  }
  if (o.unstated !== true) bad(`${path}.unstated`, "must be true");
  return { ...base, shape: "unstated" };
}
