/**
 * `reviewScript`: parse a learned step script, describe it as facts, run the rules, count.
 * Parsing is the only asynchronous part (the Python grammar loads once, lazily).
 */
import { ErrorCode, RatchetError, utf8Length } from "../core/index.js";
import type { ScriptFacts } from "./facts.js";
import { javascriptFacts } from "./js/facts.js";
import { parseJavaScript } from "./js/parse.js";
import { MAX_SCRIPT_BYTES } from "./limits.js";
import { pythonFacts } from "./python/facts.js";
import { parsePython } from "./python/parser.js";
import { findSyntaxError } from "./python/tree.js";
import { finding, RULES } from "./rules/catalog.js";
import { runRules } from "./rules/index.js";
import type { Finding, ReviewOptions, ReviewReport, ScriptLanguage } from "./types.js";

/** Lines in `source` (a final newline does not start another line). */
export function countLines(source: string): number {
  if (source === "") return 0;
  let n = 1;
  for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) n++;
  return source.endsWith("\n") ? n - 1 : n;
}

/** Builds the report from findings. */
export function toReport(language: ScriptLanguage, findings: Finding[], lines: number): ReviewReport {
  const blocking = findings.filter((f) => f.severity === "blocking").length;
  return { language, findings, blocking, warnings: findings.length - blocking, ok: blocking === 0, lines };
}

function syntaxFinding(line: number, column: number, what: string, filename: string | undefined): Finding {
  return finding(
    "syntax",
    "blocking",
    { line, column, node: -1 },
    `${filename ?? "the script"} does not parse: ${what}`,
    `fix the syntax error; ${RULES.syntax.title}, so none of its other rules were checked`,
  );
}

type Parsed = { facts: ScriptFacts } | { error: Finding };

async function analyse(source: string, opts: ReviewOptions): Promise<Parsed> {
  if (opts.language === "python") {
    const root = await parsePython(source);
    const bad = findSyntaxError(root, source);
    if (bad)
      return {
        error: syntaxFinding(bad.row + 1, bad.column + 1, `syntax error: ${bad.message}`, opts.filename),
      };
    return { facts: pythonFacts(root, source) };
  }
  const parsed = parseJavaScript(source);
  if ("error" in parsed) {
    const e = parsed.error;
    return { error: syntaxFinding(e.line, e.column, `syntax error: ${e.message}`, opts.filename) };
  }
  return { facts: javascriptFacts(parsed.program, source) };
}

/**
 * Reviews one script. A script that does not parse gets a single blocking `syntax` finding.
 * @throws RatchetError `invalid_value` for an unknown language or a script over {@link MAX_SCRIPT_BYTES}.
 */
export async function reviewScript(source: string, opts: ReviewOptions): Promise<ReviewReport> {
  if (opts.language !== "python" && opts.language !== "javascript") {
    throw new RatchetError(ErrorCode.InvalidValue, `unknown script language: ${String(opts.language)}`, {
      field: "language",
    });
  }
  const bytes = utf8Length(source);
  if (bytes > MAX_SCRIPT_BYTES) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `${opts.filename ?? "script"} is ${bytes} bytes; review accepts at most ${MAX_SCRIPT_BYTES}`,
      { field: "source" },
    );
  }
  const lines = countLines(source);
  const result = await analyse(source, opts);
  if ("error" in result) return toReport(opts.language, [result.error], lines);
  const declared = opts.declared ? new Set(opts.declared) : null;
  return toReport(opts.language, runRules(result.facts, declared), lines);
}
