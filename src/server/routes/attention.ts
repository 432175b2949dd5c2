/**
 * `GET /api/attention`: what needs a person now, for the dashboard's landing page. Five sections,
 * each `{count, items}` (`count` is every match — for failed runs, among the newest 500 failed and
 * 500 interrupted runs of the window; `items` the newest `limit` of them):
 *
 * - `approvals`: pending approvals of threads (the call's name and arguments exactly as
 *   `GET /api/threads/{id}` shows them in `pending`), ones whose time ran out or whose thread
 *   ended (a cancel leaves its request pending, undecidable) left out;
 * - `reviews`: open plans whose review awaits an agent (`review_state` `awaiting_agent`), with the
 *   review step;
 * - `failed_runs`: `failed`/`interrupted` runs started in the last `days` days that no later run
 *   of the same workflow has passed since (a re-run that passes clears the item);
 * - `failed_tasks`: runner tasks of the `--runner-dir` folders in `failed`, `refused` or `error`,
 *   updated in the last `days` days;
 * - `stuck_steps`: IN_PROGRESS steps of open plans whose lease expired (the sweep fails them).
 *
 * Read-only, like every read; the actions on each item are the existing write routes.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import { reviewStepId } from "../../ledger/index.js";
import type { RouteGroup } from "../app.js";
import type { ServerContext } from "../context.js";
import { pageSize } from "../http.js";
import { ServerQueries } from "../queries.js";
import { listTasks, taskSummary } from "./runner.js";

/** How far back failed runs and tasks count, by default (days). */
export const ATTENTION_DEFAULT_DAYS = 7;
/** The longest look-back `days` accepts. */
export const ATTENTION_MAX_DAYS = 90;
/** Failed runs read per request before the "passed since" filter (the newest first). */
const FAILED_RUNS_SCANNED = 500;
const FAILED_TASK_STATES = ["failed", "refused", "error"];

interface Section<T> {
  count: number;
  items: T[];
}

const section = <T>(all: T[], limit: number): Section<T> => ({
  count: all.length,
  items: all.slice(0, limit),
});

/** `days` of the query: a whole number 1–90. @throws `usage` naming `days`. */
export function attentionDays(raw: string | undefined): number {
  if (raw === undefined || raw === "") return ATTENTION_DEFAULT_DAYS;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > ATTENTION_MAX_DAYS)
    throw new RatchetError(
      ErrorCode.Usage,
      `days must be a whole number from 1 to ${ATTENTION_MAX_DAYS} (got ${JSON.stringify(raw)})`,
      { field: "days" },
    );
  return n;
}

interface PendingRow {
  approval_id: string;
  thread_id: string;
  call_id: string;
  action: string;
  args: string;
  created_at: string;
  expires_ms: number | null;
  goal: string;
  state: string;
}

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Everything `GET /api/attention` answers, at `nowMs`. */
export function attention(ctx: ServerContext, opts: { limit: number; days: number; nowMs: number }) {
  const { limit, days, nowMs } = opts;
  const sinceIso = new Date(nowMs - days * 86_400_000).toISOString();
  const sql = ctx.store.sql;

  const approvals = sql
    .all<PendingRow>(
      `SELECT a.approval_id, a.thread_id, a.call_id, a.action, a.args, a.created_at, a.expires_ms, t.goal, t.state
         FROM thread_approvals a JOIN threads t ON t.thread_id = a.thread_id
        WHERE a.status = 'pending' AND (a.expires_ms IS NULL OR a.expires_ms > ?)
          AND t.state NOT IN ('completed', 'done', 'failed')
        ORDER BY a.created_at DESC, a.approval_id DESC`,
      [nowMs],
    )
    .map((a) => ({
      approval_id: a.approval_id,
      thread_id: a.thread_id,
      thread_goal: a.goal,
      thread_state: a.state,
      call_id: a.call_id,
      action: a.action,
      args: parseArgs(a.args),
      created_at: a.created_at,
    }));

  const reviews = sql
    .all<{ plan_id: string; goal: string; project: string | null; kind: string; updated_at: string }>(
      `SELECT plan_id, goal, project, kind, updated_at FROM plans
        WHERE status = 'IN_PROGRESS' AND review_state = 'awaiting_agent'
        ORDER BY updated_at DESC, plan_id DESC`,
    )
    .map((p) => {
      const review = ctx.store.getStep(reviewStepId(p.plan_id));
      return {
        ...p,
        review_step_id: review?.step_id ?? null,
        review_status: review?.status ?? null,
      };
    });

  const q = new ServerQueries(ctx.store);
  const newestPass = new Map<string, string | null>();
  const passedSince = (workflowId: string, startedAt: string) => {
    if (!newestPass.has(workflowId))
      newestPass.set(workflowId, q.runs({ workflowId, status: "passed", limit: 1 })[0]?.started_at ?? null);
    const at = newestPass.get(workflowId);
    return at !== null && at !== undefined && at > startedAt;
  };
  const failedRuns = ["failed", "interrupted"]
    .flatMap((status) => q.runs({ status, since: sinceIso, limit: FAILED_RUNS_SCANNED }))
    .filter((r) => !passedSince(r.workflow_id, r.started_at))
    .sort((a, b) => (a.started_at < b.started_at ? 1 : a.started_at > b.started_at ? -1 : 0));
  // The failing step, read for the runs shown only.
  const runsShown = failedRuns.slice(0, limit).map((r) => {
    const failed = ctx.runs.stepRuns(r.run_id).find((s) => s.outcome !== null && s.outcome !== "passed");
    return {
      ...r,
      failed_step: failed ? { step_id: failed.step_id, outcome: failed.outcome, error: failed.error } : null,
    };
  });

  const failedTasks = listTasks(ctx)
    .map(taskSummary)
    .filter((t) => t.state !== null && FAILED_TASK_STATES.includes(t.state))
    .filter((t) => t.updated_at === null || t.updated_at >= sinceIso)
    .sort((a, b) => String(b.updated_at ?? "").localeCompare(String(a.updated_at ?? "")));

  const stuck = ctx.store.expiredLeases(nowMs).map((s) => {
    const plan = ctx.store.getPlan(s.plan_id);
    return {
      step_id: s.step_id,
      plan_id: s.plan_id,
      plan_goal: plan?.goal ?? null,
      plan_kind: plan?.kind ?? null,
      title: s.title,
      type: s.type,
      started_at: s.started_at,
      lease_holder: s.lease_holder,
      lease_expires_at: s.lease_expires_at === null ? null : new Date(s.lease_expires_at).toISOString(),
      heartbeat_at: s.heartbeat_at,
    };
  });

  return {
    days,
    approvals: section(approvals, limit),
    reviews: section(reviews, limit),
    failed_runs: { count: failedRuns.length, items: runsShown },
    failed_tasks: section(failedTasks, limit),
    stuck_steps: section(stuck, limit),
  };
}

export const attentionRoutes: RouteGroup = (app, { ctx, describe }) => {
  app.get("/api/attention", (c) =>
    c.json(
      attention(ctx, {
        limit: pageSize(c.req.query("limit")),
        days: attentionDays(c.req.query("days")),
        nowMs: Date.now(),
      }),
    ),
  );
  const sectionSchema = {
    type: "object",
    properties: { count: { type: "integer" }, items: { type: "array" } },
  };
  describe({
    "/api/attention": {
      get: {
        summary:
          "what needs a person: pending thread approvals, plans awaiting review, recent failed runs and runner tasks, steps whose lease expired",
        parameters: [
          {
            name: "limit",
            in: "query",
            required: false,
            description: "items per section (1–500, default 50); count is always the full number",
            schema: { type: "integer", minimum: 1, maximum: 500 },
          },
          {
            name: "days",
            in: "query",
            required: false,
            description: `how far back failed runs and tasks count (1–${ATTENTION_MAX_DAYS}, default ${ATTENTION_DEFAULT_DAYS})`,
            schema: { type: "integer", minimum: 1, maximum: ATTENTION_MAX_DAYS },
          },
        ],
        responses: {
          200: {
            description:
              "{days, approvals, reviews, failed_runs, failed_tasks, stuck_steps}: each {count, items}",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: Object.fromEntries(
                    ["approvals", "reviews", "failed_runs", "failed_tasks", "stuck_steps"].map((k) => [
                      k,
                      sectionSchema,
                    ]),
                  ),
                },
              },
            },
          },
          400: { description: "bad `limit` or `days` (error.field names it)" },
        },
      },
    },
  });
};
