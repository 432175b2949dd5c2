/**
 * Where a workflow's files live. The folder of the workflow file is its home and holds what the
 * Builder learned (committed with the workflow); everything a run writes lives in the run's home
 * ({@link RunHome}, by default under the workspace's `.ratchet/`), so running a workflow inside a
 * clone never changes the clone:
 *
 * ```
 * <home>/                                       the workflow's folder (read-only to runs)
 *   flow.yaml
 *   learnings/{step-id}/main.py | main.mjs      the saved script (main.py preferred)
 *   learnings/{step-id}/contract.json           the step's contract when it was saved
 *   learnings/{step-id}/diffs/                  unified diffs between saved versions
 *
 * <workspace>/.ratchet/runs/                    RunHome.runs
 *   {run-id}/{step-id}/                         the step's outputs in that run (STEP_OUTPUT_DIR)
 *   {run-id}/{step-id}/code/                    the working copy of the script (STEP_EXECUTION_DIR)
 * <workspace>/.ratchet/scripts/                 RunHome.scripts
 *   {workflow-id}/{step-id}/script_metadata.json  run history of the saved script
 * ```
 *
 * Every path of a run is computed from an explicit {@link RunHome}: a worker running a workflow
 * from a read-only bundle passes its own. Run ids are `run-<YYYYMMDDHHMMSS>-<6 hex>` (UTC). Every
 * function refuses ids that could leave their folder.
 */
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { compactStamp } from "../core/clock.js";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { SCRIPT_METADATA_FILE } from "./metadata.js";
import { STEP_ID_PATTERN, WORKFLOW_ID_PATTERN } from "./schema.js";
import type { Workflow } from "./types.js";

/** `run-20260101120000-a1b2c3`. */
export const RUN_ID_PATTERN = /^run-\d{14}-[0-9a-f]{6}$/;

/** The part of a {@link Workflow} the layout needs. */
export type WorkflowPaths = Pick<Workflow, "source">;

/**
 * Where a run writes: its step folders and the saved scripts' run history. Never inside a
 * workflow's folder (the fast path's sandbox lets a script write its own output folder only).
 */
export interface RunHome {
  /** `{run-id}/{step-id}/` of every run (outputs and working copies). */
  runs: string;
  /** `{workflow-id}/{step-id}/script_metadata.json`: the run history of each saved script. */
  scripts: string;
  /**
   * Where answers that outlive a run are remembered (the real `python3`'s prefixes:
   * python-memo.ts). Never a read or write root of a step. Unset: nothing is remembered.
   */
  cache?: string | undefined;
}

/**
 * The run home of a workspace: `<workspace>/.ratchet/runs`, `<workspace>/.ratchet/scripts` and
 * `<workspace>/.ratchet/cache`.
 */
export function runHomeOf(workspaceDir: string): RunHome {
  return {
    runs: join(workspaceDir, "runs"),
    scripts: join(workspaceDir, "scripts"),
    cache: join(workspaceDir, "cache"),
  };
}

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

function checkWorkflowId(id: string): string {
  if (!WORKFLOW_ID_PATTERN.test(id))
    throw new RatchetError(ErrorCode.InvalidValue, `not a workflow id: ${JSON.stringify(id)}`, {
      field: "workflow_id",
    });
  return id;
}

/**
 * `<run home>/scripts/{workflow-id}/{step-id}`: the folder of a saved script's run history.
 * @throws `invalid_value` for a malformed workflow or step id.
 */
export function historyDir(home: RunHome, wf: Pick<Workflow, "id">, stepId: string): string {
  return join(home.scripts, checkWorkflowId(wf.id), checkStepId(stepId));
}

/** `<run home>/scripts/{workflow-id}/{step-id}/script_metadata.json`. */
export function metadataPath(home: RunHome, wf: Pick<Workflow, "id">, stepId: string): string {
  return join(historyDir(home, wf, stepId), SCRIPT_METADATA_FILE);
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

/** `<run home>/runs/{run-id}`. @throws `invalid_value` for a malformed run id. */
export function runDir(home: RunHome, runId: string): string {
  return join(home.runs, checkRunId(runId));
}

/** `<run home>/runs/{run-id}/{step-id}`: the step's output folder in that run. */
export function stepOutputDir(home: RunHome, runId: string, stepId: string): string {
  return join(runDir(home, runId), checkStepId(stepId));
}

/** `<run home>/runs/{run-id}/{step-id}/code`: the working copy of the script in that run. */
export function stepCodeDir(home: RunHome, runId: string, stepId: string): string {
  return join(stepOutputDir(home, runId, stepId), "code");
}
