/** The write-flow commands: read the JSON input, apply the op, print the result and the tail marker. */
import { hostname } from "node:os";
import { RatchetError, toRatchetError } from "../core/index.js";
import { killAllRunning } from "../exec/index.js";
import { applyOp, cleanStaleRunDirs, errorMarker, OP_NAMES, type Op } from "../ledger/index.js";
import { type GlobalOptions, withContext } from "./context.js";
import { err, out, parseJsonInput, parseJsonOrYaml, readInputText } from "./io.js";

/** Reads `source` (path or `-`), applies `op`, prints result + marker; returns the exit status. */
export async function runWriteFlow(
  op: Op,
  source: string | undefined,
  opts: GlobalOptions,
  extra: { allowEmpty?: boolean } = {},
): Promise<number> {
  let raw: unknown;
  try {
    if (source === undefined) {
      if (!extra.allowEmpty)
        throw new RatchetError("usage", `${op}: missing input (a JSON file path, or - for stdin)`, {
          field: "input",
        });
      raw = {};
    } else {
      const text = readInputText(source);
      if (source !== "-" && !INPUT_EXTENSION.test(source))
        throw new RatchetError(
          "usage",
          `input file ${source} must end in .json, .yaml or .yml (or give - for stdin)`,
          { field: "input", file: source },
        );
      raw =
        op === "publish-plan" || /\.ya?ml$/i.test(source)
          ? await parseJsonOrYaml(text, source)
          : parseJsonInput(text, source);
    }
  } catch (e) {
    return reportError(op, toRatchetError(e));
  }
  try {
    return await withContext(opts, async (ctx) => {
      const controller = new AbortController();
      const onSignal = (sig: NodeJS.Signals) => {
        err(`ratchet: ${sig} received: cancelling ${op}`);
        controller.abort();
      };
      const isRun = op === "run-step";
      if (isRun) {
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
      }
      try {
        if (op === "sweep") cleanStaleRunDirs(ctx.workspace.dir);
        const outcome = await applyOp(ctx.ledger, op, raw, {
          cwd: process.cwd(),
          run: {
            signal: controller.signal,
            tmpDir: ctx.workspace.dir,
            onOutput: (chunk) => process.stderr.write(chunk),
          },
        });
        if (!outcome.ok && outcome.error) return reportError(op, outcome.error);
        const notice = outcome.result?.notice;
        if (typeof notice === "string") err(`ratchet: ${op}: notice: ${notice}`);
        out(JSON.stringify(outcome.result, null, 2));
        out(JSON.stringify(outcome.marker));
        return outcome.exitStatus;
      } finally {
        if (isRun) {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          await killAllRunning();
        }
      }
    });
  } catch (e) {
    return reportError(op, toRatchetError(e));
  }
}

/**
 * Prints a refused or failed flow: a soft refusal's pretty body (`"accepted": false`, `reason`,
 * `breaker`) first, as the original did, then the compact marker last; stderr gets one line
 * starting with `❌`.
 */
export function reportError(op: string, e: RatchetError): number {
  err(`❌ ratchet: ${op}: ${e.message}`);
  if (e.isRefusal)
    out(
      JSON.stringify(
        {
          accepted: false,
          reason: e.message,
          code: e.code,
          ...(e.details.breaker ? { breaker: e.details.breaker } : {}),
        },
        null,
        2,
      ),
    );
  out(JSON.stringify(errorMarker(op, e)));
  return e.exitStatus;
}

/** Input files of the write flows: JSON or YAML by extension (the original's rule), or `-`. */
const INPUT_EXTENSION = /\.(json|ya?ml)$/i;

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

/** `ratchet step apply <ops.jsonl|->`: many write flows in one process, one result line per op. */
export async function runBatch(
  source: string,
  opts: GlobalOptions & { stopOnError?: boolean },
): Promise<number> {
  let text: string;
  try {
    text = readInputText(source);
  } catch (e) {
    return reportError("apply", toRatchetError(e));
  }
  return withContext(opts, async (ctx) => {
    let status = 0;
    let applied = 0;
    let failed = 0;
    const results = new Map<string, Record<string, unknown>>();
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const line = (lines[i] ?? "").trim();
      if (!line || line.startsWith("#")) continue;
      let marker: Record<string, unknown>;
      let lineStatus = 0;
      try {
        const parsed = parseJsonInput(line, `${source === "-" ? "stdin" : source} line ${i + 1}`);
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
          throw new RatchetError(
            "schema_violation",
            `line ${i + 1}: must be a JSON object with an "op" field`,
            { field: "op" },
          );
        }
        const { op, as: label, ...raw } = parsed as Record<string, unknown>;
        if (label !== undefined && (typeof label !== "string" || !LABEL.test(label) || results.has(label))) {
          throw new RatchetError(
            "schema_violation",
            `line ${i + 1}: field \`as\` must be a new label (a letter, then letters, digits, _ or -; got ${JSON.stringify(label)}${typeof label === "string" && results.has(label) ? ", already used" : ""})`,
            { field: "as" },
          );
        }
        if (typeof op !== "string" || !(OP_NAMES as string[]).includes(op)) {
          throw new RatchetError(
            "schema_violation",
            `line ${i + 1}: field \`op\` must be one of ${OP_NAMES.join(", ")} (got ${JSON.stringify(op)})`,
            { field: "op" },
          );
        }
        const input = resolveReferences(raw, results, i + 1);
        const outcome = await applyOp(ctx.ledger, op as Op, input, {
          cwd: process.cwd(),
          run: { tmpDir: ctx.workspace.dir },
        });
        marker = outcome.ok ? { ...outcome.marker } : outcome.marker;
        lineStatus = outcome.ok ? 0 : outcome.exitStatus;
        if (outcome.ok && typeof label === "string")
          results.set(label, { ...(outcome.result as Record<string, unknown>), ...outcome.marker });
      } catch (e) {
        const re = toRatchetError(e);
        marker = errorMarker("apply", re);
        lineStatus = re.exitStatus;
      }
      out(JSON.stringify({ line: i + 1, ...marker }));
      if (lineStatus !== 0 || marker.ok === false) {
        failed++;
        if (status === 0) status = lineStatus || 1;
        if (opts.stopOnError) break;
      } else applied++;
    }
    out(JSON.stringify({ ok: failed === 0, op: "apply", applied, failed, host: hostname() }));
    return status;
  });
}
