import type { Statement } from "better-sqlite3";
import { ErrorCode, iso, RatchetError } from "../../core/index.js";
import { MOVE_STEP_COLUMNS, PLAN_COLUMNS, STEP_COLUMNS } from "../columns.js";
import { SqliteSqlPort, type SqlPort } from "../sql.js";
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
import { Checkpointer, SAFETY_NET_FACTOR } from "./checkpointer.js";
import { checkpointFrames, openSqlite, type SqliteDb } from "./open.js";

function insertSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`;
}
const INSERT_PLAN = insertSql("plans", PLAN_COLUMNS);

/**
 * The zero bytes a step row is inserted with (migration 13): what its updates may grow by before
 * the row outgrows its place in its page. Start adds a lease, an expiry and two stamps (~90 bytes
 * with their margins); a short summary on complete fits too.
 */
export const STEP_RESERVE_BYTES = 128;
const INSERT_STEP = `INSERT INTO steps (${STEP_COLUMNS.join(", ")}, reserve) VALUES (${STEP_COLUMNS.map((c) => `@${c}`).join(", ")}, zeroblob(${STEP_RESERVE_BYTES}))`;
/**
 * A step row from a raw-mode read of {@link STEP_SELECT}: one object literal (one hidden class,
 * no per-key stores), the keys in `STEP_COLUMNS` order like the plain object read
 * (sqlite-store.test.ts pins both).
 */
function stepFrom(r: unknown[]): StepRow {
  return {
    step_id: r[0],
    plan_id: r[1],
    parent_step_id: r[2],
    seq: r[3],
    role: r[4],
    depth: r[5],
    title: r[6],
    description: r[7],
    type: r[8],
    status: r[9],
    summary: r[10],
    agent_input: r[11],
    agent_output: r[12],
    failure_reason: r[13],
    exit_code: r[14],
    tokens: r[15],
    duration_ms: r[16],
    lease_holder: r[17],
    lease_expires_at: r[18],
    heartbeat_at: r[19],
    started_at: r[20],
    finished_at: r[21],
    created_at: r[22],
    updated_at: r[23],
  } as StepRow;
}
/** The step columns a read returns (every `StepRow` field; never `reserve`). */
const STEP_SELECT = `SELECT ${STEP_COLUMNS.join(", ")} FROM steps`;
/**
 * {@link SqliteStore.stepForMove}: the step's columns a move checks (`MOVE_STEP_COLUMNS`, aliased
 * `s`; the whole row cost a 24-column read and object per move), its plan's status, and with the
 * roll-up's reads the first other open regular step (newest first, as `hasOpenSteps`) and the
 * status of `<plan>-REVIEW` (the id rule of ledger/ids.ts `reviewStepId`).
 */
const STEP_FOR_MOVE = `SELECT ${MOVE_STEP_COLUMNS.map((c) => `s.${c}`).join(", ")}, (SELECT status FROM plans WHERE plan_id = s.plan_id)`;
const STEP_FOR_MOVE_ROLLUP = `${STEP_FOR_MOVE}, (SELECT 1 FROM steps o WHERE o.plan_id = s.plan_id AND o.role = 'regular' AND o.step_id <> s.step_id AND (o.status = 'PENDING' OR o.status = 'IN_PROGRESS' OR o.status = 'NEEDS_REVIEW') ORDER BY o.rowid DESC LIMIT 1), (SELECT status FROM steps WHERE step_id = s.plan_id || '-REVIEW')`;
/**
 * The two move reads whole, built once (a statement is looked up by its text: a text built per
 * call is hashed per call). The step's rowid comes last: the move's update then finds the row by
 * it (see {@link SqliteStore.updateStep}).
 */
const MOVE_READ = `${STEP_FOR_MOVE}, s.rowid FROM steps s WHERE s.step_id = ?`;
const MOVE_READ_ROLLUP = `${STEP_FOR_MOVE_ROLLUP}, s.rowid FROM steps s WHERE s.step_id = ?`;
const GET_STEP = `${STEP_SELECT} WHERE step_id = ?`;
const EVENT_FIELDS = "id, at, entity_kind, entity_id, plan_id, type, payload";
/** Run starts of a plan's events read per statement (sqlite-store.ts, #planEvents). */
const RUN_STARTS_PAGE = 256;
/** An event row read in raw mode, in {@link EVENT_FIELDS} order. */
type EventTuple = [number, string, string, string, string | null, string, string];

/**
 * The bytes a value takes in a row, as {@link storedSize} counts them in SQL: text and blobs their
 * length, numbers 8 (their largest encoding), NULL nothing.
 */
function byteSize(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === "string") return Buffer.byteLength(v);
  if (v instanceof Uint8Array) return v.byteLength;
  return 8;
}
/** {@link byteSize} of a stored column, in SQL. */
const storedSize = (col: string): string =>
  `CASE typeof(${col}) WHEN 'null' THEN 0 WHEN 'text' THEN length(CAST(${col} AS BLOB)) WHEN 'blob' THEN length(${col}) ELSE 8 END`;
/** Bytes of slack per changed column: record-header varints and integers smaller than 8 bytes. */
const RESERVE_MARGIN_PER_COLUMN = 2;

/**
 * A statement read in raw mode (arrays) with its rows built here. better-sqlite3's object rows
 * create every column's key anew per row, which costs more than the lookup itself for a wide row
 * (a step has 24 columns); the objects built here have the same keys in the same order.
 */
interface RowReader<R> {
  get(...params: unknown[]): R | undefined;
  all(...params: unknown[]): R[];
}

function rowReader<R>(stmt: Statement): RowReader<R> {
  stmt.raw(true);
  const cols = stmt.columns().map((c) => c.name);
  const n = cols.length;
  const build = (r: unknown[]): R => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) o[cols[i] as string] = r[i];
    return o as R;
  };
  return {
    get: (...params) => {
      const r = stmt.get(...params) as unknown[] | undefined;
      return r === undefined ? undefined : build(r);
    },
    all: (...params) => (stmt.all(...params) as unknown[][]).map(build),
  };
}

/** Each column's position in its table, for {@link SqliteStore}'s update cache keys. */
const columnIndex = (cols: readonly string[]): Record<string, number> =>
  Object.fromEntries(cols.map((c, i) => [c, i]));
const STEP_INDEX = columnIndex(STEP_COLUMNS);
const PLAN_INDEX = columnIndex(PLAN_COLUMNS);

/** The SQLite implementation of {@link Store} (better-sqlite3, WAL, `BEGIN IMMEDIATE`). */
export class SqliteStore implements Store {
  readonly db: SqliteDb;
  #sql?: SqlPort;
  readonly #stmts = new Map<string, Statement>();
  readonly #readers = new Map<string, RowReader<unknown>>();
  readonly #stepUpdates = new Map<number | string, Statement>();
  readonly #planUpdates = new Map<number | string, Statement>();
  readonly #plucks = new Map<string, Statement>();
  readonly #raws = new Map<string, Statement>();
  readonly #now: () => string;

  constructor(db: SqliteDb, now: () => string = () => iso(Date.now())) {
    this.db = db;
    this.#now = now;
  }

  get sql(): SqlPort {
    this.#sql ??= new SqliteSqlPort(this.db);
    return this.#sql;
  }

  /**
   * Opens the store at `path` (creating it when `create`). `checkpoint: "background"` (resident
   * processes: the daemon, `ratchet serve`) moves the WAL checkpoint off this connection's path
   * onto a worker thread with its own connection, at the same WAL size; this connection's
   * autocheckpoint stays on at {@link SAFETY_NET_FACTOR} times that size, and back at it if the
   * worker dies (said once through `log`, stderr by default). Short processes keep the default
   * (`"writer"`): a thread's start costs them more than it saves.
   */
  static open(
    path: string,
    opts: { create?: boolean; checkpoint?: CheckpointMode; log?: (line: string) => void } = {},
  ): SqliteStore {
    const store = new SqliteStore(openSqlite(path, opts));
    if (opts.checkpoint === "background" && path !== ":memory:") store.#startCheckpointer(opts.log);
    return store;
  }

  #checkpointer?: Checkpointer;

  /** The background checkpointer, when the store was opened with one and it still runs. */
  get checkpointer(): Checkpointer | undefined {
    return this.#checkpointer;
  }

  #startCheckpointer(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): void {
    const frames = checkpointFrames(this.db);
    this.db.pragma(`wal_autocheckpoint = ${frames * SAFETY_NET_FACTOR}`);
    try {
      this.#checkpointer = new Checkpointer(this.db.name, frames, (why) => {
        if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${frames}`);
        log(
          `ratchet: the background WAL checkpoint stopped (${why}); this connection checkpoints itself from now on`,
        );
      });
    } catch (err) {
      this.db.pragma(`wal_autocheckpoint = ${frames}`);
      log(
        `ratchet: the background WAL checkpoint did not start (${(err as Error).message}); this connection checkpoints itself`,
      );
    }
  }

  #stmt(sql: string): Statement {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  /** A cached statement returning its first column only. */
  #pluck(sql: string): Statement {
    let s = this.#plucks.get(sql);
    if (!s) {
      s = this.db.prepare(sql).pluck(true);
      this.#plucks.set(sql, s);
    }
    return s;
  }

  /** A cached raw-mode statement (rows as arrays). */
  #raw(sql: string): Statement {
    let s = this.#raws.get(sql);
    if (!s) {
      s = this.db.prepare(sql).raw(true);
      this.#raws.set(sql, s);
    }
    return s;
  }

  /** A cached raw-mode statement whose rows are built by {@link rowReader} (hot row reads). */
  #rows<R>(sql: string): RowReader<R> {
    let r = this.#readers.get(sql);
    if (!r) {
      r = rowReader(this.db.prepare(sql));
      this.#readers.set(sql, r);
    }
    return r as RowReader<R>;
  }

  /** One compiled transaction wrapper, reused: `db.transaction()` per call costs more than the write. */
  readonly #txRunner = (fn: () => unknown) => fn();
  #tx?: ReturnType<SqliteDb["transaction"]>;

  /** Whether a transaction of {@link tx} is open (what {@link stepForMove} records is valid in it). */
  #ownTx = false;
  /** The step the last {@link stepForMove} of this transaction read, with its rowid. */
  #moveRow: { id: string; rowid: number } | undefined;

  tx<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    this.#tx ??= this.db.transaction(this.#txRunner);
    this.#ownTx = true;
    try {
      return this.#tx.immediate(fn) as T;
    } finally {
      this.#ownTx = false;
      this.#moveRow = undefined;
    }
  }

  #requireTx(what: string): void {
    if (!this.db.inTransaction) {
      throw new RatchetError(ErrorCode.Internal, `${what} must run inside a store transaction`);
    }
  }

  appendEvent(e: NewEvent): number {
    this.#requireTx("appendEvent");
    // plan_run_start (migration 13): 1 when the event before this one (the highest id, read under
    // the write lock) belongs to another plan, so only the first event of a run is indexed.
    const planId = e.planId ?? null;
    const r = this.#stmt(
      "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload, plan_run_start) VALUES (?, ?, ?, ?, ?, ?, CASE WHEN ? IS NULL THEN 0 ELSE coalesce((SELECT plan_id IS NOT ? FROM events ORDER BY id DESC LIMIT 1), 1) END)",
    ).run(
      this.#now(),
      e.entityKind,
      e.entityId,
      planId,
      e.type,
      JSON.stringify(e.payload ?? {}),
      planId,
      planId,
    );
    return Number(r.lastInsertRowid);
  }

  listEvents(q: EventQuery): EventRow[] {
    if (q.planId) return this.#planEvents(q.planId, q);
    const where: string[] = ["id > @since"];
    if (q.entityKind) where.push("entity_kind = @entityKind");
    if (q.entityId) where.push("entity_id = @entityId");
    const sql = `SELECT ${EVENT_FIELDS} FROM events WHERE ${where.join(" AND ")} ORDER BY id LIMIT @limit`;
    return this.#stmt(sql).all({
      since: q.since ?? 0,
      entityKind: q.entityKind,
      entityId: q.entityId,
      limit: q.limit ?? 1000,
    }) as EventRow[];
  }

  /**
   * A plan's events after `since`, run by run (migration 13). The partial index holds the first
   * event of each run of consecutive events of the plan; a run's other events follow it in id
   * order, up to the first event of another plan or the plan's next run. The runs read are the one
   * holding `since + 1` and those after it, each from `since + 1` at the earliest, so a live tail
   * reads only what is new.
   */
  #planEvents(planId: string, q: EventQuery): EventRow[] {
    const since = q.since ?? 0;
    const limit = q.limit ?? 1000;
    const first = this.#pluck(
      "SELECT id FROM events WHERE plan_id = ? AND plan_run_start = 1 AND id <= ? ORDER BY id DESC LIMIT 1",
    ).get(planId, since) as number | undefined;
    // Run starts are read a page at a time: an interleaved plan has many runs.
    const page = this.#pluck(
      `SELECT id FROM events WHERE plan_id = ? AND plan_run_start = 1 AND id >= ? ORDER BY id LIMIT ${RUN_STARTS_PAGE}`,
    );
    const scan = this.#raw(`SELECT ${EVENT_FIELDS} FROM events WHERE id >= ? ORDER BY id`);
    const out: EventRow[] = [];
    let starts = page.all(planId, first ?? 0) as number[];
    for (let i = 0; i < starts.length && out.length < limit; i++) {
      if (i === RUN_STARTS_PAGE - 1) {
        // The last start of a full page: the next page begins with it.
        starts = page.all(planId, starts[i]) as number[];
        i = 0;
      }
      const next = starts[i + 1] ?? Number.POSITIVE_INFINITY;
      const from = Math.max(starts[i] as number, since + 1);
      if (from >= next) continue;
      for (const r of scan.iterate(from) as IterableIterator<EventTuple>) {
        const [id, at, entity_kind, entity_id, plan_id, type, payload] = r;
        if (id >= next || plan_id !== planId) break;
        if ((q.entityKind && entity_kind !== q.entityKind) || (q.entityId && entity_id !== q.entityId))
          continue;
        out.push({ id, at, entity_kind, entity_id, plan_id, type, payload });
        if (out.length >= limit) break;
      }
    }
    return out;
  }

  lastEventId(): number {
    const r = this.#stmt("SELECT COALESCE(MAX(id), 0) AS id FROM events").get() as { id: number };
    return r.id;
  }

  insertPlan(p: PlanRow): void {
    this.#requireTx("insertPlan");
    this.#stmt(INSERT_PLAN).run({
      user_query: null,
      abandon_reason: null,
      review_state: null,
      review_skip_reason: null,
      extensions: null,
      ...p,
    });
  }

  getPlan(planId: string): PlanRow | undefined {
    return this.#rows<PlanRow>("SELECT * FROM plans WHERE plan_id = ?").get(planId);
  }

  /**
   * Updates one row; `updated_at` is now unless the patch sets it. `key` `rowid` finds the row by
   * `id` and checks `checkId` against the step's `step_id` too.
   */
  #update(
    table: "steps" | "plans",
    key: string,
    id: string | number,
    patch: Record<string, unknown>,
    checkId?: string,
  ): void {
    this.#requireTx(`update ${table}`);
    // Positional parameters, the statement cached by its column list (named ones cost a lookup
    // each), the list keyed by a number: the columns' positions in the table, in the patch's order,
    // as base-32 digits (exact up to 10 columns; a longer list is keyed by its text).
    const index = table === "steps" ? STEP_INDEX : PLAN_INDEX;
    const cols: string[] = [];
    const params: unknown[] = [];
    let stamped = false;
    let sig = key === "rowid" ? 1 : 2;
    for (const k in patch) {
      let v = patch[k];
      if (k === "updated_at") {
        v ??= this.#now();
        stamped = true;
      } else if (v === undefined) continue;
      cols.push(k);
      params.push(v);
      sig = sig * 32 + (index[k] ?? 31);
    }
    if (!stamped) {
      cols.push("updated_at");
      params.push(this.#now());
      sig = sig * 32 + (index.updated_at as number);
    }
    const reserve = table === "steps";
    const cache = reserve ? this.#stepUpdates : this.#planUpdates;
    const sigKey: number | string = cols.length <= 10 ? sig : `${key}|${cols.join(",")}`;
    let stmt = cache.get(sigKey);
    if (!stmt) {
      const set = cols.map((c) => `${c} = ?`);
      // A step's row keeps its size while its reserve lasts (migration 13): the reserve shrinks by
      // what the changed columns grow and grows by what they shrink (sizes of the old values here,
      // of the new ones bound), less a margin; a step that finishes gives its reserve back.
      if (reserve)
        set.push(
          `reserve = CASE WHEN reserve IS NULL OR ? IS NOT NULL THEN NULL ELSE zeroblob(max(0, length(reserve) + ${cols.map(storedSize).join(" + ")} - ?)) END`,
        );
      const where = key === "rowid" ? "rowid = ? AND step_id = ?" : `${key} = ?`;
      stmt = this.db.prepare(`UPDATE ${table} SET ${set.join(", ")} WHERE ${where}`);
      cache.set(sigKey, stmt);
    }
    if (reserve) {
      let grown = RESERVE_MARGIN_PER_COLUMN * (cols.length + 1);
      for (const v of params) grown += byteSize(v);
      params.push(patch.finished_at ?? null, grown);
    }
    params.push(id);
    if (key === "rowid") params.push(checkId);
    const r = stmt.run(params);
    if (r.changes !== 1)
      throw new RatchetError(
        ErrorCode.Internal,
        `update of ${table} ${checkId ?? id} changed ${r.changes} rows`,
      );
  }

  updatePlan(planId: string, patch: PlanPatch): void {
    this.#update("plans", "plan_id", planId, patch);
  }

  listPlans(q: PlanQuery): PlanRow[] {
    const where: string[] = [];
    if (q.status) where.push("status = @status");
    if (q.kind) where.push("kind = @kind");
    if (q.before) where.push("(created_at < @bc OR (created_at = @bc AND plan_id < @bp))");
    const sql = `SELECT * FROM plans ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, plan_id DESC LIMIT @limit`;
    return this.#stmt(sql).all({
      status: q.status,
      kind: q.kind,
      bc: q.before?.created_at,
      bp: q.before?.plan_id,
      limit: q.limit ?? 50,
    }) as PlanRow[];
  }

  insertStep(s: StepRow): void {
    this.#requireTx("insertStep");
    this.#stmt(INSERT_STEP).run(s);
  }

  getStep(stepId: string): StepRow | undefined {
    const r = this.#raw(GET_STEP).get(stepId) as unknown[] | undefined;
    return r === undefined ? undefined : stepFrom(r);
  }

  updateStep(stepId: string, patch: StepPatch): void {
    // The step stepForMove read in this transaction is found by its rowid (one b-tree search, not
    // the step_id index and then the table); `step_id` is checked on the row all the same.
    const m = this.#moveRow;
    if (m !== undefined && m.id === stepId && this.#ownTx)
      this.#update("steps", "rowid", m.rowid, patch, stepId);
    else this.#update("steps", "step_id", stepId, patch);
  }

  stepsOfPlan(planId: string): StepRow[] {
    return (this.#raw(`${STEP_SELECT} WHERE plan_id = ? ORDER BY depth, seq`).all(planId) as unknown[][]).map(
      stepFrom,
    );
  }

  stepStatesOfPlan(planId: string): StepStateRow[] {
    // The roll-up's read: four columns per step instead of the whole row (a closing plan's 21 rows
    // of 24 columns as JavaScript values cost more than the rest of its transaction).
    const rows = this.#raw(
      "SELECT step_id, parent_step_id, role, status FROM steps WHERE plan_id = ? ORDER BY depth, seq",
    ).all(planId) as [string, string | null, string, string][];
    const out: StepStateRow[] = [];
    for (const r of rows)
      out.push({ step_id: r[0], parent_step_id: r[1], role: r[2], status: r[3] } as StepStateRow);
    return out;
  }

  childrenOf(stepId: string): StepRow[] {
    return (this.#raw(`${STEP_SELECT} WHERE parent_step_id = ? ORDER BY seq`).all(stepId) as unknown[][]).map(
      stepFrom,
    );
  }

  countOpenSteps(planId: string): number {
    const r = this.#stmt(
      "SELECT COUNT(*) AS n FROM steps WHERE plan_id = ? AND role = 'regular' AND status IN ('PENDING', 'IN_PROGRESS', 'NEEDS_REVIEW')",
    ).get(planId) as { n: number };
    return r.n;
  }

  hasOpenSteps(planId: string): boolean {
    // Newest rows first (steps_plan read backwards, no sort): plans are worked front to back, so an
    // open step is usually among the last inserted, and the scan stops at the first one. ORs, not
    // `IN (…)`: SQLite builds a temporary table for an IN list on every run (5.2 µs against 3.3).
    return (
      this.#stmt(
        "SELECT 1 FROM steps WHERE plan_id = ? AND role = 'regular' AND (status = 'PENDING' OR status = 'IN_PROGRESS' OR status = 'NEEDS_REVIEW') ORDER BY rowid DESC LIMIT 1",
      ).get(planId) !== undefined
    );
  }

  stepStatus(stepId: string): string | undefined {
    return this.#pluck("SELECT status FROM steps WHERE step_id = ?").get(stepId) as string | undefined;
  }

  planStatus(planId: string): string | undefined {
    return this.#pluck("SELECT status FROM plans WHERE plan_id = ?").get(planId) as string | undefined;
  }

  stepForMove(stepId: string, rollup: boolean): StepForMove | undefined {
    const r = this.#raw(rollup ? MOVE_READ_ROLLUP : MOVE_READ).get(stepId) as unknown[] | undefined;
    if (r === undefined) return undefined;
    const n = MOVE_STEP_COLUMNS.length;
    // Inside this store's transaction the row cannot move (the write lock is held; only a VACUUM,
    // outside any transaction, renumbers rowids): the update of this step finds it by its rowid.
    if (this.#ownTx) this.#moveRow = { id: stepId, rowid: r[rollup ? n + 3 : n + 1] as number };
    return {
      step: {
        step_id: r[0],
        plan_id: r[1],
        status: r[2],
        type: r[3],
        role: r[4],
        started_at: r[5],
      } as MoveStepRow,
      planStatus: (r[n] ?? undefined) as string | undefined,
      othersOpen: rollup && r[n + 1] === 1,
      reviewStatus: rollup ? ((r[n + 2] ?? undefined) as string | undefined) : undefined,
    };
  }

  releaseLeases(planId: string): number {
    this.#requireTx("releaseLeases");
    return this.#stmt(
      "UPDATE steps SET lease_holder = NULL, lease_expires_at = NULL WHERE plan_id = ? AND lease_expires_at IS NOT NULL",
    ).run(planId).changes;
  }

  expiredLeases(nowMs: number, planId?: string): StepRow[] {
    // Only open plans can hold a live lease: walk them (plans_status) and their steps (steps_plan),
    // so the cost follows the work in flight, not the size of the store.
    const sql = planId
      ? `${STEP_SELECT} WHERE plan_id = ? AND status = 'IN_PROGRESS' AND lease_expires_at IS NOT NULL AND lease_expires_at < ? ORDER BY lease_expires_at`
      : `SELECT ${STEP_COLUMNS.map((c) => `s.${c}`).join(", ")} FROM plans p JOIN steps s ON s.plan_id = p.plan_id WHERE p.status = 'IN_PROGRESS' AND s.status = 'IN_PROGRESS' AND s.lease_expires_at IS NOT NULL AND s.lease_expires_at < ? ORDER BY s.lease_expires_at`;
    return (planId ? this.#stmt(sql).all(planId, nowMs) : this.#stmt(sql).all(nowMs)) as StepRow[];
  }

  insertLog(l: Omit<StepLogRow, "id">): number {
    this.#requireTx("insertLog");
    const r = this.#stmt(
      "INSERT INTO step_logs (step_id, plan_id, at, kind, text, bytes, truncated, blob) VALUES (@step_id, @plan_id, @at, @kind, @text, @bytes, @truncated, @blob)",
    ).run(l);
    return Number(r.lastInsertRowid);
  }

  logsOfStep(stepId: string): StepLogRow[] {
    return this.#stmt("SELECT * FROM step_logs WHERE step_id = ? ORDER BY id").all(stepId) as StepLogRow[];
  }

  logsOfPlan(planId: string): StepLogRow[] {
    return this.#stmt("SELECT * FROM step_logs WHERE plan_id = ? ORDER BY id").all(planId) as StepLogRow[];
  }

  insertDeviation(d: Omit<DeviationRow, "id">): number {
    this.#requireTx("insertDeviation");
    const r = this.#stmt(
      "INSERT INTO deviations (plan_id, kind, parent_step_id, justification, sub_step_ids, old_max, new_max, created_at) VALUES (@plan_id, @kind, @parent_step_id, @justification, @sub_step_ids, @old_max, @new_max, @created_at)",
    ).run(d);
    return Number(r.lastInsertRowid);
  }

  deviationsOfPlan(planId: string): DeviationRow[] {
    return this.#stmt("SELECT * FROM deviations WHERE plan_id = ? ORDER BY id").all(planId) as DeviationRow[];
  }

  insertSkill(s: Omit<SkillRow, "id">): number {
    this.#requireTx("insertSkill");
    const r = this.#stmt(
      "INSERT INTO skills (plan_id, step_id, name, source, reason, created_at) VALUES (@plan_id, @step_id, @name, @source, @reason, @created_at)",
    ).run(s);
    return Number(r.lastInsertRowid);
  }

  skillsOfPlan(planId: string): SkillRow[] {
    return this.#stmt("SELECT * FROM skills WHERE plan_id = ? ORDER BY id").all(planId) as SkillRow[];
  }

  insertMetric(m: Omit<MetricRow, "id">): number {
    this.#requireTx("insertMetric");
    const r = this.#stmt(
      "INSERT INTO metrics (name, value, unit, project, plan_id, step_id, created_at, source) VALUES (@name, @value, @unit, @project, @plan_id, @step_id, @created_at, @source)",
    ).run({ source: null, ...m });
    return Number(r.lastInsertRowid);
  }

  metricsOfPlan(planId: string): MetricRow[] {
    return this.#stmt("SELECT * FROM metrics WHERE plan_id = ? ORDER BY id").all(planId) as MetricRow[];
  }

  addProject(p: ProjectRow): void {
    this.#requireTx("addProject");
    this.#stmt(
      "INSERT INTO projects (name, repo_path, created_at) VALUES (@name, @repo_path, @created_at)",
    ).run(p);
  }

  getProject(name: string): ProjectRow | undefined {
    return this.#stmt("SELECT * FROM projects WHERE name = ?").get(name) as ProjectRow | undefined;
  }

  projectForRepo(repoPath: string): ProjectRow | undefined {
    return this.#stmt("SELECT * FROM projects WHERE repo_path = ?").get(repoPath) as ProjectRow | undefined;
  }

  listProjects(): ProjectRow[] {
    return this.#stmt("SELECT * FROM projects ORDER BY name").all() as ProjectRow[];
  }

  integrityCheck(): string {
    const rows = this.db.pragma("integrity_check") as { integrity_check: string }[];
    return rows.map((r) => r.integrity_check).join("\n");
  }

  close(): void {
    // The worker's connection closes first: the writer's close is then the file's last, and it
    // checkpoints and removes the WAL as before.
    this.#checkpointer?.stop();
    this.db.close();
  }
}

/** Who runs a SQLite store's WAL checkpoints ({@link SqliteStore.open}). */
export type CheckpointMode = "writer" | "background";
