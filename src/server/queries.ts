/**
 * Keyset-paginated reads the list endpoints need and the store contract does not have yet. Each
 * query walks an index from the cursor and stops after `limit + 1` rows: a page costs the same on a
 * store of a thousand rows and of a million (bench/server.mjs measures it).
 */
import type { Statement } from "better-sqlite3";
import type { MetricRow, PlanRow, SqliteStore } from "../store/index.js";
import type { WorkflowRunRow } from "../workflow/index.js";

export class ServerQueries {
  readonly #stmts = new Map<string, Statement>();
  constructor(private readonly store: SqliteStore) {}

  #sql(sql: string): Statement {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.store.db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  /**
   * Plans, newest first, after the cursor `(created_at, plan_id)`, for the dashboard's filtered
   * list: status, kind (or kinds left out), project, a created-at range `[since, until)`, and words
   * that must all occur in the goal or in one step title (case-insensitive `LIKE`; it scans the
   * rows the other filters leave, so it is the one filter whose cost grows with the store).
   */
  plans(q: {
    status?: string;
    kind?: string;
    excludeKinds?: readonly string[];
    project?: string;
    since?: string;
    until?: string;
    words?: readonly string[];
    before?: { created_at: string; plan_id: string };
    limit: number;
  }): PlanRow[] {
    const where: string[] = [];
    const args: Record<string, unknown> = { limit: q.limit };
    if (q.status !== undefined) where.push("status = @status");
    if (q.kind !== undefined) where.push("kind = @kind");
    (q.excludeKinds ?? []).forEach((k, i) => {
      where.push(`kind <> @xk${i}`);
      args[`xk${i}`] = k;
    });
    if (q.project !== undefined) where.push("project = @project");
    if (q.since !== undefined) where.push("created_at >= @since");
    if (q.until !== undefined) where.push("created_at < @until");
    (q.words ?? []).forEach((w, i) => {
      where.push(
        `(goal LIKE @w${i} ESCAPE '\\' OR EXISTS (SELECT 1 FROM steps s WHERE s.plan_id = plans.plan_id AND s.title LIKE @w${i} ESCAPE '\\'))`,
      );
      args[`w${i}`] = `%${w.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    });
    if (q.before) where.push("(created_at < @bc OR (created_at = @bc AND plan_id < @bp))");
    return this.#sql(
      `SELECT * FROM plans ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, plan_id DESC LIMIT @limit`,
    ).all({
      ...args,
      status: q.status,
      kind: q.kind,
      project: q.project,
      since: q.since,
      until: q.until,
      bc: q.before?.created_at,
      bp: q.before?.plan_id,
    }) as PlanRow[];
  }

  /** Runs, newest first, after the cursor `(started_at, run_id)`. */
  runs(q: {
    workflowId?: string;
    status?: string;
    trigger?: string;
    since?: string;
    until?: string;
    before?: { started_at: string; run_id: string };
    limit: number;
  }): WorkflowRunRow[] {
    const where: string[] = [];
    if (q.workflowId !== undefined) where.push("workflow_id = @workflowId");
    if (q.status !== undefined) where.push("status = @status");
    if (q.trigger !== undefined) where.push("trigger = @trigger");
    if (q.since !== undefined) where.push("started_at >= @since");
    if (q.until !== undefined) where.push("started_at < @until");
    if (q.before) where.push("(started_at < @bs OR (started_at = @bs AND run_id < @br))");
    return this.#sql(
      `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY started_at DESC, run_id DESC LIMIT @limit`,
    ).all({
      workflowId: q.workflowId,
      status: q.status,
      trigger: q.trigger,
      since: q.since,
      until: q.until,
      bs: q.before?.started_at,
      br: q.before?.run_id,
      limit: q.limit,
    }) as WorkflowRunRow[];
  }

  /** Metrics, newest first, optionally of one name, plan or project, after the cursor id. */
  metrics(q: {
    name?: string;
    planId?: string;
    project?: string;
    beforeId?: number;
    limit: number;
  }): MetricRow[] {
    const where: string[] = [];
    if (q.name !== undefined) where.push("name = @name");
    if (q.project !== undefined) where.push("project = @project");
    if (q.planId !== undefined) where.push("plan_id = @planId");
    if (q.beforeId !== undefined) where.push("id < @beforeId");
    return this.#sql(
      `SELECT * FROM metrics ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT @limit`,
    ).all({
      name: q.name,
      planId: q.planId,
      project: q.project,
      beforeId: q.beforeId,
      limit: q.limit,
    }) as MetricRow[];
  }

  /**
   * The workflows seen in the run tables: id, newest path and newest run time. Jumps from one
   * workflow id to the next along `workflow_runs_workflow` (a skip scan), so the cost grows with
   * the number of workflows, not of runs.
   */
  workflows(limit: number): { workflow_id: string; workflow_path: string; last_run_at: string }[] {
    return this.#sql(
      `WITH RECURSIVE ids(id) AS (
         SELECT MIN(workflow_id) FROM workflow_runs
         UNION ALL
         SELECT (SELECT MIN(workflow_id) FROM workflow_runs WHERE workflow_id > ids.id) FROM ids WHERE ids.id IS NOT NULL
       )
       SELECT r.workflow_id, r.workflow_path, r.started_at AS last_run_at
         FROM ids JOIN workflow_runs r ON r.rowid = (
           SELECT rowid FROM workflow_runs WHERE workflow_id = ids.id ORDER BY started_at DESC LIMIT 1)
         WHERE ids.id IS NOT NULL LIMIT ?`,
    ).all(limit) as { workflow_id: string; workflow_path: string; last_run_at: string }[];
  }

  /** The newest recorded path of a workflow id. */
  workflowPath(workflowId: string): string | undefined {
    const r = this.#sql(
      "SELECT workflow_path FROM workflow_runs WHERE workflow_id = ? ORDER BY started_at DESC LIMIT 1",
    ).get(workflowId) as { workflow_path: string } | undefined;
    return r?.workflow_path;
  }
}
