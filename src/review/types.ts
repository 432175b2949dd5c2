/** The shapes of static review: options in, findings and a report out. */

/** Languages a learned step script may be written in. */
export type ScriptLanguage = "python" | "javascript";

/**
 * A rule: `syntax` (the script does not parse) or one of the rules `R1`…`R13`
 * (see docs/review.md and {@link RULES}).
 */
export type RuleId =
  | "syntax"
  | "R1"
  | "R2"
  | "R3"
  | "R4"
  | "R5"
  | "R6"
  | "R7"
  | "R8"
  | "R9"
  | "R10"
  | "R11"
  | "R12"
  | "R13";

/** `blocking` findings refuse the fast path (and exit 9); `warning` findings are reported only. */
export type Severity = "blocking" | "warning";

/** One problem in a script: which rule, where, what is wrong and what to write instead. */
export interface Finding {
  rule: RuleId;
  /** A stable kebab-case name of the rule, e.g. `writes-outside-output-dir`. */
  id: string;
  severity: Severity;
  /** 1-based line. */
  line: number;
  /** 1-based column (UTF-16 code units, as editors count). */
  column: number;
  /** What is wrong, naming the variable, call or path. */
  message: string;
  /** What to write instead. */
  fix: string;
}

/** Options of {@link reviewScript}. */
export interface ReviewOptions {
  language: ScriptLanguage;
  /**
   * The `VAR_*` / `SECRET_*` variables the workflow declares. A declared variable must be read
   * without a fallback (R2). Default: every `VAR_*` / `SECRET_*` name counts as declared.
   */
  declared?: readonly string[];
  /** Shown in the syntax-error message; not read. */
  filename?: string;
}

/** Options of `reviewFile`: the language comes from the file's extension unless given. */
export interface ReviewFileOptions {
  language?: ScriptLanguage;
  declared?: readonly string[];
}

/** The result of reviewing one script. */
export interface ReviewReport {
  language: ScriptLanguage;
  /** Sorted by line, then column, then rule. */
  findings: Finding[];
  /** Number of blocking findings. */
  blocking: number;
  /** Number of warnings. */
  warnings: number;
  /** True when there is no blocking finding. */
  ok: boolean;
  /** Lines in the script. */
  lines: number;
}
