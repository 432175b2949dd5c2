/**
 * Ledger routes. Reads: plans (newest first, keyset cursor), one plan in tree order with logs,
 * deviations, metrics and skills, one step with its full logs, blobs, metrics. Writes: one route per
 * write flow (`POST /api/flows/{op}`), the same JSON input and result/marker as the CLI.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import { applyBatch, applyOp, OP_NAMES, type Op, PlanStatus, showPlan } from "../../ledger/index.js";
import type { PlanRow } from "../../store/index.js";
import type { RouteGroup } from "../app.js";
import type { ServerContext } from "../context.js";
import {
  decodeCursor,
  oneOfParam,
  type Page,
  page,
  pageSize,
  readJsonBody,
  statusOf,
  stringParam,
} from "../http.js";
import { ServerQueries } from "../queries.js";

const PLAN_STATUSES = Object.values(PlanStatus);

/**
 * The page size and status filter of a plan list, from `GET /api/plans`'s query or the MCP
 * `list_plans` arguments: one rule for both. @throws `usage` naming `limit` or `status`.
 */
export function planListFilter(raw: { limit?: unknown; status?: unknown }): {
  limit: number;
  status?: PlanStatus;
} {
  const limit = pageSize(raw.limit);
  const status = oneOfParam("status", raw.status, PLAN_STATUSES);
  return { limit, ...(status ? { status } : {}) };
}

/**
 * One page of plans, newest first, from `GET /api/plans`'s query or the MCP `list_plans` arguments
 * (`limit`, `status`, `kind`, `cursor`): one rule for both.
 * @throws `usage` naming `limit`, `status`, `kind` or `cursor`.
 */
export function plansPage(
  store: ServerContext["store"],
  raw: { limit?: unknown; status?: unknown; kind?: unknown; cursor?: unknown },
): Page<PlanRow> {
  const { limit, status } = planListFilter(raw);
  const kind = stringParam("kind", raw.kind);
  const cur = decodeCursor(stringParam("cursor", raw.cursor), 2);
  const rows = store.listPlans({
    limit: limit + 1,
    ...(status ? { status } : {}),
    ...(kind ? { kind } : {}),
    ...(cur ? { before: { created_at: String(cur[0]), plan_id: String(cur[1]) } } : {}),
  });
  return page(rows, limit, (p) => [p.created_at, p.plan_id]);
}

/** An ISO time from a query parameter, normalised; @throws `usage` naming the field. */
export function timeParam(name: string, raw: unknown): string | undefined {
  const v = stringParam(name, raw);
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t))
    throw new RatchetError(
      ErrorCode.Usage,
      `${name} must be an ISO date or time (got ${JSON.stringify(v)})`,
      {
        field: name,
      },
    );
  return new Date(t).toISOString();
}

/** Search words of `q`: at most 8, at most 200 characters in all; @throws `usage` naming `q`. */
export function searchWords(raw: unknown): string[] | undefined {
  const v = stringParam("q", raw);
  if (v === undefined) return undefined;
  if (v.length > 200)
    throw new RatchetError(ErrorCode.Usage, `q must be at most 200 characters (got ${v.length})`, {
      field: "q",
    });
  const words = v.trim().split(/\s+/).filter(Boolean);
  if (words.length > 8)
    throw new RatchetError(ErrorCode.Usage, `q must have at most 8 words (got ${words.length})`, {
      field: "q",
    });
  return words.length ? words : undefined;
}

/**
 * The dashboard's plan list (`GET /api/plans`): {@link plansPage}'s `limit`, `status`, `kind` and
 * `cursor`, plus `project`, `exclude_kind` (comma-separated), `since`/`until` (created-at range) and
 * `q` (words in the goal or a step title). @throws `usage` naming the field.
 */
export function plansListPage(q: ServerQueries, raw: Record<string, string | undefined>): Page<PlanRow> {
  const { limit, status } = planListFilter(raw);
  const kind = stringParam("kind", raw.kind);
  const exclude = stringParam("exclude_kind", raw.exclude_kind)
    ?.split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  const project = stringParam("project", raw.project);
  const since = timeParam("since", raw.since);
  const until = timeParam("until", raw.until);
  const words = searchWords(raw.q);
  const cur = decodeCursor(stringParam("cursor", raw.cursor), 2);
  const rows = q.plans({
    limit: limit + 1,
    ...(status ? { status } : {}),
    ...(kind ? { kind } : {}),
    ...(exclude?.length ? { excludeKinds: exclude } : {}),
    ...(project ? { project } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    ...(words ? { words } : {}),
    ...(cur ? { before: { created_at: String(cur[0]), plan_id: String(cur[1]) } } : {}),
  });
  return page(rows, limit, (p) => [p.created_at, p.plan_id]);
}

export const ledgerRoutes: RouteGroup = (app, { ctx, write }) => {
  const q = new ServerQueries(ctx.store);

  app.get("/api/health", (c) => c.json({ ok: true, last_event_id: ctx.store.lastEventId() }));

  app.get("/api/plans", (c) => {
    const v = (k: string) => c.req.query(k);
    const keys = ["limit", "status", "kind", "cursor", "project", "exclude_kind", "since", "until", "q"];
    return c.json(plansListPage(q, Object.fromEntries(keys.map((k) => [k, v(k)]))));
  });

  app.get("/api/plans/:planId", (c) => {
    const step = c.req.query("step");
    return c.json(
      showPlan(ctx.store, ctx.blobs, c.req.param("planId"), { ...(step ? { step } : {}), full: false }),
    );
  });

  app.get("/api/steps/:stepId", (c) => {
    const stepId = c.req.param("stepId");
    const step = ctx.store.getStep(stepId);
    if (!step) throw new RatchetError(ErrorCode.StepNotFound, `step ${stepId} not found`, { stepId });
    const logs = ctx.store.logsOfStep(stepId).map((l) => ({
      ...l,
      full: l.blob && ctx.blobs.has(l.blob) ? ctx.blobs.getText(l.blob) : l.text,
    }));
    return c.json({ step, logs, children: ctx.store.childrenOf(stepId).map((s) => s.step_id) });
  });

  app.get("/api/blobs/:hash", (c) => {
    const hash = c.req.param("hash");
    if (!/^[0-9a-f]{64}$/.test(hash))
      throw new RatchetError(ErrorCode.InvalidValue, `not a blob hash: ${JSON.stringify(hash)}`, {
        field: "hash",
      });
    return c.text(ctx.blobs.getText(hash));
  });

  app.get("/api/metrics", (c) => {
    const limit = pageSize(c.req.query("limit"));
    const cur = decodeCursor(c.req.query("cursor"), 1);
    const name = c.req.query("name") || undefined;
    const planId = c.req.query("plan_id") || undefined;
    const rows = q.metrics({
      limit: limit + 1,
      ...(name ? { name } : {}),
      ...(planId ? { planId } : {}),
      ...(cur ? { beforeId: Number(cur[0]) } : {}),
    });
    return c.json(page(rows, limit, (m) => [m.id]));
  });

  app.get("/api/projects", (c) => c.json({ items: ctx.store.listProjects(), next_cursor: null }));

  app.get("/api/flows", (c) => c.json({ ops: OP_NAMES }));

  // A batch (`step apply`): {"ops": [{"op": …, "as"?: …, …input}], "stop_on_error"?: bool}.
  app.post("/api/flows/apply", write, async (c) => {
    const body = (await readJsonBody(c, false)) as Record<string, unknown> | null;
    const ops = body?.ops;
    if (!Array.isArray(ops))
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        "field `ops`: must be an array of flow inputs with an `op`",
        {
          field: "ops",
        },
      );
    const r = await applyBatch(ctx.ledger, ops, {
      stopOnError: body?.stop_on_error === true,
      ctx: { cwd: ctx.workspace.root, run: { signal: c.req.raw.signal } },
    });
    ctx.hub.kick();
    return c.json({ ...r.summary, exit_status: r.status, lines: r.lines });
  });

  app.post("/api/flows/:op", write, async (c) => {
    const op = c.req.param("op");
    if (!(OP_NAMES as string[]).includes(op))
      throw new RatchetError(ErrorCode.NotFound, `no write flow ${op} (flows: ${OP_NAMES.join(", ")})`, {
        field: "op",
      });
    const input = await readJsonBody(c, op === "sweep");
    const outcome = await applyOp(ctx.ledger, op as Op, input, {
      cwd: ctx.workspace.root,
      run: { signal: c.req.raw.signal },
    });
    ctx.hub.kick();
    if (outcome.ok) return c.json({ ok: true, op, result: outcome.result, marker: outcome.marker });
    const err = outcome.error!;
    return c.json(
      {
        ok: false,
        op,
        error: {
          code: err.code,
          message: err.message,
          ...(err.details.field ? { field: err.details.field } : {}),
        },
        marker: outcome.marker,
      },
      statusOf(err.code) as 400,
    );
  });
};
