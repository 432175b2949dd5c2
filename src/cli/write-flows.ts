/** The write-flow commands: read the JSON input, apply the op, print the result and the tail marker. */
import { hostname } from "node:os";
import { RatchetError, toRatchetError } from "../core/index.js";
import { killAllRunning } from "../exec/index.js";
import { applyOp, Batch, cleanStaleRunDirs, errorMarker, FLOW_BY_OP, type Op } from "../ledger/index.js";
import { type GlobalOptions, type LedgerContext, withLedgerContext } from "./context.js";
import { parseFlowArgs } from "./flow-args.js";
import { err, out, parseJsonInput, parseJsonOrYaml, readInputText, stdinIsTTY } from "./io.js";

/**
 * A write-flow command line: `args` is one input file (or `-`), or the fields as flags
 * (`<step_id> --summary "…"`, generated from the flow's schema; see flow-args.ts).
 */
export async function runFlowCommand(op: Op, args: readonly string[], opts: FlowOptions): Promise<number> {
  const flow = FLOW_BY_OP[op];
  let parsed: ReturnType<typeof parseFlowArgs>;
  try {
    parsed = parseFlowArgs(flow, args);
  } catch (e) {
    return reportError(op, toRatchetError(e));
  }
  if ("source" in parsed) return runWriteFlow(op, parsed.source, opts);
  if ("empty" in parsed)
    return runWriteFlow(op, undefined, opts, { allowEmpty: flow.optionalInput === true });
  return runWriteFlow(op, undefined, opts, { raw: parsed.raw });
}

/**
 * Options of a write-flow command: the global ones, or an already open `context` (the daemon keeps
 * its workspace's store open across requests; the flow then runs on it and leaves it open).
 */
export type FlowOptions = GlobalOptions & { context?: LedgerContext };

/** Reads `source` (path or `-`), applies `op`, prints result + marker; returns the exit status. */
export async function runWriteFlow(
  op: Op,
  source: string | undefined,
  opts: FlowOptions,
  extra: { allowEmpty?: boolean; raw?: Record<string, unknown> } = {},
): Promise<number> {
  let raw: unknown;
  try {
    if (extra.raw !== undefined) raw = extra.raw;
    else if (source === undefined) {
      if (!extra.allowEmpty)
        throw new RatchetError(
          "usage",
          `${op}: missing input (a JSON/YAML file path, - for stdin, or the fields as flags)`,
          {
            field: "input",
          },
        );
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
  const { context, ...global } = opts;
  const withContext = <T>(fn: (ctx: LedgerContext) => Promise<T>): Promise<T> =>
    context ? fn(context) : withLedgerContext(global, fn);
  try {
    return await withContext(async (ctx) => {
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
        if (op === "sweep") await cleanStaleRunDirs(ctx.workspace.dir);
        const outcome = await applyOp(ctx.ledger, op, raw, {
          cwd: process.cwd(),
          interactive: stdinIsTTY(),
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
  return withLedgerContext(opts, async (ctx) => {
    const batch = new Batch(ctx.ledger, { cwd: process.cwd(), run: { tmpDir: ctx.workspace.dir } });
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const line = (lines[i] ?? "").trim();
      if (!line || line.startsWith("#")) continue;
      let parsed: unknown;
      let error: unknown;
      try {
        parsed = parseJsonInput(line, `${source === "-" ? "stdin" : source} line ${i + 1}`);
      } catch (e) {
        error = e;
      }
      const r = await batch.apply(i + 1, parsed, error);
      out(JSON.stringify(r.marker));
      if (r.status !== 0 && opts.stopOnError) break;
    }
    out(JSON.stringify(batch.summary({ host: hostname() })));
    return batch.status;
  });
}
