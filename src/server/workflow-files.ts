/** Finding a workflow file from a path the client names, and the workflows the server knows. */
import { existsSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { loadWorkflow, type Workflow } from "../workflow/index.js";

const WORKFLOW_FILES = ["workflow.yaml", "workflow.yml", "workflow.json"];

/**
 * Loads a workflow from a file or a folder holding `workflow.yaml|yml|json`; relative paths resolve
 * against `root` (the workspace's folder).
 * @throws RatchetError `not_found` naming `field`; the workflow's schema errors.
 */
export function openWorkflowAt(root: string, path: string, field = "workflow"): Workflow {
  const abs = isAbsolute(path) ? path : resolve(root, path);
  if (!existsSync(abs))
    throw new RatchetError(ErrorCode.NotFound, `workflow ${path} not found: no such file or folder`, {
      field,
    });
  if (statSync(abs).isDirectory()) {
    const found = WORKFLOW_FILES.map((f) => join(abs, f)).find((p) => existsSync(p));
    if (!found)
      throw new RatchetError(
        ErrorCode.NotFound,
        `workflow folder ${path} holds no ${WORKFLOW_FILES.join(", ")}`,
        {
          field,
        },
      );
    return loadWorkflow(found);
  }
  return loadWorkflow(abs);
}
