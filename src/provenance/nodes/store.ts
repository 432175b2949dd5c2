/**
 * The node source's SQL, behind `NodeStore`, written once through the store's SQL door (SQLite and
 * PostgreSQL):
 * analysis runs, node snapshots, identity events (migration 10) and the parse cache (migration 11).
 */
import type { SqlParam, SqlPort } from "../../store/sql.js";
import type { SqlHome } from "../db.js";
import { insertRow } from "../rows.js";
import type { AnalysisRunRow, NodeEvent, NodeSnapshot } from "../types.js";
import type { FileFacts } from "./facts.js";

export interface NewRun {
  project: string;
  plan_id: string | null;
  step_id: string | null;
  trigger: string;
  commit_sha: string | null;
  created_at: string;
}

export interface NodeStore {
  /** Runs `fn` in one write transaction. */
  tx<T>(fn: () => T): T;
  latestRun(project: string): AnalysisRunRow | undefined;
  getRun(runId: number): AnalysisRunRow | undefined;
  insertRun(run: NewRun): AnalysisRunRow;
  snapshotsOf(runId: number): NodeSnapshot[];
  insertSnapshots(rows: readonly NodeSnapshot[]): void;
  insertEvents(rows: readonly NodeEvent[]): void;
  /** Runs attributed to a plan, oldest first. */
  runsOfPlan(planId: string): AnalysisRunRow[];
  eventsOfRuns(runIds: readonly number[]): NodeEvent[];
  /** The newest snapshot of a key (any run of any project). */
  newestOfKey(nodeKey: string): NodeSnapshot | undefined;
  /** The newest snapshot of a project with this qualified name. */
  newestOfName(project: string, qualifiedName: string): NodeSnapshot | undefined;
  /** Nodes of a run whose range covers a file's line, innermost first. */
  atLine(runId: number, filePath: string, line: number): NodeSnapshot[];
  /** Every event of a key, oldest first. */
  eventsOfKey(nodeKey: string): NodeEvent[];
  /** The newest snapshot of each key of a project whose symbol's local name is `local` (`….local`, `….local#n`). */
  newestOfLocalName(project: string, local: string): NodeSnapshot[];
  cacheGet(keys: readonly string[]): Map<string, FileFacts>;
  cachePut(entries: ReadonlyMap<string, FileFacts>, at: string): void;
}

/** Rows per multi-row statement (9 columns × 200 stays far below either store's parameter limit). */
const INSERT_BATCH = 200;

type EventRow = Omit<NodeEvent, "payload"> & { payload: string };
const toEvent = (r: EventRow): NodeEvent => ({
  ...r,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
});

/** NodeStore over a store's SQL door (its `tx` is the ledger's write transaction). */
export class SqlNodeStore implements NodeStore {
  readonly #home: SqlHome;
  readonly #sql: SqlPort;

  constructor(home: SqlHome) {
    this.#home = home;
    this.#sql = home.sql;
  }

  tx<T>(fn: () => T): T {
    return this.#home.tx(fn);
  }

  latestRun(project: string): AnalysisRunRow | undefined {
    return this.#sql.get<AnalysisRunRow>(
      "SELECT * FROM prov_analysis_runs WHERE project = ? ORDER BY id DESC LIMIT 1",
      [project],
    );
  }

  getRun(runId: number): AnalysisRunRow | undefined {
    return this.#sql.get<AnalysisRunRow>("SELECT * FROM prov_analysis_runs WHERE id = ?", [runId]);
  }

  insertRun(run: NewRun): AnalysisRunRow {
    const id = insertRow(this.#sql, "prov_analysis_runs", { ...run });
    return { id, ...run };
  }

  snapshotsOf(runId: number): NodeSnapshot[] {
    return this.#sql.all<NodeSnapshot>(
      "SELECT * FROM prov_node_snapshots WHERE run_id = ? ORDER BY file_path, line_start, qualified_name",
      [runId],
    );
  }

  insertSnapshots(rows: readonly NodeSnapshot[]): void {
    const cols = [
      "run_id",
      "node_key",
      "node_type",
      "qualified_name",
      "file_path",
      "line_start",
      "line_end",
      "struct_sig",
      "dataflow_sig",
    ] as const;
    this.#insertMany(
      "prov_node_snapshots",
      cols,
      rows.map((r) => cols.map((c) => r[c])),
    );
  }

  insertEvents(rows: readonly NodeEvent[]): void {
    this.#insertMany(
      "prov_node_events",
      ["run_id", "seq", "event_type", "node_key", "payload"],
      rows.map((r) => [r.run_id, r.seq, r.event_type, r.node_key, JSON.stringify(r.payload)]),
    );
  }

  /**
   * Multi-row INSERTs of {@link INSERT_BATCH} rows each: one round trip per batch on PostgreSQL
   * (whose every statement crosses the sync bridge) instead of one per row; same rows on SQLite.
   */
  #insertMany(table: string, cols: readonly string[], rows: readonly SqlParam[][]): void {
    const one = `(${cols.map(() => "?").join(", ")})`;
    for (let i = 0; i < rows.length; i += INSERT_BATCH) {
      const batch = rows.slice(i, i + INSERT_BATCH);
      this.#sql.run(
        `INSERT INTO ${table} (${cols.join(", ")}) VALUES ${batch.map(() => one).join(", ")}`,
        batch.flat(),
      );
    }
  }

  runsOfPlan(planId: string): AnalysisRunRow[] {
    return this.#sql.all<AnalysisRunRow>("SELECT * FROM prov_analysis_runs WHERE plan_id = ? ORDER BY id", [
      planId,
    ]);
  }

  eventsOfRuns(runIds: readonly number[]): NodeEvent[] {
    if (runIds.length === 0) return [];
    const rows = this.#sql.all<EventRow>(
      `SELECT run_id, seq, event_type, node_key, payload FROM prov_node_events WHERE run_id IN (${runIds.map(() => "?").join(",")}) ORDER BY run_id, seq`,
      runIds,
    );
    return rows.map(toEvent);
  }

  newestOfKey(nodeKey: string): NodeSnapshot | undefined {
    return this.#sql.get<NodeSnapshot>(
      "SELECT * FROM prov_node_snapshots WHERE node_key = ? ORDER BY run_id DESC LIMIT 1",
      [nodeKey],
    );
  }

  newestOfName(project: string, qualifiedName: string): NodeSnapshot | undefined {
    return this.#sql.get<NodeSnapshot>(
      "SELECT s.* FROM prov_node_snapshots s JOIN prov_analysis_runs r ON r.id = s.run_id WHERE s.qualified_name = ? AND r.project = ? ORDER BY s.run_id DESC LIMIT 1",
      [qualifiedName, project],
    );
  }

  atLine(runId: number, filePath: string, line: number): NodeSnapshot[] {
    return this.#sql.all<NodeSnapshot>(
      "SELECT * FROM prov_node_snapshots WHERE run_id = ? AND file_path = ? AND line_start <= ? AND line_end >= ? ORDER BY line_start DESC, line_end ASC, qualified_name",
      [runId, filePath, line, line],
    );
  }

  eventsOfKey(nodeKey: string): NodeEvent[] {
    const rows = this.#sql.all<EventRow>(
      "SELECT run_id, seq, event_type, node_key, payload FROM prov_node_events WHERE node_key = ? ORDER BY run_id, seq",
      [nodeKey],
    );
    return rows.map(toEvent);
  }

  newestOfLocalName(project: string, local: string): NodeSnapshot[] {
    const esc = local.replace(/[\\%_]/g, (c) => `\\${c}`);
    // SQLite's LIKE ignores ASCII case; ILIKE is PostgreSQL's same match.
    const like = this.#sql.dialect === "postgres" ? "ILIKE" : "LIKE";
    return this.#sql.all<NodeSnapshot>(
      `SELECT s.* FROM prov_node_snapshots s JOIN prov_analysis_runs r ON r.id = s.run_id
         WHERE r.project = ? AND (s.qualified_name = ? OR s.qualified_name ${like} ? ESCAPE '\\' OR s.qualified_name ${like} ? ESCAPE '\\')
           AND s.run_id = (SELECT MAX(s2.run_id) FROM prov_node_snapshots s2 WHERE s2.node_key = s.node_key)
         ORDER BY s.node_key`,
      [project, local, `%.${esc}`, `%.${esc}#%`],
    );
  }

  cacheGet(keys: readonly string[]): Map<string, FileFacts> {
    const out = new Map<string, FileFacts>();
    for (let i = 0; i < keys.length; i += INSERT_BATCH) {
      const batch = keys.slice(i, i + INSERT_BATCH);
      const rows = this.#sql.all<{ cache_key: string; facts: string }>(
        `SELECT cache_key, facts FROM prov_node_cache WHERE cache_key IN (${batch.map(() => "?").join(", ")})`,
        batch,
      );
      for (const r of rows) out.set(r.cache_key, JSON.parse(r.facts) as FileFacts);
    }
    return out;
  }

  cachePut(entries: ReadonlyMap<string, FileFacts>, at: string): void {
    const list = [...entries];
    for (let i = 0; i < list.length; i += INSERT_BATCH) {
      const batch = list.slice(i, i + INSERT_BATCH);
      this.#sql.run(
        `INSERT INTO prov_node_cache (cache_key, facts, created_at) VALUES ${batch.map(() => "(?, ?, ?)").join(", ")} ON CONFLICT (cache_key) DO NOTHING`,
        batch.flatMap(([k, f]) => [k, JSON.stringify(f), at]),
      );
    }
  }
}
