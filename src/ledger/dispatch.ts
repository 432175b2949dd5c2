/**
 * Applies a write flow by its marker op name, for every edge (CLI commands, `step apply`, HTTP,
 * MCP): the flow's schema parses the input, its function runs. `FLOWS` (flows/index.ts) is the
 * one list of flows.
 */
import { type RatchetError, toRatchetError } from "../core/index.js";
import type { OpContext } from "./flow.js";
import { FLOW_BY_OP, OP_NAMES } from "./flows/index.js";
import type { Op } from "./inputs.js";
import type { Ledger } from "./ledger.js";

export type { OpContext } from "./flow.js";
export { OP_NAMES };

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

/** The tail marker of a successful flow: `ok`, `op`, and the result's scalar fields and id lists. */
export function markerFor(
  op: Op,
  result: Record<string, unknown>,
  keys?: readonly string[],
): Record<string, unknown> {
  const marker: Record<string, unknown> = { ok: true, op };
  for (const [k, v] of Object.entries(result)) {
    if (keys && !keys.includes(k)) continue;
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
    ...(Array.isArray(err.details.unknown_keys) ? { unknown_keys: err.details.unknown_keys } : {}),
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
    const flow = FLOW_BY_OP[op];
    const input = flow.input.parse(withoutAnnotations(raw), "");
    const result = await flow.run(ledger, input, ctx);
    const exitStatus = op === "run-step" ? Number(result.exit_code ?? 0) : 0;
    return { op, ok: true, result, marker: markerFor(op, result, flow.marker), exitStatus };
  } catch (e) {
    const err = toRatchetError(e);
    return { op, ok: false, marker: errorMarker(op, err), exitStatus: err.exitStatus, error: err };
  }
}
