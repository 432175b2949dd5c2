/**
 * R6 writes whose target is not derived from STEP_OUTPUT_DIR and R8 writes into the folders Ratchet
 * manages (`knowledgebase/`, `learnings/`). The target's provenance comes from the front end's
 * evaluation (assignments, joins, `Path / "x"`, f-strings, templates are followed).
 */
import type { FileOpFact, ScriptFacts } from "../facts.js";
import type { Finding, ScriptLanguage } from "../types.js";
import {
  componentsAfterRoot,
  describe,
  escapesRoot,
  flatten,
  type RootKind,
  rootOf,
  type Val,
} from "../values.js";
import { finding, OUTPUT_DIR_EXPR } from "./catalog.js";

const MANAGED_DIR = /(^|[\\/])(knowledgebase|learnings)([\\/]|$)/;

/** True when the path stays under STEP_OUTPUT_DIR. */
export function isUnderOutput(v: Val): boolean {
  return rootOf(v).kind === "output" && !escapesRoot(v);
}

/** True when the path points into `knowledgebase/` or `learnings/` outside the step's own output. */
export function isManagedDir(v: Val): boolean {
  return !isUnderOutput(v) && MANAGED_DIR.test(flatten(v));
}

/** Roots whose writes are reported as warnings: review cannot tell, or the place is scratch space. */
const UNCERTAIN_ROOTS: ReadonlySet<RootKind> = new Set(["param", "unknown", "temp", "execution"]);

/** Where a path that is not under STEP_OUTPUT_DIR points, for the message. */
function where(v: Val): string {
  const root = rootOf(v);
  if (escapesRoot(v) && (root.kind === "output" || root.kind === "execution"))
    return `a folder above ${root.kind === "output" ? "STEP_OUTPUT_DIR" : "STEP_EXECUTION_DIR"}`;
  switch (root.kind) {
    case "relative":
      return "a path relative to the working folder";
    case "absolute":
      return "a fixed absolute path";
    case "cwd":
      return "the working folder";
    case "home":
      return "the home folder";
    case "argv":
      return "a dependency's folder from the command line (another step's output)";
    case "env":
      return `under $${root.name}`;
    case "temp":
      return "a temporary folder: files there are neither kept nor validated";
    case "execution":
      return "under STEP_EXECUTION_DIR: fine for working files, but step outputs belong under STEP_OUTPUT_DIR";
    case "param":
      return `the parameter ${root.name}: review cannot tell where callers point it`;
    default:
      return "a path review cannot follow";
  }
}

function fixFor(language: ScriptLanguage, target: Val): string {
  const name =
    componentsAfterRoot(target)
      .filter((c) => c !== ".." && !c.includes("\u0000"))
      .pop() ?? "result.json";
  const out = OUTPUT_DIR_EXPR[language];
  const example = language === "python" ? `os.path.join(${out}, "${name}")` : `path.join(${out}, "${name}")`;
  return `build the target from ${out}, e.g. ${example}`;
}

/** Writing to these discards or prints: not a file. */
const DISCARD = /^\/dev\/(null|stdout|stderr|tty)$/;

function writeFinding(language: ScriptLanguage, op: FileOpFact): Finding | undefined {
  const t = op.target;
  if (DISCARD.test(flatten(t))) return undefined;
  if (isManagedDir(t)) {
    return finding(
      "R8",
      "blocking",
      op.at,
      `${op.api} writes "${describe(t)}", inside a folder Ratchet manages (knowledgebase/ or learnings/)`,
      `only Ratchet writes there; ${fixFor(language, t)}`,
    );
  }
  if (isUnderOutput(t)) return undefined;
  const root = rootOf(t).kind;
  // Climbing out of STEP_EXECUTION_DIR is certain to leave the step; climbing out of a value
  // review cannot follow says nothing more than the value itself.
  const unsure = UNCERTAIN_ROOTS.has(root) && !(root === "execution" && escapesRoot(t));
  const severity = !op.certain || unsure ? "warning" : "blocking";
  const verb = op.certain ? "writes" : "may write (its mode is not a literal)";
  const suffix = unsure ? "" : ", not under STEP_OUTPUT_DIR";
  return finding(
    "R6",
    severity,
    op.at,
    `${op.api} ${verb} "${describe(t)}": ${where(t)}${suffix}`,
    fixFor(language, t),
  );
}

export function checkWrites(facts: ScriptFacts): Finding[] {
  const out: Finding[] = [];
  for (const op of facts.fileOps) {
    if (op.op !== "write") continue;
    const f = writeFinding(facts.language, op);
    if (f) out.push(f);
  }
  return out;
}
