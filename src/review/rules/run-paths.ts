/**
 * R1 hardcoded run/execution paths and R5 long hardcoded absolute paths: judged on every maximal
 * string or path expression, after folding concatenations, f-strings, templates and joins.
 */
import type { ScriptFacts, StringFact } from "../facts.js";
import type { Finding } from "../types.js";
import { describe, flatten, type Val } from "../values.js";
import { byLanguage, finding, OUTPUT_DIR_EXPR } from "./catalog.js";

const URL_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** `execution/<run>/…` or `execution/` followed by a value review cannot see (`"execution/" + run`). */
const RUN_PATH = /(^|[\\/])execution[\\/]([^\\/\s\u0000]+[\\/]|\u0000)/;
const WORKSPACE_DIR = /(^|[\\/])\.ratchet([\\/]|$)/;

/** True when the value names a run folder: `execution/<run>/…`. */
export function isExecutionPath(v: Val): boolean {
  const flat = flatten(v);
  return !URL_PREFIX.test(flat) && RUN_PATH.test(flat);
}

/** True when the value names a run folder or the workspace's own folder (`.ratchet/`). */
export function isRunPath(v: Val): boolean {
  const flat = flatten(v);
  return !URL_PREFIX.test(flat) && (RUN_PATH.test(flat) || WORKSPACE_DIR.test(flat));
}

/** Folders that hold people's and machines' files: a path under them names one machine. */
const USER_ROOTS = new Set(["home", "Users", "root"]);
const DEEP_ROOTS = new Set([
  "tmp",
  "var",
  "opt",
  "mnt",
  "srv",
  "data",
  "workspace",
  "workspaces",
  "private",
  "Volumes",
  "media",
  "app",
  "work",
  "scratch",
  "shared",
  "nfs",
]);

/**
 * True for `/home/<user>/…`, `/Users/<user>`, `/root/…`, `C:\Users\…` and deep `/tmp/a/b`-like
 * paths. `~/…` is not: it names the current user's home wherever the script runs.
 */
export function isLongAbsolutePath(v: Val): boolean {
  const flat = flatten(v);
  if (URL_PREFIX.test(flat)) return false;
  const win = /^[A-Za-z]:[\\/]/.test(flat);
  if (!win && !flat.startsWith("/")) return false;
  const parts = flat
    .replace(/^[A-Za-z]:/, "")
    .split(/[\\/]+/)
    .filter((c) => c !== "");
  const first = parts[0];
  if (first === undefined || /\s/.test(first)) return false;
  if (USER_ROOTS.has(first)) return parts.length >= 2;
  if (win) return parts.length >= 2;
  return DEEP_ROOTS.has(first) && parts.length >= 3;
}

/**
 * Keeps the facts matching `test`, dropping one whose value was read through another match
 * (a constant flagged where it is defined is not flagged again where it is used).
 */
export function matchingFacts(facts: readonly StringFact[], test: (v: Val) => boolean): StringFact[] {
  const matched = facts.filter((f) => test(f.value));
  const ids = new Set(matched.map((f) => f.at.node));
  return matched.filter((f) => !f.value.via.some((id) => id !== f.at.node && ids.has(id)));
}

export function checkRunPaths(facts: ScriptFacts): Finding[] {
  const out = outputHint(facts);
  return matchingFacts(facts.strings, isRunPath).map((f) =>
    finding(
      "R1",
      "blocking",
      f.at,
      `hardcoded run path "${describe(f.value)}": run folders change on every run`,
      `build paths from ${out} for this step's files, and take dependency outputs from ${byLanguage(facts.language, "sys.argv[1:]", "process.argv.slice(2)")}`,
    ),
  );
}

export function checkAbsolutePaths(facts: ScriptFacts): Finding[] {
  const out = outputHint(facts);
  return matchingFacts(facts.strings, isLongAbsolutePath).map((f) =>
    finding(
      "R5",
      "blocking",
      f.at,
      `hardcoded absolute path "${describe(f.value)}" only exists on one machine`,
      `derive the path from ${out} (outputs), ${byLanguage(facts.language, "sys.argv[1:]", "process.argv.slice(2)")} (dependency outputs) or a declared VAR_* variable`,
    ),
  );
}

const outputHint = (facts: ScriptFacts) => OUTPUT_DIR_EXPR[facts.language];
