/**
 * One table from marker op name to write flow, used by every edge (CLI commands, `step apply`,
 * HTTP, MCP). The handler map is typed over `Op`, so a new op does not compile until handled.
 */
import { type RatchetError, toRatchetError } from "../core/index.js";
import { OP_INPUTS, type Op } from "./inputs.js";
import type { Ledger } from "./ledger.js";
import { type RunStepOptions, runStep } from "./run-step.js";

export interface OpContext {
  cwd?: string;
  run?: RunStepOptions;
}

export interface OpOutcome {
  op: Op;
  ok: boolean;
  /** The flow's JSON result (absent on error). */
  result?: Record<string, unknown>;
  /** The one-line tail marker. */
  marker: Record<string, unknown>;
  /** The CLI exit status: 0, the error's status, or (run-step) the command's own status. */
  exitStatus: number;
  error?: RatchetError;
}

type Handler = (
  ledger: Ledger,
  input: never,
  ctx: OpContext,
) => Record<string, unknown> | Promise<Record<string, unknown>>;

const HANDLERS: { [K in Op]: Handler } = {
  "publish-plan": (l, i: Parameters<Ledger["publish"]>[0], c) =>
    l.publish(i, { ...(c.cwd ? { cwd: c.cwd } : {}) }),
  "start-step": (l, i: Parameters<Ledger["start"]>[0]) => l.start(i),
  "complete-step": (l, i: Parameters<Ledger["complete"]>[0]) => l.complete(i),
  "fail-step": (l, i: Parameters<Ledger["fail"]>[0]) => l.fail(i),
  "append-log": (l, i: Parameters<Ledger["log"]>[0]) => l.log(i),
  "run-step": (l, i: Parameters<typeof runStep>[1], c) =>
    runStep(l, i.cwd === undefined && c.cwd ? { ...i, cwd: c.cwd } : i, c.run ?? {}),
  deviate: (l, i: Parameters<Ledger["deviate"]>[0]) => l.deviate(i),
  "record-skill": (l, i: Parameters<Ledger["recordSkill"]>[0]) => l.recordSkill(i),
  "record-metric": (l, i: Parameters<Ledger["recordMetric"]>[0]) => l.recordMetric(i),
  "raise-budget": (l, i: Parameters<Ledger["raiseBudget"]>[0]) => l.raiseBudget(i),
  "abandon-plan": (l, i: Parameters<Ledger["abandon"]>[0]) => l.abandon(i),
  "finish-plan": (l, i: Parameters<Ledger["finish"]>[0]) => l.finish(i),
  "agent-review-close": (l, i: Parameters<Ledger["reviewClose"]>[0]) => l.reviewClose(i),
  heartbeat: (l, i: Parameters<Ledger["heartbeat"]>[0]) => l.heartbeat(i),
  sweep: (l, i: Parameters<Ledger["sweep"]>[0]) => l.sweep(i),
};

export const OP_NAMES = Object.keys(HANDLERS) as Op[];

/** The tail marker of a successful flow: `ok`, `op`, and the result's scalar fields and id lists. */
export function markerFor(op: Op, result: Record<string, unknown>): Record<string, unknown> {
  const marker: Record<string, unknown> = { ok: true, op };
  for (const [k, v] of Object.entries(result)) {
    if (v === undefined) continue;
    if (v === null || typeof v !== "object" || (Array.isArray(v) && v.every((x) => typeof x === "string")))
      marker[k] = v;
  }
  return marker;
}

/** The tail marker of a refused or failed flow. */
export function errorMarker(op: string, err: RatchetError): Record<string, unknown> {
  return {
    ok: false,
    op,
    ...(err.isRefusal ? { accepted: false } : {}),
    code: err.code,
    error: err.message,
    exit_status: err.exitStatus,
    ...(err.details.breaker ? { breaker: err.details.breaker } : {}),
    ...(err.details.field ? { field: err.details.field } : {}),
  };
}

/**
 * `raw` without its annotation keys: the original's schemas allow any key starting with `_`
 * (`_comment`), ignored, in every object of every op. Other unknown keys are still refused.
 */
export function withoutAnnotations(raw: unknown): unknown {
  if (Array.isArray(raw)) return raw.some(hasAnnotations) ? raw.map(withoutAnnotations) : raw;
  if (raw === null || typeof raw !== "object" || !hasAnnotations(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw))
    if (!k.startsWith("_") || k === "__proto__") out[k] = withoutAnnotations(v);
  return out;
}

function hasAnnotations(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasAnnotations);
  if (v === null || typeof v !== "object") return false;
  for (const [k, x] of Object.entries(v))
    if ((k.startsWith("_") && k !== "__proto__") || hasAnnotations(x)) return true;
  return false;
}

/** Validates `raw` against the op's input schema and runs the flow. Never throws. */
export async function applyOp(ledger: Ledger, op: Op, raw: unknown, ctx: OpContext = {}): Promise<OpOutcome> {
  try {
    const input = OP_INPUTS[op].parse(withoutAnnotations(raw), "");
    const result = await HANDLERS[op](ledger, input as never, ctx);
    const exitStatus = op === "run-step" ? Number(result.exit_code ?? 0) : 0;
    return { op, ok: true, result, marker: markerFor(op, result), exitStatus };
  } catch (e) {
    const err = toRatchetError(e);
    return { op, ok: false, marker: errorMarker(op, err), exitStatus: err.exitStatus, error: err };
  }
}
