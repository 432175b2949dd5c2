/**
 * `why` (spec §7): a node's history, constraints, rejected paths, reasons and prior claims — the
 * same bounded read as publish's headline — plus the listing modes `--pending`, `--never-read`
 * and `--search`. Every record printed in the target and search modes writes
 * `read_hit(moment=why)`; the listings (`pending`, `never-read`) write nothing.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { NodeSnapshot, NodeSource } from "../types.js";
import {
  type BoundedRead,
  boundedRead,
  type ReadRecord,
  recordsOf,
  shownIds,
  writeReadHits,
} from "./read.js";
import type { ReasonRow, WhyStore } from "./why-store.js";

export interface WhyQuery {
  project: string;
  target?: string;
  all?: boolean;
  budgetTokens?: number;
  pending?: boolean;
  neverRead?: boolean;
  search?: string;
  /** Write no read_hit (a read-only server). */
  noHits?: boolean;
}

export interface WhySummary {
  /** Callers at the project's newest run (the node source's call edges); null only from an older document. */
  downstream: number | null;
  history: number;
  constraints: number;
  active_constraints: number;
  rejected: number;
  reasons: number;
  pending: number;
}

export interface PendingRow {
  id: number;
  node_key: string | null;
  plan_id: string;
  occurred_at: string;
  state: string;
}

export type WhyResult =
  | {
      mode: "target";
      project: string;
      target: string;
      resolved: NodeSnapshot | null;
      summary: WhySummary | null;
      read: BoundedRead | null;
      records: ReadRecord[];
    }
  | {
      mode: "pending";
      project: string;
      target: string | null;
      resolved: NodeSnapshot | null;
      summary: { pending: number };
      records: PendingRow[];
    }
  | {
      mode: "never_read";
      project: string;
      target: null;
      resolved: null;
      summary: { never_read: number };
      records: ReadRecord[];
    }
  | {
      mode: "search";
      project: string;
      target: null;
      resolved: null;
      summary: { matches: number; method: "like" };
      words: string;
      records: ReadRecord[];
    };

const pendingRow = (r: ReasonRow): PendingRow => ({
  id: r.id,
  node_key: r.node_key,
  plan_id: r.plan_id,
  occurred_at: r.occurred_at,
  state: r.state,
});

/** Search results per call (`--all` lifts it). */
const SEARCH_LIMIT = 20;

/**
 * Answers one `why` query. Writes `read_hit` rows for the records it shows (the caller wraps it in
 * a write transaction).
 * @throws RatchetError `usage` (exit 2) without a target and without a mode flag.
 */
export function why(store: WhyStore, nodes: NodeSource, q: WhyQuery, at: string): WhyResult {
  const hit = (records: readonly ReadRecord[]) =>
    !q.noHits &&
    writeReadHits(
      store,
      records.map((r) => r.id),
      { project: q.project, plan_id: null, moment: "why", at },
    );
  if (q.pending) {
    const resolved = q.target !== undefined ? (nodes.resolve(q.project, q.target) ?? null) : null;
    const rows =
      q.target === undefined
        ? store.pending(q.project)
        : resolved
          ? store.pending(q.project, resolved.node_key)
          : [];
    return {
      mode: "pending",
      project: q.project,
      target: q.target ?? null,
      resolved,
      summary: { pending: rows.length },
      records: rows.map(pendingRow),
    };
  }
  if (q.neverRead) {
    const records = recordsOf(store, store.neverRead(q.project), "constraints");
    return {
      mode: "never_read",
      project: q.project,
      target: null,
      resolved: null,
      summary: { never_read: records.length },
      records,
    };
  }
  if (q.search !== undefined) {
    const rows = store.search(q.project, q.search, q.all ? 10_000 : SEARCH_LIMIT);
    const records = rows.map(
      (r) =>
        recordsOf(
          store,
          [r],
          r.role === "constraint" ? "constraints" : r.role === "rejected_path" ? "rejected" : "reasons",
        )[0] as ReadRecord,
    );
    hit(records);
    return {
      mode: "search",
      project: q.project,
      target: null,
      resolved: null,
      summary: { matches: records.length, method: "like" },
      words: q.search,
      records,
    };
  }
  if (q.target === undefined)
    throw new RatchetError(
      ErrorCode.Usage,
      "why: give a target (qualified name, nk_… or file:line) or one of --pending, --never-read, --search",
      {
        field: "target",
      },
    );
  const node = nodes.resolve(q.project, q.target);
  if (!node)
    return {
      mode: "target",
      project: q.project,
      target: q.target,
      resolved: null,
      summary: null,
      read: null,
      records: [],
    };
  const read = boundedRead(store, nodes, q.project, node, q.target, {
    ...(q.all ? { all: true } : {}),
    ...(q.budgetTokens !== undefined ? { budgetTokens: q.budgetTokens } : {}),
  });
  const records = [...read.constraints.records, ...read.rejected.records, ...read.reasons.records];
  if (!q.noHits)
    writeReadHits(store, shownIds(read), { project: q.project, plan_id: null, moment: "why", at });
  return {
    mode: "target",
    project: q.project,
    target: q.target,
    resolved: node,
    summary: {
      downstream: read.structure.callers.total,
      history: read.identity.events.length + read.identity.omitted,
      constraints: read.counts.constraints,
      active_constraints: read.counts.active_constraints,
      rejected: read.counts.rejected,
      reasons: read.counts.reasons,
      pending: read.counts.pending,
    },
    read,
    records,
  };
}
