/**
 * How the reasons area reaches a project's node source. The readers depend on the `NodeSource`
 * contract only (types.ts); `nodeSourceFor(store)` returns the one in use. Until the analyzer's
 * source (`nodes/`) is wired in with `useNodeSource`, the default is {@link RowNodeSource}: a
 * read-only source over the recorded `prov_node_*` rows (the tables are fixed by migration 10),
 * which is all reason-slots, reason-fill and the close need — they never refresh.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { SqliteDb, SqliteStore } from "../../store/index.js";
import type { ChangedNode, NodeEvent, NodeSnapshot, NodeSource } from "../types.js";

/** Events that make a node one of the plan's reason slots (node_changed only with struct_sig). */
const SLOT_EVENTS = new Set(["node_added", "node_removed", "node_changed"]);

interface EventRow {
  run_id: number;
  seq: number;
  event_type: string;
  node_key: string;
  payload: string;
}

function parsePayload(s: string): Record<string, unknown> {
  try {
    const v = JSON.parse(s) as unknown;
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Whether an event makes its node a reason slot (§2.2). */
export function isSlotEvent(e: { event_type: string; payload: Record<string, unknown> }): boolean {
  if (!SLOT_EVENTS.has(e.event_type)) return false;
  if (e.event_type !== "node_changed") return true;
  const changed = e.payload.changed;
  return Array.isArray(changed) && changed.includes("struct_sig");
}

/** A read-only node source over the recorded runs, snapshots and events. */
export class RowNodeSource implements NodeSource {
  readonly #db: SqliteDb;

  constructor(store: SqliteStore) {
    this.#db = store.db;
  }

  hasGraph(project: string): boolean {
    return (
      this.#db.prepare("SELECT 1 FROM prov_analysis_runs WHERE project = ? LIMIT 1").get(project) !==
      undefined
    );
  }

  refresh(): never {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      "this node source only reads recorded runs: refresh through the analyzer (`nodes/`)",
    );
  }

  #events(planId: string): (NodeEvent & { run_id: number })[] {
    const rows = this.#db
      .prepare(
        `SELECT e.run_id, e.seq, e.event_type, e.node_key, e.payload FROM prov_node_events e
           JOIN prov_analysis_runs r ON r.id = e.run_id WHERE r.plan_id = ? ORDER BY e.run_id, e.seq`,
      )
      .all(planId) as EventRow[];
    return rows.map((r) => ({ ...r, payload: parsePayload(r.payload) }));
  }

  #nodes(planId: string, keep: (e: NodeEvent) => boolean): ChangedNode[] {
    const byKey = new Map<string, ChangedNode>();
    for (const e of this.#events(planId)) {
      if (!keep(e)) continue;
      const n = byKey.get(e.node_key);
      if (n) {
        if (!n.event_types.includes(e.event_type)) n.event_types.push(e.event_type);
        n.run_id = Math.max(n.run_id, e.run_id);
      } else {
        byKey.set(e.node_key, {
          node_key: e.node_key,
          qualified_name: e.node_key,
          node_type: "unknown",
          event_types: [e.event_type],
          run_id: e.run_id,
        });
      }
    }
    const snap = this.#db.prepare(
      "SELECT * FROM prov_node_snapshots WHERE node_key = ? ORDER BY run_id DESC LIMIT 1",
    );
    for (const n of byKey.values()) {
      const s = snap.get(n.node_key) as NodeSnapshot | undefined;
      if (s) {
        n.qualified_name = s.qualified_name;
        n.node_type = s.node_type;
      }
    }
    return [...byKey.values()];
  }

  changedNodes(planId: string): ChangedNode[] {
    return this.#nodes(planId, isSlotEvent);
  }

  touchedNodes(planId: string): ChangedNode[] {
    return this.#nodes(planId, () => true);
  }

  resolve(project: string, target: string): NodeSnapshot | undefined {
    const q = `SELECT s.* FROM prov_node_snapshots s JOIN prov_analysis_runs r ON r.id = s.run_id
                WHERE r.project = ? AND s.${target.startsWith("nk_") ? "node_key" : "qualified_name"} = ?
                ORDER BY s.run_id DESC LIMIT 1`;
    return this.#db.prepare(q).get(project, target) as NodeSnapshot | undefined;
  }

  history(nodeKey: string): NodeEvent[] {
    const rows = this.#db
      .prepare(
        "SELECT run_id, seq, event_type, node_key, payload FROM prov_node_events WHERE node_key = ? ORDER BY run_id, seq",
      )
      .all(nodeKey) as EventRow[];
    return rows.map((r) => ({ ...r, payload: parsePayload(r.payload) }));
  }
}

type Factory = (store: SqliteStore) => NodeSource;
let factory: Factory = (store) => new RowNodeSource(store);

/** The node source the reasons area reads (the analyzer's once wired in, else the recorded rows). */
export function nodeSourceFor(store: SqliteStore): NodeSource {
  return factory(store);
}

/** Wires in a node source (the analyzer's, or a test's); returns a function restoring the previous one. */
export function useNodeSource(f: Factory): () => void {
  const prev = factory;
  factory = f;
  return () => {
    factory = prev;
  };
}
