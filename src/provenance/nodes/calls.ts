/**
 * The call edges of one analysis run (callers and callees, spec §5.1's structure): each symbol's
 * callee names come from its file's facts (the parse cache), resolved the way `nameNodes` resolves
 * them for dataflow_sig — a symbol of the same file by local name, else the only symbol of that
 * name in the run. A name that resolves to nothing (a builtin, an import from outside the repo, an
 * ambiguous name) is kept apart as unresolved. Pure.
 */
import type { NodeSnapshot } from "../types.js";
import { type FileFacts, moduleName } from "./facts.js";

const SYMBOL_TYPES = new Set(["function", "method", "class"]);

/** The local name of a symbol's qualified name: `src.m.Cls.run#2` → `run`. */
export function localName(qualifiedName: string): string {
  const last = qualifiedName.slice(qualifiedName.lastIndexOf(".") + 1);
  const hash = last.indexOf("#");
  return hash < 0 ? last : last.slice(0, hash);
}

export interface CallGraph {
  /** node_key → callee node_keys (resolved at the run), sorted, unique. */
  callees: Map<string, string[]>;
  /** node_key → caller node_keys, sorted, unique. */
  callers: Map<string, string[]>;
  /** node_key → callee names that resolved to no node of the run. */
  unresolved: Map<string, string[]>;
}

/**
 * Edges of a run from its snapshots and the facts of its files. A file whose facts do not match
 * the run's snapshots of it (qualified name and struct_sig of every symbol) was edited since the
 * run: its symbols contribute no edges (`facts` should hold only what the run saw).
 */
export function callGraph(
  snapshots: readonly NodeSnapshot[],
  facts: ReadonlyMap<string, FileFacts>,
): CallGraph {
  const symbols = snapshots.filter((s) => SYMBOL_TYPES.has(s.node_type));
  const byLocal = new Map<string, string[]>();
  const byFileLocal = new Map<string, string>();
  const byFileQn = new Map<string, NodeSnapshot>();
  const ordered = [...symbols].sort(
    (a, b) => a.file_path.localeCompare(b.file_path) || a.line_start - b.line_start,
  );
  for (const s of ordered) {
    const local = localName(s.qualified_name);
    const list = byLocal.get(local) ?? [];
    list.push(s.node_key);
    byLocal.set(local, list);
    if (!byFileLocal.has(`${s.file_path}\0${local}`)) byFileLocal.set(`${s.file_path}\0${local}`, s.node_key);
    byFileQn.set(`${s.file_path}\0${s.qualified_name}`, s);
  }
  const callees = new Map<string, string[]>();
  const callers = new Map<string, string[]>();
  const unresolved = new Map<string, string[]>();
  for (const [path, f] of facts) {
    const mod = moduleName(path);
    const seen = new Map<string, number>();
    const named: [NodeSnapshot, string[]][] = [];
    let matches = true;
    for (const s of f.symbols) {
      const base = `${mod}.${s.path.join(".")}`;
      const n = (seen.get(base) ?? 0) + 1;
      seen.set(base, n);
      const snap = byFileQn.get(`${path}\0${n === 1 ? base : `${base}#${n}`}`);
      if (!snap || snap.struct_sig !== s.struct_sig) {
        matches = false;
        break;
      }
      named.push([snap, s.callees]);
    }
    if (!matches) continue;
    for (const [snap, names] of named) {
      const out = new Set<string>();
      const lost: string[] = [];
      for (const c of names) {
        const same = byFileLocal.get(`${path}\0${c}`);
        const any = byLocal.get(c);
        const key = same ?? (any?.length === 1 ? any[0] : undefined);
        if (key === undefined) lost.push(c);
        else if (key !== snap.node_key) out.add(key);
      }
      if (out.size) callees.set(snap.node_key, [...out].sort());
      if (lost.length) unresolved.set(snap.node_key, lost);
      for (const k of out) {
        const list = callers.get(k) ?? [];
        list.push(snap.node_key);
        callers.set(k, list);
      }
    }
  }
  for (const [k, list] of callers) callers.set(k, [...new Set(list)].sort());
  return { callees, callers, unresolved };
}
