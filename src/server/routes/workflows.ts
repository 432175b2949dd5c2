/**
 * Learned scripts: the workflows the server knows (from the run tables and `--workflow`), each
 * step's mode and saved script, the script's source, metadata (run history, streak), promotion
 * evidence, and its diffs between saved versions. File names come from listing the folder, never
 * from the request: a name that is not in the listing is 404, whatever it contains.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, sep } from "node:path";
import { ErrorCode, RatchetError } from "../../core/index.js";
import {
  diffsDir,
  historyDir,
  readMetadata,
  resolveMode,
  runHomeOf,
  STEP_ID_PATTERN,
  savedScript,
  type Workflow,
} from "../../workflow/index.js";
import type { RouteGroup } from "../app.js";
import type { ServerContext } from "../context.js";
import { MAX_FILE_BYTES, MAX_PAGE_SIZE } from "../limits.js";
import { ServerQueries } from "../queries.js";
import { openWorkflowAt } from "../workflow-files.js";

const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}$/;

/** Reads a file found by listing `dir`, refusing links that leave it. @throws `not_found`. */
export function readListedFile(dir: string, name: string, what: string): string {
  const names = existsSync(dir) ? readdirSync(dir) : [];
  if (!SAFE_NAME.test(name) || !names.includes(name))
    throw new RatchetError(ErrorCode.NotFound, `${what} ${JSON.stringify(name)} not found`, {
      field: "name",
    });
  const file = join(dir, name);
  const real = realpathSync(file);
  if (!real.startsWith(realpathSync(dir) + sep))
    throw new RatchetError(ErrorCode.NotFound, `${what} ${JSON.stringify(name)} not found`, {
      field: "name",
    });
  const st = statSync(real);
  if (!st.isFile() || st.size > MAX_FILE_BYTES)
    throw new RatchetError(ErrorCode.NotFound, `${what} ${JSON.stringify(name)} is not a readable file`, {
      field: "name",
    });
  return readFileSync(real, "utf8");
}

/** A workflow the server knows, by id. @throws `not_found` naming `workflow_id`. */
export function findWorkflow(ctx: ServerContext, q: ServerQueries, id: string): Workflow {
  for (const p of ctx.workflows) {
    const wf = openWorkflowAt(ctx.workspace.root, p);
    if (wf.id === id) return wf;
  }
  const path = q.workflowPath(id);
  if (!path) throw new RatchetError(ErrorCode.NotFound, `workflow ${id} not found`, { field: "workflow_id" });
  return openWorkflowAt(ctx.workspace.root, path, "workflow_id");
}

function requireStep(wf: Workflow, stepId: string) {
  const step = STEP_ID_PATTERN.test(stepId) ? wf.steps.find((s) => s.id === stepId) : undefined;
  if (!step)
    throw new RatchetError(
      ErrorCode.StepNotFound,
      `workflow ${wf.id} has no step ${JSON.stringify(stepId)}`,
      {
        field: "step_id",
      },
    );
  return step;
}

function diffList(wf: Workflow, stepId: string) {
  const dir = diffsDir(wf, stepId);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => SAFE_NAME.test(n))
    .map((name) => {
      const st = statSync(join(dir, name));
      return { name, bytes: st.size, modified_at: st.mtime.toISOString() };
    })
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
}

/** The workflows the server knows: `--workflow` ones, then those of the run tables (bounded). */
export function knownWorkflows(
  ctx: ServerContext,
  q: ServerQueries,
): { workflow_id: string; workflow_path: string; last_run_at: string | null }[] {
  const seen = new Map<string, { workflow_id: string; workflow_path: string; last_run_at: string | null }>();
  for (const p of ctx.workflows) {
    const wf = openWorkflowAt(ctx.workspace.root, p);
    seen.set(wf.id, { workflow_id: wf.id, workflow_path: wf.source, last_run_at: null });
  }
  for (const r of q.workflows(MAX_PAGE_SIZE)) seen.set(r.workflow_id, r);
  return [...seen.values()];
}

/**
 * A step's learned script: mode, language, source, metadata, diffs and promotion evidence.
 * @throws `not_found` (workflow), `step_not_found`.
 */
export function scriptDetail(ctx: ServerContext, q: ServerQueries, workflowId: string, stepId: string) {
  const wf = findWorkflow(ctx, q, workflowId);
  const step = requireStep(wf, stepId);
  const script = savedScript(wf, step.id);
  return {
    workflow_id: wf.id,
    step_id: step.id,
    mode: resolveMode(step, wf.defaults).mode,
    language: script?.language ?? null,
    source: script ? readFileSync(script.path, "utf8") : null,
    metadata: readMetadata(historyDir(runHomeOf(ctx.workspace.dir), wf, step.id)) ?? null,
    diffs: diffList(wf, step.id),
    evidence: ctx.runs.evidence(wf.id, step.id),
  };
}

export const workflowRoutes: RouteGroup = (app, { ctx }) => {
  const q = new ServerQueries(ctx.store);

  app.get("/api/workflows", (c) => c.json({ items: knownWorkflows(ctx, q), next_cursor: null }));

  app.get("/api/workflows/:workflowId", (c) => {
    const wf = findWorkflow(ctx, q, c.req.param("workflowId"));
    const steps = wf.steps.map((s) => {
      const script = savedScript(wf, s.id);
      const meta = readMetadata(historyDir(runHomeOf(ctx.workspace.dir), wf, s.id));
      return {
        step_id: s.id,
        description: s.description,
        mode: resolveMode(s, wf.defaults).mode,
        script: script ? { language: script.language } : null,
        script_version: meta?.script_version ?? null,
        current_streak: meta?.current_streak ?? null,
        total_runs: meta?.total_runs ?? 0,
        successful_runs: meta?.successful_runs ?? 0,
        evidence: ctx.runs.evidence(wf.id, s.id),
      };
    });
    return c.json({
      workflow_id: wf.id,
      workflow_path: wf.source,
      description: wf.description ?? null,
      // For the dashboard's start form: each variable's default and description, and the groups.
      variables: wf.variables,
      groups: Object.keys(wf.groups),
      steps,
    });
  });

  app.get("/api/workflows/:workflowId/scripts/:stepId", (c) =>
    c.json(scriptDetail(ctx, q, c.req.param("workflowId"), c.req.param("stepId"))),
  );

  app.get("/api/workflows/:workflowId/scripts/:stepId/diffs/:name", (c) => {
    const wf = findWorkflow(ctx, q, c.req.param("workflowId"));
    const step = requireStep(wf, c.req.param("stepId"));
    return c.text(readListedFile(diffsDir(wf, step.id), c.req.param("name"), "diff"));
  });
};
