/**
 * Output validation of a step: reads the files a validation schema names under the step output
 * folder and applies the checks (the pure evaluation is in `validation-checks.ts`), then the cheap
 * built-in checks unless the schema opts out with `skip_builtin_checks`.
 */
import { type Dirent, readdirSync, readFileSync, realpathSync, type Stats, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import Database from "better-sqlite3";
import { MAX_OUTPUT_FILE_BYTES } from "./limits.js";
import type { DbCheck, ValidationIssue, ValidationResult, ValidationSchema } from "./types.js";
import {
  checkDbRows,
  checkJsonDocument,
  isReadOnlyQuery,
  rowsNeeded,
  safeRelativeName,
  topLevelErrorIssue,
} from "./validation-checks.js";

export interface ValidateOutputsOptions {
  /** Output files the step declares (relative to the output folder); built-in: they exist and are non-empty. */
  declaredOutputs?: string[];
}

/** The working-copy folder inside a step output folder; not an output. */
const CODE_DIR = "code";

interface Located {
  abs: string;
  stat: Stats | undefined;
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Resolves `name` inside `outputDir`, refusing names (or symlinks) that lead outside it.
 * Returns an issue message instead when refused.
 */
function locate(outputDir: string, name: string): Located | string {
  const why = safeRelativeName(name);
  if (why) return why;
  const root = resolve(outputDir);
  const abs = resolve(root, name);
  if (abs !== root && !abs.startsWith(root + sep))
    return `file name ${JSON.stringify(name)} leaves the output folder`;
  const stat = statSync(abs, { throwIfNoEntry: false });
  if (stat) {
    try {
      const realRoot = realpathSync(root);
      const real = realpathSync(abs);
      if (real !== realRoot && !real.startsWith(realRoot + sep))
        return `${name} is a link to ${relative(realRoot, real)}, outside the output folder`;
    } catch (e) {
      return `${name}: ${errText(e)}`;
    }
  }
  return { abs, stat };
}

function readJson(abs: string): { ok: true; doc: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, doc: JSON.parse(readFileSync(abs, "utf8")) };
  } catch (e) {
    return { ok: false, error: errText(e) };
  }
}

/**
 * Validates the outputs of a step.
 *
 * Per file of `schema.files`: `must_exist`; size ≤ {@link MAX_OUTPUT_FILE_BYTES}; parses JSON when it
 * has `json_checks` and evaluates each. Per `schema.db_checks`: opens the SQLite file read-only, runs
 * the single SELECT/WITH query and checks the row bounds. Built-in checks (unless
 * `schema.skip_builtin_checks`): files named with `must_exist` and `declaredOutputs` exist and are
 * non-empty; without any declared file there is at least one output besides `code/`; no top-level
 * `*.json` object in the output folder has an `error` key (other than `null`/`false`).
 *
 * Never throws for a problem of the outputs: every problem is an issue naming file, path and check.
 */
export function validateOutputs(
  outputDir: string,
  schema: ValidationSchema | undefined,
  opts: ValidateOutputsOptions = {},
): ValidationResult {
  const issues: ValidationIssue[] = [];
  const builtins = !schema?.skip_builtin_checks;
  const parsed = new Map<string, unknown>();

  for (const file of schema?.files ?? []) {
    const name = file.file_name;
    const at = locate(outputDir, name);
    if (typeof at === "string") {
      issues.push({ file: name, check: "file_name", message: at });
      continue;
    }
    if (!at.stat) {
      if (file.must_exist)
        issues.push({ file: name, check: "must_exist", message: `${name} does not exist` });
      continue;
    }
    if (!at.stat.isFile()) {
      issues.push({ file: name, check: "must_exist", message: `${name} is not a regular file` });
      continue;
    }
    if (at.stat.size > MAX_OUTPUT_FILE_BYTES) {
      issues.push({
        file: name,
        check: "size",
        message: `${name} is ${at.stat.size} bytes, larger than the ${MAX_OUTPUT_FILE_BYTES}-byte limit`,
      });
      continue;
    }
    if (builtins && file.must_exist && at.stat.size === 0)
      issues.push({ file: name, check: "builtin_non_empty", message: `${name} is empty` });
    const checks = file.json_checks ?? [];
    if (checks.length === 0) continue;
    const json = readJson(at.abs);
    if (!json.ok) {
      issues.push({ file: name, check: "json_parse", message: `${name} is not valid JSON: ${json.error}` });
      continue;
    }
    parsed.set(at.abs, json.doc);
    issues.push(...checkJsonDocument(name, json.doc, checks));
  }

  for (const check of schema?.db_checks ?? []) issues.push(...runDbCheck(outputDir, check));

  if (builtins) issues.push(...builtinChecks(outputDir, schema, opts, parsed));
  return { ok: issues.length === 0, issues };
}

function runDbCheck(outputDir: string, check: DbCheck): ValidationIssue[] {
  const name = check.file_name;
  const base = { file: name, path: check.query, check: "db_check" };
  const at = locate(outputDir, name);
  if (typeof at === "string") return [{ ...base, check: "file_name", message: at }];
  if (!at.stat?.isFile()) return [{ ...base, message: `${name} does not exist` }];
  if (!isReadOnlyQuery(check.query))
    return [{ ...base, message: `${name}: only a single SELECT or WITH query is allowed` }];
  let db: Database.Database | undefined;
  try {
    db = new Database(at.abs, { readonly: true, fileMustExist: true });
    const stmt = db.prepare(check.query);
    if (!stmt.reader || !stmt.readonly)
      return [{ ...base, message: `${name}: the query does not only read (refused)` }];
    const needed = rowsNeeded(check);
    let rows = 0;
    for (const _row of stmt.iterate()) {
      rows++;
      if (rows >= needed) break;
    }
    return checkDbRows(check, rows);
  } catch (e) {
    return [{ ...base, message: `${name}: ${errText(e)}` }];
  } finally {
    db?.close();
  }
}

function hasOutputFile(dir: string, top: boolean): boolean {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const e of entries) {
    if (top && e.name === CODE_DIR && e.isDirectory()) continue;
    if (e.isFile()) return true;
  }
  return entries.some(
    (e) => e.isDirectory() && !(top && e.name === CODE_DIR) && hasOutputFile(join(dir, e.name), false),
  );
}

function builtinChecks(
  outputDir: string,
  schema: ValidationSchema | undefined,
  opts: ValidateOutputsOptions,
  parsed: Map<string, unknown>,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const inSchema = new Set((schema?.files ?? []).map((f) => f.file_name));
  for (const name of opts.declaredOutputs ?? []) {
    if (inSchema.has(name)) {
      const f = schema?.files?.find((x) => x.file_name === name);
      if (f?.must_exist) continue; // already checked above
    }
    const at = locate(outputDir, name);
    if (typeof at === "string") {
      issues.push({ file: name, check: "file_name", message: at });
    } else if (!at.stat?.isFile()) {
      issues.push({ file: name, check: "builtin_exists", message: `declared output ${name} does not exist` });
    } else if (at.stat.size === 0) {
      issues.push({ file: name, check: "builtin_non_empty", message: `declared output ${name} is empty` });
    }
  }

  const declaresAny =
    (schema?.files?.length ?? 0) > 0 ||
    (schema?.db_checks?.length ?? 0) > 0 ||
    (opts.declaredOutputs?.length ?? 0) > 0;
  if (!declaresAny && !hasOutputFile(outputDir, true))
    issues.push({
      check: "builtin_has_output",
      message: `the output folder ${outputDir} has no file besides ${CODE_DIR}/`,
    });

  let entries: Dirent[] = [];
  try {
    entries = readdirSync(outputDir, { withFileTypes: true });
  } catch {
    // a missing folder was reported above or by the declared files
  }
  for (const e of entries) {
    if (!e.isFile() || !e.name.toLowerCase().endsWith(".json")) continue;
    const abs = join(outputDir, e.name);
    let doc: unknown;
    if (parsed.has(resolve(abs))) doc = parsed.get(resolve(abs));
    else {
      const st = statSync(abs, { throwIfNoEntry: false });
      if (!st || st.size > MAX_OUTPUT_FILE_BYTES) continue;
      const json = readJson(abs);
      if (!json.ok) continue; // not this check's business: json_checks report parse errors
      doc = json.doc;
    }
    const issue = topLevelErrorIssue(e.name, doc);
    if (issue) issues.push(issue);
  }
  return issues;
}
