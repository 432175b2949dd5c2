/**
 * Provenance reads for the dashboard: a plan's reason checklist (`GET /api/plans/{id}/reasons`:
 * its reason slots — the node source's changed nodes — with the reasons recorded for each) and a
 * node's `why` (`GET /api/why?target=…&project=…`, the CLI's `why --json`). `why` writes
 * `read_hit(moment=why)` for the records it returns, except on a `--read-only` server.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import { nodeSourceFor, planChecklist, SqlWhyStore, why } from "../../provenance/reasons/why-api.js";
import type { RouteGroup } from "../app.js";

const flag = (v: string | undefined) => v === "1" || v === "true";

export const whyRoutes: RouteGroup = (app, { ctx, readOnly, describe }) => {
  // Provenance reads through the store's SQL door: the same routes on SQLite and PostgreSQL.
  const shared = new SqlWhyStore(ctx.store.sql);
  const whyStore = (_route: string) => shared;

  app.get("/api/plans/:planId/reasons", (c) => {
    const store = whyStore("GET /api/plans/{id}/reasons");
    const planId = c.req.param("planId");
    const plan = ctx.store.getPlan(planId);
    if (!plan) throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId });
    const project = plan.project === "none" ? null : (plan.project ?? null);
    return c.json(planChecklist(store, nodeSourceFor(ctx.store), { plan_id: plan.plan_id, project }));
  });

  app.get("/api/why", (c) => {
    const store = whyStore("GET /api/why");
    const project = c.req.query("project");
    if (!project) throw new RatchetError(ErrorCode.Usage, "why: `project` is required", { field: "project" });
    if (!ctx.store.getProject(project))
      throw new RatchetError(ErrorCode.ProjectNotFound, `project ${project} is not registered`, {
        field: "project",
      });
    const budget = c.req.query("budget");
    const tokens = budget === undefined ? undefined : Number(budget);
    if (tokens !== undefined && (!Number.isInteger(tokens) || tokens < 1))
      throw new RatchetError(
        ErrorCode.Usage,
        `\`budget\`: a positive whole number of tokens (got ${budget})`,
        { field: "budget" },
      );
    const target = c.req.query("target") || undefined;
    const search = c.req.query("search");
    const r = ctx.store.tx(() =>
      why(
        store,
        nodeSourceFor(ctx.store),
        {
          project,
          ...(target ? { target } : {}),
          ...(flag(c.req.query("all")) ? { all: true } : {}),
          ...(tokens !== undefined ? { budgetTokens: tokens } : {}),
          ...(flag(c.req.query("pending")) ? { pending: true } : {}),
          ...(flag(c.req.query("never_read")) ? { neverRead: true } : {}),
          ...(search ? { search } : {}),
          ...(readOnly ? { noHits: true } : {}),
        },
        new Date().toISOString(),
      ),
    );
    return c.json(r);
  });

  const q = (name: string, description: string, type = "string") => ({
    name,
    in: "query",
    required: false,
    description,
    schema: { type },
  });
  const err = { description: "bad input (400), or no such plan/project (404)" };
  describe({
    "/api/plans/{planId}/reasons": {
      get: {
        summary: "a plan's reason checklist: its changed nodes (slots) with the reasons recorded for each",
        parameters: [{ name: "planId", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          200: { description: "{plan_id, project, has_graph, slots, answered, open, other}" },
          404: err,
        },
      },
    },
    "/api/why": {
      get: {
        summary:
          "why a node is the way it is (the CLI's `why --json`); writes read_hit(moment=why) unless read-only",
        parameters: [
          { ...q("project", "registered project"), required: true },
          q("target", "qualified name, nk_… key or file:line"),
          q("all", "1: lift the record caps"),
          q("budget", "token budget (chars ÷ 4; default 1500)", "integer"),
          q("pending", "1: unstated reasons"),
          q("never_read", "1: active constraints never shown"),
          q("search", "words (LIKE)"),
        ],
        responses: {
          200: { description: "{mode, project, target, resolved, summary, records, …}" },
          400: err,
          404: err,
        },
      },
    },
  });
};
