/**
 * Where a run writes in the test workspaces (`<ws>/.ratchet/` with workflows under
 * `<ws>/workflows/<id>`): the run home of src/workflow/layout.ts, never the workflow's folder.
 */
import { basename, join, resolve } from "node:path";

/** `<ws>/.ratchet/runs` for a workflow folder `<ws>/workflows/<id>`. */
export function runsOf(workflowHome: string): string {
  return resolve(workflowHome, "..", "..", ".ratchet", "runs");
}

/**
 * `<ws>/.ratchet/scripts/<workflow-id>/<step-id>`: the run history folder of a saved script (the
 * workflow id defaults to the folder's name, as in the fixtures).
 */
export function historyOf(workflowHome: string, stepId: string, workflowId = basename(workflowHome)): string {
  return join(resolve(workflowHome, "..", "..", ".ratchet", "scripts"), workflowId, stepId);
}
