/**
 * The structure of a workflow file as zod strict objects: unknown fields, wrong types, enum values
 * and limits. The cross-field rules are in `schema-rules.ts`.
 */
import { z } from "zod";
import { MAX_TEXT_CHARS } from "../core/limits.js";
import {
  MAX_DB_CHECKS,
  MAX_JSON_CHECKS_PER_FILE,
  MAX_VALIDATION_FILES,
  MAX_WORKFLOW_STEPS,
} from "./limits.js";

/** Longest workflow id, step id and variable name. */
export const MAX_ID_CHARS = 100;

const count = z.number().int().nonnegative();
export const scalar = z
  .union([z.string(), z.number(), z.boolean()], { error: "must be a string, number or boolean" })
  .transform((v) => String(v));
export const text = z.string().max(MAX_TEXT_CHARS);

export const agentConfigsSchema = z.strictObject({
  use_code_execution_mode: z.boolean().optional(),
  declared_execution_mode: z.enum(["direct", "code_exec", "learn_code"]).optional(),
  declared_execution_mode_reason: text.optional(),
  lock_code: z.boolean().optional(),
  learnings_access: z.enum(["read", "read-write", "none"]).optional(),
  learning_objective: text.optional(),
});

export const jsonCheckSchema = z.strictObject({
  path: z.string().min(1),
  must_exist: z.boolean().optional(),
  value_type: z.enum(["string", "number", "integer", "boolean", "array", "object", "null"]).optional(),
  min_length: count.optional(),
  max_length: count.optional(),
  pattern: z.string().min(1).optional(),
  min_value: z.number().optional(),
  max_value: z.number().optional(),
  consistency_check: z
    .strictObject({
      type: z.enum(["equals", "greater_than", "less_than", "array_length", "in_array"]),
      compare_with_path: z.string().min(1),
    })
    .optional(),
});

export const fileValidationSchema = z.strictObject({
  file_name: z.string().min(1),
  must_exist: z.boolean().optional(),
  json_checks: z.array(jsonCheckSchema).max(MAX_JSON_CHECKS_PER_FILE).optional(),
});

export const dbCheckSchema = z.strictObject({
  file_name: z.string().min(1),
  query: z.string().min(1),
  min_rows: count.optional(),
  max_rows: count.optional(),
});

export const validationSchema = z.strictObject({
  files: z.array(fileValidationSchema).max(MAX_VALIDATION_FILES).optional(),
  db_checks: z.array(dbCheckSchema).max(MAX_DB_CHECKS).optional(),
  skip_builtin_checks: z.boolean().optional(),
});

export const stepSchema = z.strictObject({
  id: z.string().max(MAX_ID_CHARS),
  description: text,
  context_dependencies: z.array(z.string()).optional(),
  agent_configs: agentConfigsSchema.optional(),
  validation: validationSchema.optional(),
  /** Bridge tools the step may use (`mcp:server/tool`, `mcp:server/*`, `custom:tool`); default all. */
  allowed_tools: z.array(z.string().min(1)).max(100).optional(),
  /** Routes of an orchestrator (todo_task) step: what `call_sub_agent` may delegate to. */
  predefined_routes: z
    .array(z.strictObject({ id: z.string().min(1).max(MAX_ID_CHARS), description: text }))
    .max(50)
    .optional(),
});

export const variableDefSchema = z
  .strictObject({ default: scalar.optional(), description: text.optional() })
  .nullable();
export const variableListSchema = z.array(z.string());
export const variableMapSchema = z.record(z.string(), variableDefSchema);

/**
 * `webhook: true` (the server's bearer token only) or `webhook: {secret_env: NAME}` (also an HMAC
 * signature with the secret in env `NAME` or the secrets file): `POST /api/workflows/{id}/trigger`.
 */
const webhookSchema = z.union([
  z.boolean(),
  z.strictObject({
    secret_env: z
      .string()
      .max(MAX_ID_CHARS)
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name (letters, digits, _)"),
  }),
]);

export const workflowSchema = z.strictObject({
  id: z.string().max(MAX_ID_CHARS),
  description: text.optional(),
  variables: z.unknown().optional(),
  secrets: z.array(z.string()).optional(),
  defaults: agentConfigsSchema.optional(),
  agent_configs: agentConfigsSchema.optional(),
  groups: z.record(z.string(), z.record(z.string(), scalar)).optional(),
  webhook: webhookSchema.optional(),
  /** A 5-field cron expression (`ratchet worker` enqueues a run per slot; see src/queue/schedule.ts). */
  schedule: z.string().max(200).optional(),
  /** At most one run of the workflow at a time across all workers (a graphile-worker queue). */
  serial: z.boolean().optional(),
  /** At most this many runs of the workflow at once across all workers (the claim counts them). */
  concurrency: z.number().int().min(1).max(100).optional(),
  steps: z.array(stepSchema).min(1).max(MAX_WORKFLOW_STEPS),
});

export type RawWorkflow = z.infer<typeof workflowSchema>;
