/**
 * Identity across runs (spec §2.2): each node of a run is matched against the previous run's, in
 * order — same (type, qualified name); else a unique 1:1 struct_sig group; else a unique 1:1
 * non-trivial dataflow_sig group. A matched node inherits the previous key; an unmatched one gets
 * a fresh key; a group that is not 1:1 is recorded `identity_ambiguous` and its nodes get fresh
 * provisional keys — never linked by guess. Pure: snapshots in, keyed nodes and events out.
 */
import { createHash } from "node:crypto";
import type { NodeSnapshot } from "../types.js";
import type { AnalysedNode } from "./analyze.js";
import { moduleName } from "./facts.js";

/** Identity event types, pinned by a test. `identity_asserted` is [EXT] and never written here. */
export const NodeEventType = {
  Matched: "node_matched",
  Renamed: "node_renamed",
  Moved: "node_moved",
  Changed: "node_changed",
  Added: "node_added",
  Removed: "node_removed",
  Ambiguous: "identity_ambiguous",
} as const;
export type NodeEventType = (typeof NodeEventType)[keyof typeof NodeEventType];

export interface MatchEvent {
  event_type: NodeEventType;
  node_key: string;
  payload: Record<string, unknown>;
}

export interface MatchResult {
  /** This run's nodes with their keys, in analysis order. */
  nodes: (AnalysedNode & { node_key: string })[];
  events: MatchEvent[];
}

/** `nk_` + first 12 hex of sha1("<run_id>:<node_type>:<qualified_name>"). */
export function mintKey(runId: number, nodeType: string, qualifiedName: string): string {
  return `nk_${createHash("sha1").update(`${runId}:${nodeType}:${qualifiedName}`).digest("hex").slice(0, 12)}`;
}

/** The symbol part of a qualified name (the module of its file removed). */
function symbolPart(qn: string, file: string): string {
  const mod = `${moduleName(file)}.`;
  return qn.startsWith(mod) ? qn.slice(mod.length) : qn;
}

/** An owned node's owner and local part: `fn:df` → (fn, df); `fn:df.col` → (fn:df, col). */
export function ownerSplit(type: string, qn: string): { owner: string; local: string } | undefined {
  const colon = qn.lastIndexOf(":");
  if (colon < 0) return undefined;
  if (type === "dataframe") return { owner: qn.slice(0, colon), local: qn.slice(colon + 1) };
  if (type === "column") {
    const dot = qn.indexOf(".", colon);
    return dot < 0 ? undefined : { owner: qn.slice(0, dot), local: qn.slice(dot + 1) };
  }
  return undefined;
}

type Prev = Pick<
  NodeSnapshot,
  "node_key" | "node_type" | "qualified_name" | "file_path" | "struct_sig" | "dataflow_sig"
>;

/** Matches `cur` (this run, id `runId`) against `prev` (the previous run's snapshots). */
export function matchRun(prev: readonly Prev[], cur: readonly AnalysedNode[], runId: number): MatchResult {
  const keys: (string | undefined)[] = cur.map(() => undefined);
  const events: MatchEvent[] = [];
  const byName = new Map<string, Prev>();
  for (const p of prev) byName.set(`${p.node_type}\0${p.qualified_name}`, p);
  const prevLeft = new Set<Prev>(prev);
  const curLeft = new Set<number>();

  const changes = (p: Prev, c: AnalysedNode) => {
    const changed: string[] = [];
    if (p.struct_sig !== c.struct_sig) changed.push("struct_sig");
    if ((p.dataflow_sig ?? null) !== c.dataflow_sig) changed.push("dataflow_sig");
    return changed;
  };
  const later: MatchEvent[] = [];

  // 1. Same type and qualified name.
  cur.forEach((c, i) => {
    const p = byName.get(`${c.node_type}\0${c.qualified_name}`);
    if (!p || !prevLeft.has(p)) {
      curLeft.add(i);
      return;
    }
    prevLeft.delete(p);
    keys[i] = p.node_key;
    const changed = changes(p, c);
    if (changed.length)
      later.push({ event_type: NodeEventType.Changed, node_key: p.node_key, payload: { changed } });
  });

  // 2 and 3. Unique 1:1 groups by struct_sig, then by non-trivial dataflow_sig.
  for (const via of ["struct_sig", "dataflow_sig"] as const) {
    const pg = new Map<string, Prev[]>();
    for (const p of prevLeft) {
      const s = p[via];
      if (s === null) continue;
      const k = `${p.node_type}\0${s}`;
      pg.set(k, [...(pg.get(k) ?? []), p]);
    }
    const cg = new Map<string, number[]>();
    for (const i of curLeft) {
      const c = cur[i] as AnalysedNode;
      const s = c[via];
      if (s === null) continue;
      const k = `${c.node_type}\0${s}`;
      cg.set(k, [...(cg.get(k) ?? []), i]);
    }
    for (const [k, cs] of cg) {
      const ps = pg.get(k);
      if (!ps) continue;
      if (ps.length === 1 && cs.length === 1) {
        const p = ps[0] as Prev;
        const i = cs[0] as number;
        const c = cur[i] as AnalysedNode;
        prevLeft.delete(p);
        curLeft.delete(i);
        keys[i] = p.node_key;
        events.push({ event_type: NodeEventType.Matched, node_key: p.node_key, payload: { via } });
        const from = { qualified_name: p.qualified_name, file_path: p.file_path };
        const to = { qualified_name: c.qualified_name, file_path: c.file_path };
        if (p.file_path !== c.file_path)
          events.push({ event_type: NodeEventType.Moved, node_key: p.node_key, payload: { from, to } });
        if (symbolPart(p.qualified_name, p.file_path) !== symbolPart(c.qualified_name, c.file_path))
          events.push({ event_type: NodeEventType.Renamed, node_key: p.node_key, payload: { from, to } });
        const changed = changes(p, c);
        if (changed.length)
          events.push({ event_type: NodeEventType.Changed, node_key: p.node_key, payload: { changed } });
        continue;
      }
      // Not 1:1: recorded, and none of them linked. The previous nodes end here; the new ones
      // start under provisional keys.
      const candidates = ps.map((p) => p.node_key);
      for (const p of ps) {
        prevLeft.delete(p);
        later.push({
          event_type: NodeEventType.Removed,
          node_key: p.node_key,
          payload: { qualified_name: p.qualified_name, reason: "identity_ambiguous" },
        });
      }
      for (const i of cs) {
        const c = cur[i] as AnalysedNode;
        curLeft.delete(i);
        const key = mintKey(runId, c.node_type, c.qualified_name);
        keys[i] = key;
        events.push({
          event_type: NodeEventType.Ambiguous,
          node_key: key,
          payload: { via, candidates, group: cs.map((j) => (cur[j] as AnalysedNode).qualified_name) },
        });
        events.push({
          event_type: NodeEventType.Added,
          node_key: key,
          payload: { qualified_name: c.qualified_name, provisional: true },
        });
      }
    }
  }

  // Owned nodes follow their owner: an unmatched dataframe or column whose owner kept its key
  // (under a new name) takes the key of the previous node with that owner key and local name.
  // Dataframes first, so their columns can follow them.
  const keyOfCur = new Map<string, string>();
  const refreshKeys = () => {
    cur.forEach((c, i) => {
      const k = keys[i];
      if (k) keyOfCur.set(c.qualified_name, k);
    });
  };
  const keyOfPrev = new Map(prev.map((p) => [p.qualified_name, p.node_key]));
  for (const type of ["dataframe", "column"]) {
    refreshKeys();
    const prevOwned = new Map<string, Prev>();
    for (const p of prevLeft) {
      if (p.node_type !== type) continue;
      const split = ownerSplit(p.node_type, p.qualified_name);
      const ownerKey = split && keyOfPrev.get(split.owner);
      if (split && ownerKey) prevOwned.set(`${ownerKey}\0${split.local}`, p);
    }
    for (const i of [...curLeft]) {
      const c = cur[i] as AnalysedNode;
      if (c.node_type !== type || !c.owner_qn) continue;
      const ownerKey = keyOfCur.get(c.owner_qn);
      const local = c.qualified_name.slice(c.owner_qn.length + 1);
      const p = ownerKey ? prevOwned.get(`${ownerKey}\0${local}`) : undefined;
      if (!p || !prevLeft.has(p)) continue;
      prevLeft.delete(p);
      curLeft.delete(i);
      keys[i] = p.node_key;
      events.push({ event_type: NodeEventType.Matched, node_key: p.node_key, payload: { via: "owner" } });
      const from = { qualified_name: p.qualified_name, file_path: p.file_path };
      const to = { qualified_name: c.qualified_name, file_path: c.file_path };
      events.push({
        event_type: p.file_path !== c.file_path ? NodeEventType.Moved : NodeEventType.Renamed,
        node_key: p.node_key,
        payload: { from, to },
      });
    }
  }

  // 4. The rest: new nodes and removed nodes.
  for (const i of curLeft) {
    const c = cur[i] as AnalysedNode;
    const key = mintKey(runId, c.node_type, c.qualified_name);
    keys[i] = key;
    events.push({
      event_type: NodeEventType.Added,
      node_key: key,
      payload: { qualified_name: c.qualified_name },
    });
  }
  for (const p of prevLeft)
    events.push({
      event_type: NodeEventType.Removed,
      node_key: p.node_key,
      payload: { qualified_name: p.qualified_name },
    });

  return {
    nodes: cur.map((c, i) => ({ ...c, node_key: keys[i] as string })),
    events: [
      ...later.filter((e) => e.event_type === NodeEventType.Changed),
      ...events,
      ...later.filter((e) => e.event_type !== NodeEventType.Changed),
    ],
  };
}
