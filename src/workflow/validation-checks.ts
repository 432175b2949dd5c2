/**
 * The pure half of output validation: evaluating JSON checks against a parsed document, row-count
 * bounds, the read-only query rule and safe file names. No I/O; `validation.ts` reads the files and
 * calls these.
 */
import { parsePath, queryPath } from "./jsonpath.js";
import type { DbCheck, JsonCheck, ValidationIssue } from "./types.js";

const PREVIEW_CHARS = 80;

/** A short, single-line rendering of a JSON value for an issue message. */
export function preview(v: unknown): string {
  let s: string;
  try {
    s = v === undefined ? "undefined" : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  return s.length > PREVIEW_CHARS ? `${s.slice(0, PREVIEW_CHARS)}…` : s;
}

/** `string`, `integer`, `number`, `boolean`, `array`, `object` or `null`. */
export function jsonTypeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function matchesType(v: unknown, type: NonNullable<JsonCheck["value_type"]>): boolean {
  switch (type) {
    case "null":
      return v === null;
    case "array":
      return Array.isArray(v);
    case "object":
      return typeof v === "object" && v !== null && !Array.isArray(v);
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    default:
      return typeof v === type;
  }
}

/** Structural equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  return (
    ak.length === Object.keys(bo).length && ak.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]))
  );
}

function lengthOf(v: unknown): number | undefined {
  if (typeof v === "string") return [...v].length;
  if (Array.isArray(v)) return v.length;
  return undefined;
}

/**
 * Evaluates one JSON check against a parsed document. A path that matches several values (`[*]`)
 * applies the check to each of them.
 */
export function evaluateJsonCheck(doc: unknown, check: JsonCheck, file: string): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const add = (path: string, name: string, message: string) =>
    issues.push({ file, path, check: name, message });

  let result: ReturnType<typeof queryPath>;
  try {
    result = queryPath(doc, check.path);
  } catch (e) {
    add(check.path, "path", e instanceof Error ? e.message : String(e));
    return issues;
  }
  if (!result.found) {
    if (check.must_exist) add(check.path, "must_exist", "not found");
    return issues;
  }

  let regex: RegExp | undefined;
  if (check.pattern !== undefined) {
    try {
      regex = new RegExp(check.pattern);
    } catch (e) {
      add(check.path, "pattern", `pattern ${JSON.stringify(check.pattern)} does not compile: ${String(e)}`);
      return issues;
    }
  }

  result.values.forEach((value, i) => {
    const at = result.paths[i] ?? check.path;
    const type = jsonTypeOf(value);
    if (check.value_type !== undefined && !matchesType(value, check.value_type)) {
      add(at, "value_type", `expected ${check.value_type}, got ${type} ${preview(value)}`);
      return; // the remaining checks would only repeat the type mismatch
    }
    if (check.min_length !== undefined || check.max_length !== undefined) {
      const len = lengthOf(value);
      if (len === undefined) {
        add(
          at,
          check.min_length !== undefined ? "min_length" : "max_length",
          `expected a string or an array, got ${type}`,
        );
      } else {
        if (check.min_length !== undefined && len < check.min_length)
          add(at, "min_length", `length ${len} is below the minimum ${check.min_length}`);
        if (check.max_length !== undefined && len > check.max_length)
          add(at, "max_length", `length ${len} is above the maximum ${check.max_length}`);
      }
    }
    if (regex) {
      if (typeof value !== "string")
        add(at, "pattern", `expected a string to match /${check.pattern}/, got ${type}`);
      else if (!regex.test(value)) add(at, "pattern", `${preview(value)} does not match /${check.pattern}/`);
    }
    if (check.min_value !== undefined || check.max_value !== undefined) {
      if (typeof value !== "number" || !Number.isFinite(value)) {
        add(
          at,
          check.min_value !== undefined ? "min_value" : "max_value",
          `expected a number, got ${type} ${preview(value)}`,
        );
      } else {
        if (check.min_value !== undefined && value < check.min_value)
          add(at, "min_value", `${value} is below the minimum ${check.min_value}`);
        if (check.max_value !== undefined && value > check.max_value)
          add(at, "max_value", `${value} is above the maximum ${check.max_value}`);
      }
    }
    if (check.consistency_check) {
      const problem = consistencyProblem(doc, value, check.consistency_check);
      if (problem) add(at, "consistency_check", problem);
    }
  });
  return issues;
}

function consistencyProblem(
  doc: unknown,
  value: unknown,
  cc: NonNullable<JsonCheck["consistency_check"]>,
): string | undefined {
  let other: ReturnType<typeof queryPath>;
  let wildcard: boolean;
  try {
    wildcard = parsePath(cc.compare_with_path).some((s) => s.kind === "wildcard");
    other = queryPath(doc, cc.compare_with_path);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  if (!other.found) return `${cc.type}: compare_with_path ${cc.compare_with_path} not found`;
  // A wildcard compare path stands for the list of values it selects.
  const target = wildcard ? other.values : other.values[0];
  const where = `${cc.compare_with_path} (${preview(target)})`;
  switch (cc.type) {
    case "equals":
      return jsonEqual(value, target) ? undefined : `equals: ${preview(value)} is not equal to ${where}`;
    case "greater_than":
    case "less_than": {
      const comparable =
        (typeof value === "number" && typeof target === "number") ||
        (typeof value === "string" && typeof target === "string");
      if (!comparable)
        return `${cc.type}: cannot compare ${jsonTypeOf(value)} with ${jsonTypeOf(target)} at ${cc.compare_with_path}`;
      const ok = cc.type === "greater_than" ? value > target : value < target;
      return ok ? undefined : `${cc.type}: ${preview(value)} is not ${cc.type.replace("_", " ")} ${where}`;
    }
    case "array_length":
      if (!Array.isArray(value)) return `array_length: expected an array, got ${jsonTypeOf(value)}`;
      if (typeof target !== "number") return `array_length: ${where} is not a number`;
      return value.length === target ? undefined : `array_length: length ${value.length} is not ${where}`;
    case "in_array":
      if (!Array.isArray(target)) return `in_array: ${where} is not an array`;
      return target.some((t) => jsonEqual(t, value))
        ? undefined
        : `in_array: ${preview(value)} is not in ${where}`;
    default:
      return `unknown consistency_check type ${JSON.stringify((cc as { type: unknown }).type)}`;
  }
}

/** Evaluates every JSON check of one file against its parsed document. */
export function checkJsonDocument(
  file: string,
  doc: unknown,
  checks: readonly JsonCheck[],
): ValidationIssue[] {
  return checks.flatMap((c) => evaluateJsonCheck(doc, c, file));
}

/** Checks a db_check's row count (`rows`: rows counted, capped at `max_rows + 1`). */
export function checkDbRows(check: DbCheck, rows: number): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const base = { file: check.file_name, path: check.query };
  if (check.min_rows !== undefined && rows < check.min_rows)
    out.push({
      ...base,
      check: "min_rows",
      message: `the query returned ${rows} row(s), fewer than min_rows ${check.min_rows}`,
    });
  if (check.max_rows !== undefined && rows > check.max_rows)
    out.push({
      ...base,
      check: "max_rows",
      message: `the query returned more than max_rows ${check.max_rows} row(s)`,
    });
  return out;
}

/**
 * How many rows to read before a db_check's answer is known: `max_rows + 1`, else `min_rows`, and at
 * least one (a check without bounds only proves the query runs).
 */
export function rowsNeeded(check: DbCheck): number {
  if (check.max_rows !== undefined) return check.max_rows + 1;
  return Math.max(1, check.min_rows ?? 0);
}

/** Skips whitespace and SQL comments from `i`. */
function skipSpace(sql: string, i: number): number {
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i]!)) i++;
    if (sql.startsWith("--", i)) {
      const nl = sql.indexOf("\n", i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (sql.startsWith("/*", i)) {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else {
      return i;
    }
  }
}

/**
 * True when `sql` is one statement that starts with `SELECT` or `WITH` (comments and a trailing `;`
 * allowed). The database is also opened read-only, so this is a first refusal, not the boundary.
 */
export function isReadOnlyQuery(sql: string): boolean {
  let i = skipSpace(sql, 0);
  const head = /^(select|with)\b/i.exec(sql.slice(i));
  if (!head) return false;
  i += head[0].length;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf(close, j);
        if (k < 0) return false; // unterminated quote
        if (close !== "]" && sql[k + 1] === close) {
          j = k + 2; // doubled quote escape
          continue;
        }
        i = k + 1;
        break;
      }
      continue;
    }
    if (sql.startsWith("--", i) || sql.startsWith("/*", i)) {
      i = skipSpace(sql, i);
      continue;
    }
    if (c === ";") {
      let j = i + 1;
      for (;;) {
        j = skipSpace(sql, j);
        if (sql[j] === ";") j++;
        else break;
      }
      return j >= sql.length;
    }
    i++;
  }
  return true;
}

/**
 * Why a file name from a validation schema is not a safe name inside the output folder, or
 * `undefined` when it is: relative, no `..` segment, no NUL.
 */
export function safeRelativeName(name: string): string | undefined {
  if (name.length === 0) return "file name is empty";
  if (name.includes("\0")) return "file name contains a NUL byte";
  if (name.startsWith("/") || name.startsWith("\\") || /^[A-Za-z]:/.test(name))
    return `file name ${JSON.stringify(name)} must be relative to the step output folder`;
  if (name.split(/[\\/]/).some((seg) => seg === ".."))
    return `file name ${JSON.stringify(name)} must stay inside the step output folder (no \`..\`)`;
  return undefined;
}

/**
 * The built-in "no top-level error" check of a JSON output: an object whose `error` key holds
 * anything but `null` or `false` reports a failure.
 */
export function topLevelErrorIssue(file: string, doc: unknown): ValidationIssue | undefined {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return undefined;
  if (!Object.hasOwn(doc, "error")) return undefined;
  const err = (doc as Record<string, unknown>).error;
  if (err === null || err === false) return undefined;
  return {
    file,
    path: "$.error",
    check: "builtin_no_error_key",
    message: `the output has a top-level "error": ${preview(err)}`,
  };
}
