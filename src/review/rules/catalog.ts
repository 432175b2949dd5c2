/**
 * The rules of static review: a stable kebab-case id and a one-line title each, and the helper that
 * makes a finding. Rule ids and kebab ids are printed and stored: never renamed.
 */
import type { At } from "../facts.js";
import type { Finding, RuleId, ScriptLanguage, Severity } from "../types.js";

export interface RuleInfo {
  rule: RuleId;
  /** Stable kebab-case name. */
  id: string;
  /** What the rule is about, for people. */
  title: string;
}

/** Every rule, in order. */
export const RULES: Readonly<Record<RuleId, RuleInfo>> = {
  syntax: { rule: "syntax", id: "syntax-error", title: "the script does not parse" },
  R1: { rule: "R1", id: "hardcoded-run-path", title: "hardcoded run/execution path" },
  R2: {
    rule: "R2",
    id: "declared-var-fallback",
    title: "fallback value for a declared VAR_/SECRET_ variable",
  },
  R3: { rule: "R3", id: "runtime-var-fallback", title: "fallback value for a variable Ratchet always sets" },
  R4: { rule: "R4", id: "sibling-step-path", title: "path climbing out of the step folder" },
  R5: { rule: "R5", id: "hardcoded-absolute-path", title: "long hardcoded absolute path" },
  R6: { rule: "R6", id: "writes-outside-output-dir", title: "write not under STEP_OUTPUT_DIR" },
  R7: { rule: "R7", id: "hand-built-dependency-path", title: "dependency output read by a hand-built path" },
  R8: { rule: "R8", id: "writes-managed-dir", title: "write into knowledgebase/ or learnings/" },
  R9: { rule: "R9", id: "hardcoded-shortcut", title: "hardcoded cache, shortcut or early exit" },
  R10: { rule: "R10", id: "ephemeral-browser-ref", title: "ephemeral browser element ref" },
  R11: {
    rule: "R11",
    id: "dynamic-code",
    title: "code run from text at run time (eval, exec, compile, Function)",
  },
  R12: {
    rule: "R12",
    id: "dynamic-lookup",
    title: "module, global or builtin reached by a computed name",
  },
  R13: { rule: "R13", id: "hardcoded-json-result", title: "a JSON text literal written as the output" },
};

/** A finding of `rule` at `at`. */
export function finding(rule: RuleId, severity: Severity, at: At, message: string, fix: string): Finding {
  return { rule, id: RULES[rule].id, severity, line: at.line, column: at.column, message, fix };
}

/** Picks the Python or the JavaScript wording of a fix. */
export const byLanguage = (language: ScriptLanguage, python: string, javascript: string): string =>
  language === "python" ? python : javascript;

/** How a script reads STEP_OUTPUT_DIR, per language. */
export const OUTPUT_DIR_EXPR: Readonly<Record<ScriptLanguage, string>> = {
  python: 'os.environ["STEP_OUTPUT_DIR"]',
  javascript: "process.env.STEP_OUTPUT_DIR",
};
