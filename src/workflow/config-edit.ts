/**
 * `ratchet workflow config`: sets a step's execution mode in the workflow file, in place. YAML is
 * edited through the `yaml` Document API so comments and layout survive; JSON is rewritten with a
 * 2-space indent. The new text is parsed as a workflow before it is written (a change that would
 * make the file invalid writes nothing), and written atomically (temp file + rename).
 */
import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { isMap, isSeq, parseDocument } from "yaml";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { writeFileAtomic } from "./metadata.js";
import { parseWorkflowText } from "./schema.js";
import { type AgentConfigs, ExecutionMode, type Workflow } from "./types.js";

export interface ModeChange {
  mode: ExecutionMode;
  reason: string;
}

/** The agent_configs fields a mode change sets. Pure. */
export function modeFields(
  change: ModeChange,
): Required<
  Pick<AgentConfigs, "declared_execution_mode" | "use_code_execution_mode" | "declared_execution_mode_reason">
> {
  return {
    declared_execution_mode: change.mode,
    // learn_code and code_exec force code execution on; direct turns it off so a workflow
    // default cannot turn the step back into code_exec.
    use_code_execution_mode: change.mode !== ExecutionMode.Direct,
    declared_execution_mode_reason: change.reason,
  };
}

function isJsonFile(path: string, text: string): boolean {
  const ext = extname(path).toLowerCase();
  return ext === ".json" || (ext !== ".yaml" && ext !== ".yml" && /^\s*\{/.test(text));
}

function stepNotFound(path: string, stepId: string): RatchetError {
  return new RatchetError(ErrorCode.StepNotFound, `${path}: no step ${stepId} in this workflow`, {
    stepId,
    file: path,
  });
}

/** Returns the new text of a workflow file with the step's mode fields set. Pure. */
export function editStepMode(path: string, text: string, stepId: string, change: ModeChange): string {
  const fields = modeFields(change);
  if (isJsonFile(path, text)) {
    const doc = JSON.parse(text) as { steps?: { id?: string; agent_configs?: Record<string, unknown> }[] };
    const step = doc.steps?.find((s) => s.id === stepId);
    if (!step) throw stepNotFound(path, stepId);
    step.agent_configs = { ...(step.agent_configs ?? {}), ...fields };
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
  const doc = parseDocument(text);
  const steps = doc.get("steps");
  if (!isSeq(steps)) throw stepNotFound(path, stepId);
  const index = steps.items.findIndex((item) => isMap(item) && item.get("id") === stepId);
  if (index < 0) throw stepNotFound(path, stepId);
  for (const [k, v] of Object.entries(fields)) doc.setIn(["steps", index, "agent_configs", k], v);
  return doc.toString();
}

/**
 * Sets a step's mode in the workflow file and returns the workflow as loaded from the new text.
 * @throws RatchetError `step_not_found`; `schema_violation` when the result would be invalid.
 */
export function writeStepMode(wf: Workflow, stepId: string, change: ModeChange): Workflow {
  const text = readFileSync(wf.source, "utf8");
  const next = editStepMode(wf.source, text, stepId, change);
  const parsed = parseWorkflowText(next, wf.source);
  writeFileAtomic(wf.source, next);
  return parsed;
}
