/**
 * Shared types of the Steps capability (workflows, learned scripts, runs). This file is the
 * contract between the workflow pieces: the schema (`schema.ts`) produces a `Workflow`; mode
 * resolution (`modes.ts`) maps a step to an `ExecutionMode`; validation (`validation.ts`) checks a
 * step's outputs; metadata (`metadata.ts`) records script runs; runs (`runs.ts`, `fast-path.ts`)
 * execute and record.
 */

export const ExecutionMode = {
  /** Plain tool-calling by a model (needs a model). */
  Direct: "direct",
  /** The model writes and runs code for this run only (needs a model). */
  CodeExec: "code_exec",
  /** A saved, reviewed `main.py`/`main.mjs` runs with zero model tokens. */
  LearnCode: "learn_code",
} as const;
export type ExecutionMode = (typeof ExecutionMode)[keyof typeof ExecutionMode];

export type LearningsAccess = "read" | "read-write" | "none";

export interface AgentConfigs {
  use_code_execution_mode?: boolean;
  declared_execution_mode?: ExecutionMode;
  declared_execution_mode_reason?: string;
  lock_code?: boolean;
  learnings_access?: LearningsAccess;
  learning_objective?: string;
}

export interface JsonCheck {
  /** JSONPath: `$.a.b`, `$.items[0].id`, `$.items[*].id`, `$['key with space']`. */
  path: string;
  must_exist?: boolean;
  value_type?: "string" | "number" | "integer" | "boolean" | "array" | "object" | "null";
  min_length?: number;
  max_length?: number;
  pattern?: string;
  min_value?: number;
  max_value?: number;
  consistency_check?: {
    type: "equals" | "greater_than" | "less_than" | "array_length" | "in_array";
    compare_with_path: string;
  };
}

export interface DbCheck {
  /** A SQLite file under the step output folder, opened read-only. */
  file_name: string;
  /** A read-only query (SELECT/WITH only). */
  query: string;
  min_rows?: number;
  max_rows?: number;
}

export interface FileValidation {
  file_name: string;
  must_exist?: boolean;
  json_checks?: JsonCheck[];
}

export interface ValidationSchema {
  files?: FileValidation[];
  db_checks?: DbCheck[];
  /** Opt out of the built-in checks (declared outputs exist and are non-empty; no top-level `error`). */
  skip_builtin_checks?: boolean;
}

export interface WorkflowStep {
  id: string;
  description: string;
  /** Earlier steps whose output folders are passed to the script as argv, in this order. */
  context_dependencies: string[];
  agent_configs: AgentConfigs;
  validation?: ValidationSchema;
  /** Bridge tools the step may use (patterns as `bridge --allow`); unset: every tool of the workspace. */
  allowed_tools?: string[];
  /**
   * Routes of an orchestrator (todo_task) step. A learn_code step with at least one route is an
   * orchestrator: its script delegates work with the `call_sub_agent` custom tool.
   */
  predefined_routes?: PredefinedRoute[];
}

/** One route an orchestrator may delegate to. */
export interface PredefinedRoute {
  id: string;
  description: string;
}

export interface Workflow {
  id: string;
  description?: string;
  /** Declared variables: name (without `VAR_`) → default (undefined = required). Reach scripts as `VAR_<NAME>`. */
  variables: Record<string, { default?: string; description?: string }>;
  /** Declared secrets: names without `SECRET_`. Values from the environment or `.ratchet/secrets` (mode 0600). */
  secrets: string[];
  /** Workflow-level defaults for every step's agent_configs. */
  defaults: AgentConfigs;
  /** Variable groups: name → variable values; a run with `--group G` uses them. */
  groups: Record<string, Record<string, string>>;
  /**
   * Declared by `webhook: true | {secret_env}`: `POST /api/workflows/{id}/trigger` may start it
   * (runs recorded `trigger=webhook`). Absent: the trigger answers 404.
   */
  webhook?: WebhookTrigger;
  /** `schedule:` — a 5-field cron expression; `ratchet worker` enqueues a run (trigger `schedule`) per slot. */
  schedule?: string;
  /** `serial: true` — queued runs of this workflow run one at a time across all workers. */
  serial?: boolean;
  /** `concurrency: N` (1–100) — at most N runs of this workflow running at once across all workers. */
  concurrency?: number;
  steps: WorkflowStep[];
  /** Absolute path of the file it was loaded from. */
  source: string;
}

/** How a webhook trigger is authenticated besides the server's bearer token. */
export interface WebhookTrigger {
  /** The environment variable (else the secrets-file entry) holding the HMAC secret; none: token only. */
  secretEnv?: string;
}

/** The outcome of one workflow step in one run. */
export const StepOutcome = {
  Passed: "passed",
  ScriptFailed: "script_failed",
  ValidationFailed: "validation_failed",
  ScriptAndValidationFailed: "execution_and_validation_failed",
  /** The process could not be started: not counted against the script. */
  HarnessFailed: "harness_failed",
  MissingScript: "missing_script",
  ReviewBlocked: "review_blocked",
  /** `direct` / `code_exec` (or an orchestrator) with no model configured. */
  NeedsModel: "needs_model",
  /** The step's contract changed since its script was saved: rebuild with `ratchet build`. */
  ContractChanged: "contract_changed",
  /** A model-driven step whose model loop failed (provider error, limit hit without outputs). */
  ModelFailed: "model_failed",
  /** A dependency failed, so this step did not run. */
  Skipped: "skipped",
} as const;
export type StepOutcome = (typeof StepOutcome)[keyof typeof StepOutcome];

export interface ValidationIssue {
  file?: string;
  path?: string;
  check: string;
  message: string;
}

export interface ValidationResult {
  ok: boolean;
  issues: ValidationIssue[];
}

/** One entry of `script_metadata.json` → `recent_runs` (the last 10). */
export interface RecentRun {
  timestamp: string;
  success: boolean;
  exit_code: number | null;
  duration_ms: number;
  group_name: string | null;
  run_folder: string;
  failure_reason: "execution_error" | "validation_error" | "execution_and_validation_error" | null;
  /** Stored in full, never truncated. */
  error_summary: string | null;
}

export interface ScriptMetadata {
  step_id: string;
  script_version: number;
  /** sha256 of the saved script bytes (to detect a changed script). */
  script_sha256: string;
  created_at: string;
  last_run_at: string | null;
  relearn_count: number;
  total_runs: number;
  successful_runs: number;
  failed_runs: number;
  recent_runs: RecentRun[];
  group_stats: Record<string, { runs: number; successes: number; failures: number }>;
  duration_stats: {
    min_ms: number | null;
    max_ms: number | null;
    avg_ms: number | null;
    last_ms: number | null;
  };
  last_failure: {
    timestamp: string;
    exit_code: number | null;
    failure_reason: string;
    error_snippet: string;
  } | null;
  /** Positive: consecutive successes; negative: consecutive failures. */
  current_streak: number;
  lock_code_stats: { locked_runs: number; consecutive_locked_failures: number; needs_review: boolean };
}
