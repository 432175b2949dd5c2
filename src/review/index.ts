/**
 * `review/`: static review of learned step scripts (`main.py` via tree-sitter, `main.mjs` via
 * acorn). Structured findings with fixes; a lint before the fast path, not the security boundary
 * (run-time write scope is). See ARCHITECTURE.md and docs/review.md.
 */

export { cachedReviewer, REVIEW_ENGINE_REVISION, type Reviewer, reviewCacheKey } from "./cache.js";
export { formatReport } from "./format.js";
export { MAX_SCRIPT_BYTES } from "./limits.js";
/** The Python parser and its plain tree, shared with the provenance node source. */
export { parsePython } from "./python/parser.js";
export type { PyNode } from "./python/tree.js";
export { countLines, reviewScript } from "./review.js";
export { languageOf, reviewFile } from "./review-file.js";
export type { RuleInfo } from "./rules/catalog.js";
export { RULES } from "./rules/catalog.js";
export type {
  Finding,
  ReviewFileOptions,
  ReviewOptions,
  ReviewReport,
  RuleId,
  ScriptLanguage,
  Severity,
} from "./types.js";
