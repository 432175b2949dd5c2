/**
 * Named limits of the Steps capability. Every bound `workflow/` enforces is a constant here,
 * documented in docs/steps.md.
 */

/** Most steps in one workflow file. */
export const MAX_WORKFLOW_STEPS = 200;

/** Most `files` entries in one step's validation schema. */
export const MAX_VALIDATION_FILES = 20;
/** Most `json_checks` on one file of a validation schema. */
export const MAX_JSON_CHECKS_PER_FILE = 100;
/** Most `db_checks` in one step's validation schema. */
export const MAX_DB_CHECKS = 20;
/** Largest output file validation reads (10 MB); a larger file fails the `size` check. */
export const MAX_OUTPUT_FILE_BYTES = 10 * 1024 * 1024;

/** How many runs `script_metadata.json` keeps in `recent_runs`. */
export const RECENT_RUNS_KEPT = 10;
/** Longest `last_failure.error_snippet` in `script_metadata.json` (it is shown to a model). */
export const ERROR_SNIPPET_MAX_CHARS = 2000;
/** Consecutive failures of a locked script after which `lock_code_stats.needs_review` is set. */
export const LOCKED_FAILURES_BEFORE_REVIEW = 3;
