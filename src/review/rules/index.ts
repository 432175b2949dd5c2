/**
 * Runs every rule over a script's facts and returns the findings, de-duplicated and sorted.
 * Pure: each rule is a function of the facts (and the declared variables).
 */
import type { ScriptFacts } from "../facts.js";
import type { Finding, RuleId } from "../types.js";
import { checkBrowserRefs } from "./browser-refs.js";
import { checkDynamicCode } from "./dynamic-code.js";
import { checkEnvFallbacks } from "./env-fallbacks.js";
import { checkAbsolutePaths, checkRunPaths } from "./run-paths.js";
import { checkJsonResults, checkShortcuts } from "./shortcuts.js";
import { checkDependencyPaths, checkSiblingPaths } from "./sibling-paths.js";
import { checkWrites } from "./writes.js";

const ORDER: readonly RuleId[] = [
  "syntax",
  "R1",
  "R2",
  "R3",
  "R4",
  "R5",
  "R6",
  "R7",
  "R8",
  "R9",
  "R10",
  "R11",
  "R12",
  "R13",
];

/** Sorts by line, column, then rule order. */
export function sortFindings(findings: Finding[]): Finding[] {
  return findings.sort(
    (a, b) => a.line - b.line || a.column - b.column || ORDER.indexOf(a.rule) - ORDER.indexOf(b.rule),
  );
}

/** Every rule over `facts`. `declared`: the declared VAR_/SECRET_ names, or null for "all of them". */
export function runRules(facts: ScriptFacts, declared: ReadonlySet<string> | null): Finding[] {
  const all = [
    ...checkRunPaths(facts),
    ...checkEnvFallbacks(facts, declared),
    ...checkSiblingPaths(facts),
    ...checkAbsolutePaths(facts),
    ...checkWrites(facts),
    ...checkDependencyPaths(facts),
    ...checkShortcuts(facts),
    ...checkBrowserRefs(facts),
    ...checkDynamicCode(facts),
    ...checkJsonResults(facts),
  ];
  // One finding per rule and position: two facts about the same call say the same thing.
  const seen = new Set<string>();
  const unique = all.filter((f) => {
    const key = `${f.rule}:${f.line}:${f.column}:${f.severity}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return sortFindings(unique);
}
