/**
 * Where a workflow keeps its files. The folder of the workflow file is its home:
 *
 * ```
 * <home>/
 *   flow.yaml
 *   learnings/{step-id}/main.py | main.mjs     the saved script (main.py preferred)
 *   learnings/{step-id}/diffs/                  unified diffs between saved versions
 *   learnings/{step-id}/script_metadata.json    run history of the script
 *   execution/{run-id}/{step-id}/               the step's outputs in that run (STEP_OUTPUT_DIR)
 *   execution/{run-id}/{step-id}/code/          the working copy of the script (STEP_EXECUTION_DIR)
 * ```
 *
 * Run ids are `run-<YYYYMMDDHHMMSS>-<6 hex>` (UTC). Every function refuses ids that could leave
 * the home folder.
 */
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { compactStamp } from "../core/clock.js";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { SCRIPT_METADATA_FILE } from "./metadata.js";
import { STEP_ID_PATTERN } from "./schema.js";
import type { Workflow } from "./types.js";

/** `run-20260101120000-a1b2c3`. */
export const RUN_ID_PATTERN = /^run-\d{14}-[0-9a-f]{6}$/;

/** The part of a {@link Workflow} the layout needs. */
export type WorkflowPaths = Pick<Workflow, "source">;

export interface SavedScript {
  path: string;
  language: "python" | "javascript";
}

function checkStepId(stepId: string): string {
  if (!STEP_ID_PATTERN.test(stepId))
    throw new RatchetError(ErrorCode.InvalidValue, `not a step id: ${JSON.stringify(stepId)}`, {
      field: "step_id",
    });
  return stepId;
}

function checkRunId(runId: string): string {
  if (!RUN_ID_PATTERN.test(runId))
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `not a run id: ${JSON.stringify(runId)} (expected run-YYYYMMDDHHMMSS-xxxxxx)`,
      {
        field: "run_id",
      },
    );
  return runId;
}

export function isRunId(s: string): boolean {
  return RUN_ID_PATTERN.test(s);
}

/**
 * A new run id for time `nowMs`.
 * @param hex six lowercase hex digits (random by default; tests pass their own)
 */
export function newRunId(nowMs: number, hex: string = randomBytes(3).toString("hex")): string {
  return checkRunId(`run-${compactStamp(nowMs)}-${hex}`);
}

/** The folder of the workflow file. */
export function workflowHome(wf: WorkflowPaths): string {
  return dirname(wf.source);
}

/** `<home>/learnings/{step-id}`. @throws `invalid_value` for a malformed step id. */
export function learningsDir(wf: WorkflowPaths, stepId: string): string {
  return join(workflowHome(wf), "learnings", checkStepId(stepId));
}

/** `<home>/learnings/{step-id}/diffs`. */
export function diffsDir(wf: WorkflowPaths, stepId: string): string {
  return join(learningsDir(wf, stepId), "diffs");
}

/** `<home>/learnings/{step-id}/script_metadata.json`. */
export function metadataPath(wf: WorkflowPaths, stepId: string): string {
  return join(learningsDir(wf, stepId), SCRIPT_METADATA_FILE);
}

/** The saved script of a step: `main.py` if it is a file, else `main.mjs`, else `undefined`. */
export function savedScript(wf: WorkflowPaths, stepId: string): SavedScript | undefined {
  const dir = learningsDir(wf, stepId);
  const candidates: SavedScript[] = [
    { path: join(dir, "main.py"), language: "python" },
    { path: join(dir, "main.mjs"), language: "javascript" },
  ];
  return candidates.find((c) => statSync(c.path, { throwIfNoEntry: false })?.isFile());
}

/** `<home>/execution/{run-id}`. @throws `invalid_value` for a malformed run id. */
export function runDir(wf: WorkflowPaths, runId: string): string {
  return join(workflowHome(wf), "execution", checkRunId(runId));
}

/** `<home>/execution/{run-id}/{step-id}`: the step's output folder in that run. */
export function stepOutputDir(wf: WorkflowPaths, runId: string, stepId: string): string {
  return join(runDir(wf, runId), checkStepId(stepId));
}

/** `<home>/execution/{run-id}/{step-id}/code`: the working copy of the script in that run. */
export function stepCodeDir(wf: WorkflowPaths, runId: string, stepId: string): string {
  return join(stepOutputDir(wf, runId, stepId), "code");
}
