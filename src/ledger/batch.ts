/**
 * `step apply`: many write flows in one process, one result per op, for every edge (the CLI reads
 * JSON lines, HTTP and MCP take an array). A line labelled `"as": "<label>"` lends its result to
 * later lines through `{{label.path}}` references (`{{p.plan_id}}`, `{{p.step_ids.0}}`).
 */
import { RatchetError, toRatchetError } from "../core/index.js";
import { applyOp, errorMarker } from "./dispatch.js";
import type { OpContext } from "./flow.js";
import { OP_NAMES } from "./flows/index.js";
import type { Op } from "./inputs.js";
import type { Ledger } from "./ledger.js";

const LABEL = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const REFERENCE = /\{\{\s*([A-Za-z][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_]+)+)\s*\}\}/g;

/**
 * Replaces `{{label.path}}` in every string of `value` with that part of the result of the earlier
 * line labelled `"as": "label"`: `{{p.plan_id}}`, `{{p.step_ids.0}}` (arrays by index).
 * @throws RatchetError `schema_violation` naming the line and the reference when it resolves to
 * nothing, or to something other than a string or a number.
 */
export function resolveReferences(
  value: unknown,
  results: ReadonlyMap<string, Record<string, unknown>>,
  line: number,
): unknown {
  if (typeof value === "string")
    return value.replace(REFERENCE, (whole: string, label: string, path: string) => {
      const result = results.get(label);
      if (!result)
        throw new RatchetError(
          "schema_violation",
          `line ${line}: ${whole} refers to no earlier line with "as": "${label}" that succeeded`,
          { field: "as" },
        );
      let v: unknown = result;
      for (const key of path.slice(1).split(".")) {
        v =
          v !== null && typeof v === "object" && Object.hasOwn(v, key)
            ? (v as Record<string, unknown>)[key]
            : undefined;
      }
      if (typeof v !== "string" && typeof v !== "number")
        throw new RatchetError(
          "schema_violation",
          `line ${line}: ${whole}: the result of "${label}" has no string or number there (its fields: ${Object.keys(result).join(", ")})`,
          { field: "as" },
        );
      return String(v);
    });
  if (Array.isArray(value)) return value.map((v) => resolveReferences(v, results, line));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, resolveReferences(v, results, line)]),
    );
  return value;
}

/** One applied line: its marker (with `line`), and its status (0, or the failure's exit status). */
export interface BatchLine {
  marker: Record<string, unknown>;
  status: number;
}

/** A batch in progress: apply its lines in order; labels carry results forward. */
export class Batch {
  readonly #labels = new Map<string, Record<string, unknown>>();
  applied = 0;
  failed = 0;
  /** The exit status of the first failure (0 while none failed). */
  status = 0;

  constructor(
    readonly ledger: Ledger,
    readonly ctx: OpContext = {},
  ) {}

  /** Applies one line (`{"op": …, "as"?: …, …input}`), or records `error` for it (a line that did not parse). */
  async apply(line: number, raw: unknown, error?: unknown): Promise<BatchLine> {
    let marker: Record<string, unknown>;
    let status = 0;
    try {
      if (error !== undefined) throw error;
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        throw new RatchetError("schema_violation", `line ${line}: must be a JSON object with an "op" field`, {
          field: "op",
        });
      }
      const { op, as: label, ...input } = raw as Record<string, unknown>;
      if (
        label !== undefined &&
        (typeof label !== "string" || !LABEL.test(label) || this.#labels.has(label))
      ) {
        throw new RatchetError(
          "schema_violation",
          `line ${line}: field \`as\` must be a new label (a letter, then letters, digits, _ or -; got ${JSON.stringify(label)}${typeof label === "string" && this.#labels.has(label) ? ", already used" : ""})`,
          { field: "as" },
        );
      }
      if (typeof op !== "string" || !(OP_NAMES as string[]).includes(op)) {
        throw new RatchetError(
          "schema_violation",
          `line ${line}: field \`op\` must be one of ${OP_NAMES.join(", ")} (got ${JSON.stringify(op)})`,
          { field: "op" },
        );
      }
      const outcome = await applyOp(
        this.ledger,
        op as Op,
        resolveReferences(input, this.#labels, line),
        this.ctx,
      );
      marker = outcome.marker;
      status = outcome.ok ? 0 : outcome.exitStatus;
      if (outcome.ok && typeof label === "string")
        this.#labels.set(label, { ...outcome.result, ...outcome.marker });
    } catch (e) {
      const re = toRatchetError(e);
      marker = errorMarker("apply", re);
      status = re.exitStatus;
    }
    if (status !== 0 || marker.ok === false) {
      this.failed++;
      if (this.status === 0) this.status = status || 1;
    } else this.applied++;
    return { marker: { line, ...marker }, status };
  }

  /** The closing summary line. */
  summary(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { ok: this.failed === 0, op: "apply", applied: this.applied, failed: this.failed, ...extra };
  }
}

/** Applies `ops` in order (stopping at the first failure with `stopOnError`). */
export async function applyBatch(
  ledger: Ledger,
  ops: readonly unknown[],
  opts: { stopOnError?: boolean; ctx?: OpContext } = {},
): Promise<{ lines: Record<string, unknown>[]; summary: Record<string, unknown>; status: number }> {
  const batch = new Batch(ledger, opts.ctx ?? {});
  const lines: Record<string, unknown>[] = [];
  for (let i = 0; i < ops.length; i++) {
    const r = await batch.apply(i + 1, ops[i]);
    lines.push(r.marker);
    if (r.status !== 0 && opts.stopOnError) break;
  }
  return { lines, summary: batch.summary(), status: batch.status };
}
