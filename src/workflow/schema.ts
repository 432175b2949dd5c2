/**
 * Workflow files: YAML or JSON, parsed with zod at the boundary into a typed {@link Workflow}.
 *
 * Structure (unknown fields, wrong types, enum values, limits) is checked by zod strict objects
 * (`schema-shapes.ts`); the cross-field rules (`schema-rules.ts`) are checked after it. Every
 * problem is reported with the file and the field path, e.g.
 * `flow.yaml: steps[2].agent_configs.declared_execution_mode: must be one of …`.
 */

import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, resolve } from "node:path";
import { parseDocument } from "yaml";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { MAX_INPUT_BYTES } from "../core/limits.js";
import { assertNoForbiddenKeys, decodeUtf8Strict } from "../core/strict-input.js";
import { type Issue, violation, zodIssues } from "./schema-issues.js";
import {
  checkGroups,
  checkSteps,
  checkVariables,
  clean,
  normaliseNames,
  normaliseSecretName,
  WORKFLOW_ID_PATTERN,
} from "./schema-rules.js";
import { workflowSchema } from "./schema-shapes.js";
import type { AgentConfigs, Workflow } from "./types.js";

export {
  normaliseSecretName,
  normaliseVariableName,
  STEP_ID_PATTERN,
  VARIABLE_NAME_PATTERN,
  WORKFLOW_ID_PATTERN,
} from "./schema-rules.js";

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * Validates an already-parsed workflow document.
 * @param raw the YAML/JSON value
 * @param source the file it came from (named in every error; stored resolved as `Workflow.source`)
 * @throws RatchetError `schema_violation` naming the file and every offending field path.
 */
export function parseWorkflow(raw: unknown, source: string): Workflow {
  const parsed = workflowSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    const issues = zodIssues(parsed.error.issues, []);
    // Variables are checked by hand (list or map); report their problems together with the rest.
    if (raw && typeof raw === "object" && "variables" in raw)
      checkVariables((raw as { variables: unknown }).variables, issues);
    throw violation(source, issues);
  }
  const w = parsed.data;
  const issues: Issue[] = [];
  if (!WORKFLOW_ID_PATTERN.test(w.id))
    issues.push({
      path: "id",
      message: `workflow id ${JSON.stringify(w.id)} must match ${WORKFLOW_ID_PATTERN} (kebab-case or snake_case)`,
    });
  if (w.defaults && w.agent_configs)
    issues.push({ path: "agent_configs", message: "is an alias of `defaults`; set only one of them" });
  const variables = checkVariables(w.variables, issues);
  const secrets = normaliseNames(
    (w.secrets ?? []).map((name, i) => ({ name, at: `secrets[${i}]` })),
    normaliseSecretName,
    "secret",
    issues,
  );
  const groups = checkGroups(w.groups, variables, issues);
  const steps = checkSteps(w.steps, issues);
  if (w.schedule !== undefined) {
    const problem = scheduleProblem(w.schedule);
    if (problem) issues.push({ path: "schedule", message: problem });
  }
  if (issues.length > 0) throw violation(source, issues);
  const workflow: Workflow = {
    id: w.id,
    variables,
    secrets,
    defaults: clean(w.defaults ?? w.agent_configs ?? {}) as AgentConfigs,
    groups,
    steps,
    source: resolve(source),
  };
  if (w.description !== undefined) workflow.description = w.description;
  if (w.webhook === true) workflow.webhook = {};
  else if (w.webhook && typeof w.webhook === "object") workflow.webhook = { secretEnv: w.webhook.secret_env };
  if (w.schedule !== undefined) workflow.schedule = w.schedule.trim();
  if (w.serial !== undefined) workflow.serial = w.serial;
  if (w.concurrency !== undefined) {
    if (w.serial === true && w.concurrency !== 1)
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `workflow ${w.id}: serial: true means concurrency 1 (got concurrency: ${w.concurrency})`,
        { field: "concurrency" },
      );
    workflow.concurrency = w.concurrency;
  }
  return workflow;
}

/**
 * Parses the text of a workflow file: JSON when the name ends in `.json` (or, with another
 * extension, when the text starts with `{`), YAML otherwise.
 * @throws RatchetError `malformed_input` naming the file; `schema_violation` as {@link parseWorkflow}.
 */
export function parseWorkflowText(text: string, source: string): Workflow {
  return parseWorkflow(parseDocumentText(text, source), source);
}

function parseDocumentText(text: string, source: string): unknown {
  const value = parseDocumentValue(text, source);
  assertNoForbiddenKeys(value);
  return value;
}

function parseDocumentValue(text: string, source: string): unknown {
  const ext = extname(source).toLowerCase();
  const json = ext === ".json" || (ext !== ".yaml" && ext !== ".yml" && /^\s*\{/.test(text));
  if (json) {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new RatchetError(
        ErrorCode.MalformedInput,
        `${source}: invalid JSON: ${e instanceof Error ? e.message : String(e)}`,
        { file: source },
        { cause: e },
      );
    }
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const err = doc.errors[0];
  if (err)
    throw new RatchetError(ErrorCode.MalformedInput, `${source}: invalid YAML: ${err.message}`, {
      file: source,
      ...(err.linePos?.[0] ? { line: err.linePos[0].line, column: err.linePos[0].col } : {}),
    });
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${source}: invalid YAML: ${e instanceof Error ? e.message : String(e)}`,
      { file: source },
      { cause: e },
    );
  }
}

/**
 * Reads and parses a workflow file.
 * @throws RatchetError `unreadable_input` (missing, a folder, unreadable, larger than
 *   {@link MAX_INPUT_BYTES}); `malformed_input`; `schema_violation`.
 */
export function loadWorkflow(path: string): Workflow {
  const abs = resolve(path);
  let text: string;
  try {
    const st = statSync(abs);
    if (!st.isFile())
      throw new RatchetError(ErrorCode.UnreadableInput, `${path}: not a file`, { file: path });
    if (st.size > MAX_INPUT_BYTES)
      throw new RatchetError(
        ErrorCode.UnreadableInput,
        `${path}: ${st.size} bytes is larger than the ${MAX_INPUT_BYTES}-byte limit of a workflow file`,
        { file: path },
      );
    text = decodeUtf8Strict(readFileSync(abs), path);
  } catch (e) {
    if (e instanceof RatchetError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String(e);
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `${path}: cannot read workflow file: ${why}`,
      { file: path },
      { cause: e },
    );
  }
  return parseWorkflow(parseDocumentText(text, path), abs);
}

/**
 * What is wrong with a `schedule:` value, or undefined: five cron fields
 * (minute hour day-of-month month day-of-week), checked by graphile-worker's own parser (loaded only
 * for a workflow that declares a schedule).
 */
export function scheduleProblem(schedule: string): string | undefined {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === "")
    return `must be a cron expression of 5 fields (minute hour day-of-month month day-of-week), e.g. "0 * * * *" (got ${JSON.stringify(schedule)})`;
  const { parseCronItem } = createRequire(import.meta.url)("graphile-worker/dist/crontab.js") as {
    parseCronItem: (item: { task: string; match: string; identifier: string }, source?: string) => unknown;
  };
  try {
    parseCronItem({ task: "ratchet_schedule", match: fields.join(" "), identifier: "schedule" }, "schedule");
    return undefined;
  } catch (e) {
    return `not a valid cron expression ${JSON.stringify(schedule)}: ${(e as Error).message}`;
  }
}
