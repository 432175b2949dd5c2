import { ErrorCode, RatchetError } from "../../core/index.js";
import { MOVE_STEP_COLUMNS, PLAN_COLUMNS, STEP_COLUMNS } from "../columns.js";
import { PgSqlPort, type SqlPort } from "../sql.js";
import type {
  DeviationRow,
  EventQuery,
  EventRow,
  MetricRow,
  MoveStepRow,
  NewEvent,
  PlanPatch,
  PlanQuery,
  PlanRow,
  ProjectRow,
  SkillRow,
  StepForMove,
  StepLogRow,
  StepPatch,
  StepRow,
  StepStateRow,
  Store,
} from "../types.js";
import { PG_MIGRATIONS } from "./migrations.js";
import { migratePg, WORKSPACE_WRITE_LOCK } from "./open.js";
import { type PgParam, SyncPg, type SyncPgOptions } from "./sync-client.js";

/** `INSERT … (cols) VALUES ($1…$n)`. */
function insertSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`;
}

/**
 * `INSERT … (id, cols) SELECT COALESCE(MAX(id), 0) + 1, $1…$n FROM table RETURNING id`: the id is
 * handed out by the insert, under the workspace write lock, so ids are dense and follow commit order.
 */
function insertWithIdSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (id, ${columns.join(", ")}) SELECT COALESCE(MAX(id), 0) + 1, ${columns.map((_, i) => `$${i + 1}`).join(", ")} FROM ${table} RETURNING id`;
}

const EVENT_COLUMNS = ["at", "entity_kind", "entity_id", "plan_id", "type", "payload"] as const;
const LOG_COLUMNS = ["step_id", "plan_id", "at", "kind", "text", "bytes", "truncated", "blob"] as const;
const DEVIATION_COLUMNS = [
  "plan_id",
  "kind",
  "parent_step_id",
  "justification",
  "sub_step_ids",
  "old_max",
  "new_max",
  "created_at",
] as const;
const SKILL_COLUMNS = ["plan_id", "step_id", "name", "source", "reason", "created_at"] as const;
const METRIC_COLUMNS = [
  "name",
  "value",
  "unit",
  "project",
  "plan_id",
  "step_id",
  "created_at",
  "source",
] as const;

/** A step's columns (every `StepRow` field; not migration 7's `reserve`). */
const STEP_SELECT = `SELECT ${STEP_COLUMNS.join(", ")} FROM steps`;
const EVENT_SELECT = `SELECT id, ${EVENT_COLUMNS.join(", ")} FROM events`;
const PLAN_SELECT = `SELECT ${[...PLAN_COLUMNS, "session_id", "headline_json"].join(", ")} FROM plans`;

function valuesOf(row: object, columns: readonly string[]): PgParam[] {
  const r = row as Record<string, PgParam>;
  return columns.map((c) => r[c] ?? null);
}

/**
 * The PostgreSQL implementation of {@link Store}, synchronous through {@link SyncPg}.
 *
 * Every write transaction is `BEGIN ISOLATION LEVEL READ COMMITTED` followed at once by
 * `pg_advisory_xact_lock(WORKSPACE_WRITE_LOCK)`: one writer at a time per database, like SQLite's
 * `BEGIN IMMEDIATE`. Because each statement of a READ COMMITTED transaction takes a fresh
 * snapshot, everything the flow reads after the lock sees every transaction that committed before
 * it — the roll-up's "is the review already handed off?" check included — and the lock is released
 * only after the commit is visible. Why not SERIALIZABLE: see docs/scale-out.md ("What each
 * guarantee rests on").
 */
export class PgStore implements Store {
  readonly pg: SyncPg;
  readonly #now: () => string;
  #depth = 0;
  #sql?: SqlPort;

  /** Why this store's session is unusable for good ({@link SyncPg.broken}), or undefined while it works. */
  get broken(): string | undefined {
    return this.pg.broken;
  }

  get sql(): SqlPort {
    this.#sql ??= new PgSqlPort(this.pg, () => this.#depth > 0);
    return this.#sql;
  }

  constructor(pg: SyncPg, now: () => string = () => new Date().toISOString()) {
    this.pg = pg;
    this.#now = now;
  }

  /**
   * Connects to `url` and applies pending migrations.
   * @throws workspace_not_found when the server cannot be reached.
   */
  static open(url: string, opts: SyncPgOptions = {}): PgStore {
    const pg = new SyncPg(url, opts);
    try {
      migratePg(pg, PG_MIGRATIONS);
    } catch (err) {
      pg.close();
      throw err;
    }
    return new PgStore(pg);
  }

  tx<T>(fn: () => T): T {
    if (this.#depth > 0) {
      // A nested call joins the outer transaction (better-sqlite3's behaviour when inTransaction).
      this.#depth++;
      try {
        return fn();
      } finally {
        this.#depth--;
      }
    }
    try {
      this.pg.exec(
        `BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(${WORKSPACE_WRITE_LOCK})`,
      );
    } catch (err) {
      // BEGIN ran but the wait for the lock failed (statement_timeout on a busy database): leave
      // the aborted block, or every later statement of this session fails ("current transaction
      // is aborted") and the process can never write again.
      this.#rollback();
      throw err;
    }
    this.#depth = 1;
    let result: T;
    try {
      result = fn();
      if (
        result !== null &&
        typeof result === "object" &&
        typeof (result as { then?: unknown }).then === "function"
      )
        throw new RatchetError(ErrorCode.Internal, "a store transaction function must not return a promise");
    } catch (err) {
      this.#depth = 0;
      this.#rollback();
      throw err;
    }
    this.#depth = 0;
    try {
      this.pg.exec("COMMIT");
    } catch (err) {
      // A failed COMMIT has rolled back on the server; make sure the session is out of the block.
      this.#rollback();
      throw err;
    }
    return result;
  }

  #rollback(): void {
    try {
      this.pg.exec("ROLLBACK");
    } catch {
      // the session is gone: the server rolled back when it lost the connection
    }
  }

  #requireTx(what: string): void {
    if (this.#depth === 0) {
      throw new RatchetError(ErrorCode.Internal, `${what} must run inside a store transaction`);
    }
  }

  #rows<R>(sql: string, params: readonly PgParam[] = []): R[] {
    return this.pg.query<R>(sql, params).rows;
  }

  #first<R>(sql: string, params: readonly PgParam[] = []): R | undefined {
    return this.pg.query<R>(sql, params).rows[0];
  }

  #insertWithId(table: string, columns: readonly string[], row: object): number {
    const r = this.#first<{ id: number }>(insertWithIdSql(table, columns), valuesOf(row, columns));
    return r?.id ?? 0;
  }

  /**
   * Appends an event and, in the same statement, `pg_notify('ratchet_events', id)`: PostgreSQL
   * delivers the notification only when the transaction commits, in commit order, so a listener
   * (the server's event hub, `events --follow`) wakes for committed events only.
   */
  appendEvent(e: NewEvent): number {
    this.#requireTx("appendEvent");
    const row = {
      at: this.#now(),
      entity_kind: e.entityKind,
      entity_id: e.entityId,
      plan_id: e.planId ?? null,
      type: e.type,
      payload: JSON.stringify(e.payload ?? {}),
    };
    const r = this.#first<{ id: number }>(
      `WITH e AS (${insertWithIdSql("events", EVENT_COLUMNS)}) SELECT id, pg_notify('ratchet_events', id::text) AS notified FROM e`,
      valuesOf(row, EVENT_COLUMNS),
    );
    return r?.id ?? 0;
  }

  listEvents(q: EventQuery): EventRow[] {
    const params: PgParam[] = [q.since ?? 0];
    const where: string[] = ["id > $1"];
    const add = (col: string, v: string | undefined) => {
      if (!v) return;
      params.push(v);
      where.push(`${col} = $${params.length}`);
    };
    add("plan_id", q.planId);
    add("entity_kind", q.entityKind);
    add("entity_id", q.entityId);
    params.push(q.limit ?? 1000);
    return this.#rows<EventRow>(
      `${EVENT_SELECT} WHERE ${where.join(" AND ")} ORDER BY id LIMIT $${params.length}`,
      params,
    );
  }

  lastEventId(): number {
    return this.#first<{ id: number }>("SELECT COALESCE(MAX(id), 0) AS id FROM events")?.id ?? 0;
  }

  insertPlan(p: PlanRow): void {
    this.#requireTx("insertPlan");
    this.pg.query(insertSql("plans", PLAN_COLUMNS), valuesOf(p, PLAN_COLUMNS));
  }

  getPlan(planId: string): PlanRow | undefined {
    return this.#first<PlanRow>(`${PLAN_SELECT} WHERE plan_id = $1`, [planId]);
  }

  #update(table: string, key: string, id: string, patch: Record<string, unknown>): void {
    this.#requireTx(`update ${table}`);
    const cols = Object.keys(patch).filter((k) => patch[k] !== undefined);
    if (cols.length === 0) return;
    const sql = `UPDATE ${table} SET ${cols.map((c, i) => `${c} = $${i + 2}`).join(", ")} WHERE ${key} = $1`;
    const r = this.pg.query(sql, [id, ...cols.map((c) => patch[c] as PgParam)]);
    if (r.rowCount !== 1)
      throw new RatchetError(ErrorCode.Internal, `update of ${table} ${id} changed ${r.rowCount} rows`);
  }

  updatePlan(planId: string, patch: PlanPatch): void {
    this.#update("plans", "plan_id", planId, { ...patch, updated_at: patch.updated_at ?? this.#now() });
  }

  listPlans(q: PlanQuery): PlanRow[] {
    const params: PgParam[] = [];
    const where: string[] = [];
    const p = (v: PgParam) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (q.status) where.push(`status = ${p(q.status)}`);
    if (q.kind) where.push(`kind = ${p(q.kind)}`);
    if (q.before) {
      const bc = p(q.before.created_at);
      where.push(`(created_at < ${bc} OR (created_at = ${bc} AND plan_id < ${p(q.before.plan_id)}))`);
    }
    const limit = p(q.limit ?? 50);
    return this.#rows<PlanRow>(
      `${PLAN_SELECT} ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, plan_id DESC LIMIT ${limit}`,
      params,
    );
  }

  insertStep(s: StepRow): void {
    this.#requireTx("insertStep");
    this.pg.query(insertSql("steps", STEP_COLUMNS), valuesOf(s, STEP_COLUMNS));
  }

  getStep(stepId: string): StepRow | undefined {
    return this.#first<StepRow>(`${STEP_SELECT} WHERE step_id = $1`, [stepId]);
  }

  updateStep(stepId: string, patch: StepPatch): void {
    this.#update("steps", "step_id", stepId, { ...patch, updated_at: patch.updated_at ?? this.#now() });
  }

  stepsOfPlan(planId: string): StepRow[] {
    // SQLite breaks (depth, seq) ties in insertion order; created_at then step_id is the nearest
    // stable order here (ties are siblings of different parents; the views order by tree).
    return this.#rows<StepRow>(`${STEP_SELECT} WHERE plan_id = $1 ORDER BY depth, seq, created_at, step_id`, [
      planId,
    ]);
  }

  stepStatesOfPlan(planId: string): StepStateRow[] {
    // stepsOfPlan's order, four columns.
    return this.#rows<StepStateRow>(
      "SELECT step_id, parent_step_id, role, status FROM steps WHERE plan_id = $1 ORDER BY depth, seq, created_at, step_id",
      [planId],
    );
  }

  childrenOf(stepId: string): StepRow[] {
    return this.#rows<StepRow>(`${STEP_SELECT} WHERE parent_step_id = $1 ORDER BY seq`, [stepId]);
  }

  countOpenSteps(planId: string): number {
    return (
      this.#first<{ n: number }>(
        "SELECT COUNT(*) AS n FROM steps WHERE plan_id = $1 AND role = 'regular' AND status IN ('PENDING', 'IN_PROGRESS', 'NEEDS_REVIEW')",
        [planId],
      )?.n ?? 0
    );
  }

  hasOpenSteps(planId: string): boolean {
    return (
      this.#first(
        "SELECT 1 AS one FROM steps WHERE plan_id = $1 AND role = 'regular' AND status IN ('PENDING', 'IN_PROGRESS', 'NEEDS_REVIEW') LIMIT 1",
        [planId],
      ) !== undefined
    );
  }

  stepStatus(stepId: string): string | undefined {
    return this.#first<{ status: string }>("SELECT status FROM steps WHERE step_id = $1", [stepId])?.status;
  }

  planStatus(planId: string): string | undefined {
    return this.#first<{ status: string }>("SELECT status FROM plans WHERE plan_id = $1", [planId])?.status;
  }

  stepForMove(stepId: string, rollup: boolean): StepForMove | undefined {
    // One statement, as on SQLite (sqlite-store.ts STEP_FOR_MOVE): the step's columns a move checks, its plan's
    // status and, for the roll-up, another open regular step and `<plan>-REVIEW`'s status.
    const extra = rollup
      ? ", (SELECT 1 FROM steps o WHERE o.plan_id = s.plan_id AND o.role = 'regular' AND o.step_id <> s.step_id AND o.status IN ('PENDING', 'IN_PROGRESS', 'NEEDS_REVIEW') LIMIT 1) AS others_open_, (SELECT r.status FROM steps r WHERE r.step_id = s.plan_id || '-REVIEW') AS review_status_"
      : "";
    const r = this.#first<Record<string, unknown>>(
      `SELECT ${MOVE_STEP_COLUMNS.map((c) => `s.${c}`).join(", ")}, (SELECT p.status FROM plans p WHERE p.plan_id = s.plan_id) AS plan_status_${extra} FROM steps s WHERE s.step_id = $1`,
      [stepId],
    );
    if (r === undefined) return undefined;
    const step: Record<string, unknown> = {};
    for (const c of MOVE_STEP_COLUMNS) step[c] = r[c];
    return {
      step: step as unknown as MoveStepRow,
      planStatus: (r.plan_status_ ?? undefined) as string | undefined,
      othersOpen: rollup && r.others_open_ != null,
      reviewStatus: rollup ? ((r.review_status_ ?? undefined) as string | undefined) : undefined,
    };
  }

  releaseLeases(planId: string): number {
    this.#requireTx("releaseLeases");
    return this.pg.query(
      "UPDATE steps SET lease_holder = NULL, lease_expires_at = NULL WHERE plan_id = $1 AND lease_expires_at IS NOT NULL",
      [planId],
    ).rowCount;
  }

  expiredLeases(nowMs: number, planId?: string): StepRow[] {
    return planId
      ? this.#rows<StepRow>(
          `${STEP_SELECT} WHERE plan_id = $1 AND status = 'IN_PROGRESS' AND lease_expires_at IS NOT NULL AND lease_expires_at < $2 ORDER BY lease_expires_at`,
          [planId, nowMs],
        )
      : this.#rows<StepRow>(
          `SELECT ${STEP_COLUMNS.map((c) => `s.${c}`).join(", ")} FROM plans p JOIN steps s ON s.plan_id = p.plan_id WHERE p.status = 'IN_PROGRESS' AND s.status = 'IN_PROGRESS' AND s.lease_expires_at IS NOT NULL AND s.lease_expires_at < $1 ORDER BY s.lease_expires_at`,
          [nowMs],
        );
  }

  insertLog(l: Omit<StepLogRow, "id">): number {
    this.#requireTx("insertLog");
    return this.#insertWithId("step_logs", LOG_COLUMNS, l);
  }

  logsOfStep(stepId: string): StepLogRow[] {
    return this.#rows<StepLogRow>("SELECT * FROM step_logs WHERE step_id = $1 ORDER BY id", [stepId]);
  }

  logsOfPlan(planId: string): StepLogRow[] {
    return this.#rows<StepLogRow>("SELECT * FROM step_logs WHERE plan_id = $1 ORDER BY id", [planId]);
  }

  insertDeviation(d: Omit<DeviationRow, "id">): number {
    this.#requireTx("insertDeviation");
    return this.#insertWithId("deviations", DEVIATION_COLUMNS, d);
  }

  deviationsOfPlan(planId: string): DeviationRow[] {
    return this.#rows<DeviationRow>("SELECT * FROM deviations WHERE plan_id = $1 ORDER BY id", [planId]);
  }

  insertSkill(s: Omit<SkillRow, "id">): number {
    this.#requireTx("insertSkill");
    return this.#insertWithId("skills", SKILL_COLUMNS, s);
  }

  skillsOfPlan(planId: string): SkillRow[] {
    return this.#rows<SkillRow>("SELECT * FROM skills WHERE plan_id = $1 ORDER BY id", [planId]);
  }

  insertMetric(m: Omit<MetricRow, "id">): number {
    this.#requireTx("insertMetric");
    return this.#insertWithId("metrics", METRIC_COLUMNS, m);
  }

  metricsOfPlan(planId: string): MetricRow[] {
    return this.#rows<MetricRow>("SELECT * FROM metrics WHERE plan_id = $1 ORDER BY id", [planId]);
  }

  addProject(p: ProjectRow): void {
    this.#requireTx("addProject");
    this.pg.query("INSERT INTO projects (name, repo_path, created_at) VALUES ($1, $2, $3)", [
      p.name,
      p.repo_path,
      p.created_at,
    ]);
  }

  getProject(name: string): ProjectRow | undefined {
    return this.#first<ProjectRow>("SELECT * FROM projects WHERE name = $1", [name]);
  }

  projectForRepo(repoPath: string): ProjectRow | undefined {
    return this.#first<ProjectRow>("SELECT * FROM projects WHERE repo_path = $1", [repoPath]);
  }

  listProjects(): ProjectRow[] {
    return this.#rows<ProjectRow>("SELECT * FROM projects ORDER BY name");
  }

  /**
   * `ok` when the server answers, every migration this build knows is recorded (and none it does
   * not know), and every ledger table is there; otherwise one line per problem.
   */
  integrityCheck(): string {
    const problems: string[] = [];
    this.pg.query("SELECT 1");
    const applied = new Set(this.#rows<{ id: number }>("SELECT id FROM schema_migrations").map((r) => r.id));
    for (const m of PG_MIGRATIONS)
      if (!applied.has(m.id)) problems.push(`migration ${m.id} (${m.name}) is not applied`);
    for (const id of applied)
      if (!PG_MIGRATIONS.some((m) => m.id === id))
        problems.push(`migration ${id} is unknown to this build (a newer Ratchet migrated this database)`);
    for (const t of [
      "projects",
      "plans",
      "steps",
      "step_logs",
      "deviations",
      "skills",
      "metrics",
      "events",
      "workflow_runs",
      "workflow_step_runs",
    ]) {
      const r = this.#first<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [t]);
      if (!r?.t) problems.push(`table ${t} is missing`);
    }
    return problems.length === 0 ? "ok" : problems.join("\n");
  }

  close(): void {
    this.pg.close();
  }
}
