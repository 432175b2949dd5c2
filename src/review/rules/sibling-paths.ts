/**
 * R4 paths that climb out of the step folder (`../other-step/`, `os.path.join(out, "..", …)`,
 * `Path(out).parent`) and R7 dependency outputs read by a hand-built path instead of the
 * command-line arguments Ratchet passes (`sys.argv[1:]`, `process.argv.slice(2)`).
 */
import type { ScriptFacts } from "../facts.js";
import type { Finding } from "../types.js";
import { describe, escapesRoot, flatten, reachesSibling, rootOf, type Val } from "../values.js";
import { byLanguage, finding } from "./catalog.js";
import { isExecutionPath, matchingFacts } from "./run-paths.js";

/** Roots a climb is judged from; a climb out of an unknown value or a parameter is not judged. */
const JUDGED_ROOTS = new Set(["output", "execution", "relative", "cwd", "home", "env", "argv", "temp"]);

/** True when the value climbs above its root: a path API value with `..`, or a `../` in text. */
export function climbsOut(v: Val): boolean {
  if (!JUDGED_ROOTS.has(rootOf(v).kind)) return false;
  if (!v.path && !/(^|[\\/])\.\.[\\/]/.test(flatten(v))) return false;
  return escapesRoot(v);
}

/** True when a read target names another step's folder by hand. */
export function isHandBuiltDependency(v: Val): boolean {
  if (isExecutionPath(v)) return true;
  return JUDGED_ROOTS.has(rootOf(v).kind) && rootOf(v).kind !== "argv" && reachesSibling(v);
}

const argvOf = (facts: ScriptFacts) => byLanguage(facts.language, "sys.argv[1:]", "process.argv.slice(2)");

export function checkSiblingPaths(facts: ScriptFacts): Finding[] {
  return matchingFacts(facts.strings, climbsOut).map((f) =>
    finding(
      "R4",
      "blocking",
      f.at,
      `path "${describe(f.value)}" climbs out of the step folder with ".."`,
      `stay inside the step: write under STEP_OUTPUT_DIR, and read other steps' outputs from the paths in ${argvOf(facts)}`,
    ),
  );
}

export function checkDependencyPaths(facts: ScriptFacts): Finding[] {
  return facts.fileOps
    .filter((op) => op.op === "read" && isHandBuiltDependency(op.target))
    .map((op) =>
      finding(
        "R7",
        "blocking",
        op.at,
        `${op.api} reads "${describe(op.target)}", another step's output found by a hand-built path`,
        `Ratchet passes each dependency's output folder as a command-line argument: read ${argvOf(facts)} instead`,
      ),
    );
}
