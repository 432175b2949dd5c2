/**
 * The node source the headline and `why` read through. They depend on the `NodeSource` contract
 * only; until the node area (`nodes/`) registers its implementation with
 * {@link setNodeSourceFactory}, a read-only reader over the node tables of migration 10
 * (`prov_analysis_runs`, `prov_node_snapshots`, `prov_node_events`) stands in. It cannot refresh.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { SqliteDb, SqliteStore } from "../../store/index.js";
import type { ChangedNode, NodeEvent, NodeSnapshot, NodeSource } from "../types.js";

/** `file:line` targets (spec §7). */
export const FILE_LINE = /^([^\s:]+\.[A-Za-z0-9]+):(\d+)$/;

type Factory = (store: SqliteStore) => NodeSource;
let factory: Factory = (store) => new TableNodeSource(store.db);

/** Lets the node area plug in its `NodeSource` (called once at startup by whoever owns it). */
export function setNodeSourceFactory(f: Factory): void {
  factory = f;
}

/** The node source of `store` (the registered one, else the table reader). */
export function nodeSourceFor(store: SqliteStore): NodeSource {
  return factory(store);
}

interface EventRow {
  run_id: number;
  seq: number;
  event_type: string;
  node_key: string;
  payload: string;
}

const toEvent = (r: EventRow): NodeEvent => ({
  run_id: r.run_id,
  seq: r.seq,
  event_type: r.event_type,
  node_key: r.node_key,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
});

/** A read-only `NodeSource` over the node tables (snapshots written by whichever analyzer ran). */
export class TableNodeSource implements NodeSource {
  constructor(private readonly db: SqliteDb) {}

  hasGraph(project: string): boolean {
    return (
      this.db.prepare("SELECT 1 FROM prov_analysis_runs WHERE project = ? LIMIT 1").get(project) !== undefined
    );
  }

  refresh(): never {
    throw new RatchetError(
      ErrorCode.NoStateGraph,
      "no state graph: this node source only reads recorded runs",
    );
  }

  #nodes(planId: string, changedOnly: boolean): ChangedNode[] {
    const rows = this.db
      .prepare(
        `SELECT e.run_id, e.event_type, e.node_key, e.payload FROM prov_node_events e
         JOIN prov_analysis_runs r ON r.id = e.run_id WHERE r.plan_id = ? ORDER BY e.run_id, e.seq`,
      )
      .all(planId) as EventRow[];
    const byKey = new Map<string, ChangedNode>();
    for (const r of rows) {
      if (changedOnly) {
        const changed = (JSON.parse(r.payload) as { changed?: unknown }).changed;
        const structural = Array.isArray(changed) && changed.includes("struct_sig");
        if (
          !(
            r.event_type === "node_added" ||
            r.event_type === "node_removed" ||
            (r.event_type === "node_changed" && structural)
          )
        )
          continue;
      }
      const snap = this.#newest(r.node_key);
      const cur = byKey.get(r.node_key) ?? {
        node_key: r.node_key,
        qualified_name: snap?.qualified_name ?? r.node_key,
        node_type: snap?.node_type ?? "function",
        event_types: [],
        run_id: r.run_id,
      };
      if (!cur.event_types.includes(r.event_type)) cur.event_types.push(r.event_type);
      cur.run_id = Math.max(cur.run_id, r.run_id);
      byKey.set(r.node_key, cur);
    }
    return [...byKey.values()];
  }

  changedNodes(planId: string): ChangedNode[] {
    return this.#nodes(planId, true);
  }

  touchedNodes(planId: string): ChangedNode[] {
    return this.#nodes(planId, false);
  }

  #newest(nodeKey: string): NodeSnapshot | undefined {
    return this.db
      .prepare("SELECT * FROM prov_node_snapshots WHERE node_key = ? ORDER BY run_id DESC LIMIT 1")
      .get(nodeKey) as NodeSnapshot | undefined;
  }

  resolve(project: string, target: string): NodeSnapshot | undefined {
    const run = this.db
      .prepare("SELECT max(id) AS id FROM prov_analysis_runs WHERE project = ?")
      .get(project) as { id: number | null };
    if (run.id === null) return undefined;
    const fl = FILE_LINE.exec(target);
    if (fl) {
      return this.db
        .prepare(
          `SELECT * FROM prov_node_snapshots WHERE run_id = ? AND file_path = ? AND line_start <= ? AND line_end >= ?
           ORDER BY line_start DESC, line_end ASC LIMIT 1`,
        )
        .get(run.id, fl[1], Number(fl[2]), Number(fl[2])) as NodeSnapshot | undefined;
    }
    const col = target.startsWith("nk_") ? "node_key" : "qualified_name";
    // Newest snapshot of the project that carries it (a removed node keeps its last one).
    return this.db
      .prepare(
        `SELECT s.* FROM prov_node_snapshots s JOIN prov_analysis_runs r ON r.id = s.run_id
         WHERE r.project = ? AND s.${col} = ? ORDER BY s.run_id DESC LIMIT 1`,
      )
      .get(project, target) as NodeSnapshot | undefined;
  }

  history(nodeKey: string): NodeEvent[] {
    return (
      this.db
        .prepare("SELECT * FROM prov_node_events WHERE node_key = ? ORDER BY run_id, seq")
        .all(nodeKey) as EventRow[]
    ).map(toEvent);
  }
}
