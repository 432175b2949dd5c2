/**
 * Keyset-paginated reads the list endpoints need, on either store. The run reads go through the
 * store's runs area (`RunStore`); plans and metrics through the store's one SQL door (`store.sql`,
 * portable statements; only the case-insensitive word match differs: `LIKE` on SQLite, `ILIKE` on
 * PostgreSQL, whose `LIKE` is case-sensitive). Each
 * query walks an index from the cursor and stops after `limit + 1` rows: a page costs the same on a
 * store of a thousand rows and of a million (bench/server.mjs measures it).
 */
import { type MetricRow, type PlanRow, runStoreOf, type Store } from "../store/index.js";
import type { WorkflowRunRow } from "../workflow/index.js";

export class ServerQueries {
  constructor(private readonly store: Store) {}

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
    const like = this.store.sql.dialect === "postgres" ? "ILIKE" : "LIKE";
    (q.words ?? []).forEach((w, i) => {
      where.push(
        `(goal ${like} @w${i} ESCAPE '\\' OR EXISTS (SELECT 1 FROM steps s WHERE s.plan_id = plans.plan_id AND s.title ${like} @w${i} ESCAPE '\\'))`,
      );
      args[`w${i}`] = `%${w.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    });
    if (q.before) where.push("(created_at < @bc OR (created_at = @bc AND plan_id < @bp))");
    return this.store.sql.all<PlanRow>(
      `SELECT * FROM plans ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, plan_id DESC LIMIT @limit`,
      {
        ...args,
        status: q.status,
        kind: q.kind,
        project: q.project,
        since: q.since,
        until: q.until,
        bc: q.before?.created_at,
        bp: q.before?.plan_id,
      },
    );
  }

  /** Runs, newest first, after the cursor `(started_at, run_id)` (the runs area of the store). */
  runs(q: {
    workflowId?: string;
    status?: string;
    trigger?: string;
    since?: string;
    until?: string;
    before?: { started_at: string; run_id: string };
    limit: number;
  }): WorkflowRunRow[] {
    return runStoreOf(this.store).listRuns(q);
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
    return this.store.sql.all<MetricRow>(
      `SELECT * FROM metrics ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT @limit`,
      {
        name: q.name,
        planId: q.planId,
        project: q.project,
        beforeId: q.beforeId,
        limit: q.limit,
      },
    );
  }

  /** The workflows seen in the run tables: id, newest path and newest run time (the runs area). */
  workflows(limit: number): { workflow_id: string; workflow_path: string; last_run_at: string }[] {
    return runStoreOf(this.store).workflows(limit);
  }

  /** The newest recorded path of a workflow id. */
  workflowPath(workflowId: string): string | undefined {
    return runStoreOf(this.store).workflowPath(workflowId);
  }
}
