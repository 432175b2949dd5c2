/**
 * Workflow runs: list (newest first, keyset cursor), one run with each step's mode, fast path,
 * outcome, tokens, duration and error, and `POST /api/runs` to start one. A started run executes in
 * the server process; the reply (202) comes once it is recorded, and its progress arrives on
 * `/events` (`run.*`). Closing the server cancels the runs it started.
 */
import {
  assertNoForbiddenKeys,
  ErrorCode,
  MAX_ID_CHARS,
  MAX_PATH_CHARS,
  MAX_TEXT_CHARS,
  RatchetError,
} from "../../core/index.js";
import { enqueueOrStart } from "../../queue/index.js";
import {
  cancelRun,
  MAX_STEP_TIMEOUT_SECONDS,
  RunStatus,
  RunTrigger,
  runWorkflow,
  type Workflow,
  type WorkflowRunRow,
} from "../../workflow/index.js";
import type { RouteGroup } from "../app.js";
import type { ServerContext } from "../context.js";
import { decodeCursor, oneOfParam, type Page, page, pageSize, readJsonBody, stringParam } from "../http.js";
import { ServerQueries } from "../queries.js";
import { openWorkflowAt } from "../workflow-files.js";
import { timeParam } from "./ledger.js";

/** The body of `POST /api/runs`. */
export interface StartRunBody {
  workflow: string;
  vars?: Record<string, string>;
  group?: string;
  only?: string[];
  trigger?: "manual" | "schedule" | "webhook";
  step_timeout_seconds?: number;
}

const TRIGGERS = [RunTrigger.Manual, RunTrigger.Schedule, RunTrigger.Webhook] as const;

/** The JSON Schema of {@link StartRunBody} (OpenAPI and the MCP `start_run` tool). */
export const START_RUN_SCHEMA: Record<string, unknown> = {
  type: "object",
  properties: {
    workflow: {
      type: "string",
      minLength: 1,
      description: "workflow file or folder (relative: to the workspace's folder)",
    },
    vars: {
      type: "object",
      additionalProperties: { type: "string" },
      description: "variable values by name",
    },
    group: { type: "string", description: "a variable group of the workflow" },
    only: { type: "array", items: { type: "string" }, description: "only these steps" },
    trigger: { type: "string", enum: [...TRIGGERS], description: "how the run was started (default manual)" },
    step_timeout_seconds: {
      type: "integer",
      minimum: 1,
      maximum: MAX_STEP_TIMEOUT_SECONDS,
      description: "time limit of each script in seconds (default 600)",
    },
  },
  required: ["workflow"],
  additionalProperties: false,
};
const FIELDS = ["workflow", "vars", "group", "only", "trigger", "step_timeout_seconds"];

const bad = (field: string, message: string): never => {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${field}\`: ${message}`, { field });
};

/** Validates the body of `POST /api/runs`. @throws `schema_violation` naming the field. */
export function parseStartRun(raw: unknown): StartRunBody {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) bad("body", "must be a JSON object");
  assertNoForbiddenKeys(raw);
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!FIELDS.includes(k)) bad(k, `unknown field (allowed: ${FIELDS.join(", ")})`);
  if (typeof o.workflow !== "string" || o.workflow.trim() === "")
    bad("workflow", "must be a non-empty string");
  if ((o.workflow as string).length > MAX_PATH_CHARS)
    bad("workflow", `must be at most ${MAX_PATH_CHARS} characters`);
  const out: StartRunBody = { workflow: o.workflow as string };
  if (o.vars !== undefined) {
    if (o.vars === null || typeof o.vars !== "object" || Array.isArray(o.vars))
      bad("vars", "must be an object");
    for (const [k, v] of Object.entries(o.vars as object)) {
      if (typeof v !== "string") bad(`vars.${k}`, "must be a string");
      if (k.length > MAX_ID_CHARS)
        bad(`vars.${k.slice(0, 40)}…`, `names are at most ${MAX_ID_CHARS} characters`);
      if ((v as string).length > MAX_TEXT_CHARS)
        bad(`vars.${k}`, `must be at most ${MAX_TEXT_CHARS} characters`);
    }
    out.vars = o.vars as Record<string, string>;
  }
  if (o.group !== undefined) {
    if (typeof o.group !== "string" || o.group === "") bad("group", "must be a non-empty string");
    if ((o.group as string).length > MAX_ID_CHARS) bad("group", `must be at most ${MAX_ID_CHARS} characters`);
    out.group = o.group as string;
  }
  if (o.only !== undefined) {
    if (!Array.isArray(o.only) || o.only.some((s) => typeof s !== "string" || s.length > MAX_ID_CHARS))
      bad("only", `must be an array of step ids (each at most ${MAX_ID_CHARS} characters)`);
    out.only = o.only as string[];
  }
  if (o.trigger !== undefined) {
    if (!(TRIGGERS as readonly unknown[]).includes(o.trigger))
      bad("trigger", `must be one of ${TRIGGERS.join(", ")}`);
    out.trigger = o.trigger as StartRunBody["trigger"];
  }
  if (o.step_timeout_seconds !== undefined) {
    const n = o.step_timeout_seconds;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_STEP_TIMEOUT_SECONDS)
      bad("step_timeout_seconds", `must be a whole number from 1 to ${MAX_STEP_TIMEOUT_SECONDS}`);
    out.step_timeout_seconds = n as number;
  }
  return out;
}

/**
 * Starts a run and resolves once it is recorded (before any step runs): queued for a worker when
 * the workspace has a queue (src/queue/, `plan_id` null, `status` "queued"), else in this process.
 * @throws the workflow's load errors and the run's refusals (variables, secrets, `only`).
 */
export async function startRun(
  ctx: ServerContext,
  body: StartRunBody,
): Promise<{ run_id: string; plan_id: string | null; workflow_id: string; status?: string }> {
  const wf = openWorkflowAt(ctx.workspace.root, body.workflow);
  // queue-core: one call decides queue or local (src/queue/entry.ts).
  const r = await enqueueOrStart(
    ctx,
    {
      workflow: wf,
      ...(body.vars ? { vars: body.vars } : {}),
      ...(body.group ? { group: body.group } : {}),
      ...(body.only ? { only: body.only } : {}),
      trigger: body.trigger ?? RunTrigger.Manual,
      ...(body.step_timeout_seconds ? { stepTimeoutSeconds: body.step_timeout_seconds } : {}),
    },
    () => startLocalRun(ctx, wf, body),
  );
  if (r.queued) {
    ctx.hub.kick();
    return { run_id: r.run_id, plan_id: null, workflow_id: r.workflow_id, status: r.status };
  }
  return { run_id: r.run_id, plan_id: r.plan_id, workflow_id: r.workflow_id };
}

/** Starts a run in this process; resolves once it is recorded. */
async function startLocalRun(
  ctx: ServerContext,
  wf: Workflow,
  body: StartRunBody,
): Promise<{ run_id: string; plan_id: string; workflow_id: string }> {
  const abort = new AbortController();
  ctx.active.add(abort);
  const r = await new Promise<{ run_id: string; plan_id: string }>((resolveStarted, rejectStarted) => {
    runWorkflow(ctx, wf, {
      ...(body.vars ? { vars: body.vars } : {}),
      ...(body.group ? { group: body.group } : {}),
      ...(body.only ? { only: body.only } : {}),
      trigger: body.trigger ?? RunTrigger.Manual,
      ...(body.step_timeout_seconds ? { stepTimeoutSeconds: body.step_timeout_seconds } : {}),
      signal: abort.signal,
      onStarted: (started) => {
        ctx.hub.kick();
        resolveStarted(started);
      },
      onProgress: (p) => {
        if (p.kind !== "step_output") ctx.hub.kick();
      },
    })
      .then(() => ctx.hub.kick())
      .catch(rejectStarted)
      .finally(() => ctx.active.delete(abort));
  });
  return { run_id: r.run_id, plan_id: r.plan_id, workflow_id: wf.id };
}

/**
 * One page of runs, newest first, from `GET /api/runs`'s query or the MCP `list_runs` arguments
 * (`limit`, `status`, `workflow_id`, `cursor`): one rule for both.
 * @throws `usage` naming `limit`, `status`, `workflow_id` or `cursor`.
 */
export function runsPage(
  q: ServerQueries,
  raw: {
    limit?: unknown;
    status?: unknown;
    workflow_id?: unknown;
    cursor?: unknown;
    trigger?: unknown;
    since?: unknown;
    until?: unknown;
  },
): Page<WorkflowRunRow> {
  const limit = pageSize(raw.limit);
  const trigger = stringParam("trigger", raw.trigger);
  const since = timeParam("since", raw.since);
  const until = timeParam("until", raw.until);
  const status = oneOfParam("status", raw.status, Object.values(RunStatus));
  const workflowId = stringParam("workflow_id", raw.workflow_id);
  const cur = decodeCursor(stringParam("cursor", raw.cursor), 2);
  const rows = q.runs({
    limit: limit + 1,
    ...(status ? { status } : {}),
    ...(workflowId ? { workflowId } : {}),
    ...(trigger ? { trigger } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    ...(cur ? { before: { started_at: String(cur[0]), run_id: String(cur[1]) } } : {}),
  });
  return page(rows, limit, (r) => [r.started_at, r.run_id]);
}

export const runRoutes: RouteGroup = (app, { ctx, write }) => {
  const q = new ServerQueries(ctx.store);

  app.get("/api/runs", (c) => {
    const v = (k: string) => c.req.query(k);
    return c.json(
      runsPage(q, {
        limit: v("limit"),
        status: v("status"),
        workflow_id: v("workflow_id"),
        cursor: v("cursor"),
        trigger: v("trigger"),
        since: v("since"),
        until: v("until"),
      }),
    );
  });

  app.get("/api/runs/:runId", (c) => {
    const runId = c.req.param("runId");
    const run = ctx.runs.getRun(runId);
    if (!run) throw new RatchetError(ErrorCode.NotFound, `run ${runId} not found`, { field: "run_id" });
    return c.json({ run, steps: ctx.runs.stepRuns(runId) });
  });

  // Cancel: the run ends `cancelled` with its processes gone (see workflow/cancel.ts); the reply
  // comes once it is closed, or after a bounded wait with status `running` and how `requested`.
  app.post("/api/runs/:runId/cancel", write, async (c) => {
    const r = await cancelRun(ctx, c.req.param("runId"), { by: "http" });
    ctx.hub.kick();
    return c.json({ ok: true, op: "run-cancel", ...r });
  });

  app.post("/api/runs", write, async (c) => {
    const body = parseStartRun(await readJsonBody(c));
    const r = await startRun(ctx, body);
    return c.json({ ok: true, op: "run-start", ...r }, 202);
  });
};
