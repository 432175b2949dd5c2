/**
 * The bounded read of one target node (spec §5.1, §7): what publish's headline and `why` put in
 * front of someone. Identity chain (the node source's history), active constraints, the last 5
 * rejected paths, the last 3 reasons, prior claims and the structure card when known, trimmed to a
 * token budget. Tokens are counted as characters ÷ 4. A record that does not fit is cut (`cut:
 * {chars, pointer: "record #<id>"}`) or left out (counted in the section's `omitted`, with its
 * pointer); records past a section's cap are counted too. `--all` lifts the caps, not the budget.
 */
import { type EvidenceLevel, evidenceLevel } from "../evidence.js";
import type { NodeEvent, NodeSnapshot, NodeSource } from "../types.js";
import type { Moment, NodeCounts, ReasonRow, Shown, SourceRow, WhyStore } from "./why-store.js";

/** Default token budget of one read (`why --budget`). */
export const DEFAULT_BUDGET_TOKENS = 1500;
/** Characters per token (the budget's unit). */
export const CHARS_PER_TOKEN = 4;
/** Record caps per section (lifted by `all`). */
export const READ_CAPS = {
  constraints: 10,
  rejected: 5,
  reasons: 3,
  claims: 5,
  identity: 10,
  structure: 10,
} as const;
/** A cut record keeps at least this many characters, else it is left out. */
const MIN_CUT_CHARS = 80;
/** Characters of context kept either side of a quoted span. */
const QUOTE_CONTEXT = 60;

export { type EvidenceLevel, evidenceLevel } from "../evidence.js";
export type SectionName = "constraints" | "rejected" | "reasons";

export interface Quote {
  utterance_id: number;
  start: number;
  end: number;
  origin: string;
  /** The words around the span, the span marked «…». */
  marked: string;
}

export interface ReadRecord {
  id: number;
  section: SectionName;
  role: string;
  tier: string;
  evidence_level: EvidenceLevel;
  kind: string;
  state: string;
  recorded_by: string;
  occurred_at: string;
  plan_id: string;
  rule_id: string | null;
  text: string;
  quote: Quote | null;
  sources: Omit<SourceRow, "reason_id">[];
  shown: Shown;
  adopted_by: string[];
  /** Rows this one supersedes (shown as "· corrects #12"). */
  corrects: number[];
  cut: { chars: number; pointer: string } | null;
}

export interface Section<R> {
  total: number;
  records: R[];
  omitted: number;
  pointers: string[];
}

export interface ClaimRecord {
  plan_id: string;
  target: string;
  claim: string;
  outcome: null;
}

/** One side of the structure card: how many, the qualified names shown, how many were cut. */
export interface StructureSide {
  total: number;
  names: string[];
  omitted: number;
}

export interface BoundedRead {
  target: string;
  node_key: string;
  qualified_name: string;
  node_type: string;
  card: { file_path: string; line_start: number; line_end: number; struct_sig: string | null } | null;
  /** Callers and callees at the newest run (the node source's call edges), names capped and budgeted. */
  structure: { callers: StructureSide; callees: StructureSide };
  identity: { events: { run_id: number; event_type: string; detail: string }[]; omitted: number };
  counts: NodeCounts;
  constraints: Section<ReadRecord>;
  rejected: Section<ReadRecord>;
  reasons: Section<ReadRecord>;
  prior_claims: Section<ClaimRecord>;
  budget: { tokens: number; chars: number; used: number };
}

export interface ReadOptions {
  budgetTokens?: number;
  /** Lift the record caps. */
  all?: boolean;
  /** Leave this plan's own claims out of prior claims. */
  exceptPlan?: string;
}

/** The quoted words with the span marked «…», with a little context either side. */
export function markSpan(text: string, start: number, end: number): string {
  const from = Math.max(0, start - QUOTE_CONTEXT);
  const to = Math.min(text.length, end + QUOTE_CONTEXT);
  return `${from > 0 ? "…" : ""}${text.slice(from, start)}«${text.slice(start, end)}»${text.slice(end, to)}${to < text.length ? "…" : ""}`;
}

function eventDetail(e: NodeEvent): string {
  const p = e.payload;
  if (typeof p.from === "string" || typeof p.to === "string")
    return `${String(p.from ?? "?")} → ${String(p.to ?? "?")}`;
  if (Array.isArray(p.changed)) return p.changed.join(",");
  if (typeof p.via === "string") return `via ${p.via}`;
  return "";
}

/** Builds the records of rows (sources, quotes, shown/adopted counts), uncut. */
export function recordsOf(
  store: WhyStore,
  rows: readonly ReasonRow[],
  section: SectionName | ((r: ReasonRow) => SectionName),
): ReadRecord[] {
  const ids = rows.map((r) => r.id);
  const sources = store.sources(ids);
  const shown = store.shown(ids);
  const adopted = store.adoptedBy(ids);
  const corrects = store.corrects(ids);
  return rows.map((r) => {
    const src = sources.filter((s) => s.reason_id === r.id).map(({ reason_id: _, ...s }) => s);
    let quote: Quote | null = null;
    if (r.verbatim_utterance_id !== null && r.verbatim_start !== null && r.verbatim_end !== null) {
      const u = store.utterance(r.verbatim_utterance_id);
      if (u)
        quote = {
          utterance_id: u.id,
          start: r.verbatim_start,
          end: r.verbatim_end,
          origin: u.origin,
          marked: markSpan(u.text, r.verbatim_start, r.verbatim_end),
        };
    }
    const text = r.statement ?? r.interpretation ?? quote?.marked ?? "(unstated: no reason was given)";
    return {
      id: r.id,
      section: typeof section === "function" ? section(r) : section,
      role: r.role,
      tier: r.tier,
      evidence_level: evidenceLevel(r, src),
      kind: r.kind,
      state: r.state,
      recorded_by: r.recorded_by,
      occurred_at: r.occurred_at,
      plan_id: r.plan_id,
      rule_id: r.rule_id,
      text,
      quote,
      sources: src,
      shown: shown.get(r.id) ?? { plan: 0, edit: 0, close: 0, why: 0 },
      adopted_by: adopted.get(r.id) ?? [],
      corrects: corrects.get(r.id) ?? [],
      cut: null,
    };
  });
}

/** The size a record takes in the budget: its text, plus the quote when it is not the text. */
const sizeOf = (r: ReadRecord) =>
  r.text.length + (r.quote && r.quote.marked !== r.text ? r.quote.marked.length : 0);

/** Trims sections, in order, to `chars`; returns the characters used. Mutates the sections. */
export function trimToBudget(sections: readonly Section<ReadRecord>[], chars: number): number {
  let left = chars;
  for (const s of sections) {
    const kept: ReadRecord[] = [];
    for (const r of s.records) {
      const size = sizeOf(r);
      if (size <= left) {
        kept.push(r);
        left -= size;
      } else if (left >= MIN_CUT_CHARS && r.text.length > size - left) {
        const keep = r.text.length - (size - left);
        kept.push({
          ...r,
          text: `${r.text.slice(0, keep)}…`,
          cut: { chars: size - left, pointer: `record #${r.id}` },
        });
        left = 0;
      } else {
        s.omitted++;
        s.pointers.push(`record #${r.id}`);
      }
    }
    s.records = kept;
  }
  return chars - left;
}

/** The bounded read of one resolved node. Writes nothing (see {@link writeReadHits}). */
export function boundedRead(
  store: WhyStore,
  nodes: NodeSource,
  project: string,
  node: NodeSnapshot,
  target: string,
  opts: ReadOptions = {},
): BoundedRead {
  const cap = (n: number) => (opts.all ? undefined : n);
  // One batch of lookups (sources, shown, adopted, corrections) for the three sections' rows.
  const pending: [SectionName, ReasonRow[], number][] = [];
  const section = (name: SectionName, rows: ReasonRow[], total: number): Section<ReadRecord> => {
    pending.push([name, rows, total]);
    return { total, records: [], omitted: total - rows.length, pointers: [] };
  };
  const counts = store.counts(project, node.node_key);
  const lim = (n: number) => {
    const c = cap(n);
    return c === undefined ? {} : { limit: c };
  };
  const constraints = section(
    "constraints",
    store.onNode(project, node.node_key, "constraint", { activeOnly: true, ...lim(READ_CAPS.constraints) }),
    counts.active_constraints,
  );
  const rejected = section(
    "rejected",
    store.onNode(project, node.node_key, "rejected_path", lim(READ_CAPS.rejected)),
    counts.rejected,
  );
  const reasons = section(
    "reasons",
    store.onNode(project, node.node_key, "reason", lim(READ_CAPS.reasons)),
    counts.reasons,
  );
  const of = new Map<number, SectionName>();
  for (const [name, rows] of pending) for (const r of rows) of.set(r.id, name);
  const all = recordsOf(
    store,
    pending.flatMap(([, rows]) => rows),
    (r) => of.get(r.id) ?? "reasons",
  );
  for (const [name, s] of [
    ["constraints", constraints],
    ["rejected", rejected],
    ["reasons", reasons],
  ] as const)
    s.records = all.filter((r) => r.section === name);
  const chars = (opts.budgetTokens ?? DEFAULT_BUDGET_TOKENS) * CHARS_PER_TOKEN;
  let used = trimToBudget([constraints, rejected, reasons], chars);
  // The structure card takes what the records left: names past the cap or the budget are counted.
  const side = (list: readonly NodeSnapshot[]): StructureSide => {
    const names: string[] = [];
    const max = cap(READ_CAPS.structure) ?? list.length;
    for (const n of list) {
      if (names.length >= max || used + n.qualified_name.length > chars) break;
      names.push(n.qualified_name);
      used += n.qualified_name.length;
    }
    return { total: list.length, names, omitted: list.length - names.length };
  };
  const structure = {
    callers: side(nodes.callers(project, node.node_key)),
    callees: side(nodes.callees(project, node.node_key)),
  };
  const claims = store.priorClaims(project, [node.node_key, node.qualified_name], opts.exceptPlan);
  const claimCap = cap(READ_CAPS.claims) ?? claims.length;
  const history = nodes.history(node.node_key);
  const idCap = cap(READ_CAPS.identity) ?? history.length;
  return {
    target,
    node_key: node.node_key,
    qualified_name: node.qualified_name,
    node_type: node.node_type,
    card: {
      file_path: node.file_path,
      line_start: node.line_start,
      line_end: node.line_end,
      struct_sig: node.struct_sig,
    },
    structure,
    identity: {
      events: history
        .slice(-idCap)
        .map((e) => ({ run_id: e.run_id, event_type: e.event_type, detail: eventDetail(e) })),
      omitted: Math.max(0, history.length - idCap),
    },
    counts,
    constraints,
    rejected,
    reasons,
    prior_claims: {
      total: claims.length,
      records: claims.slice(0, claimCap).map((c) => ({ ...c, outcome: null })),
      omitted: Math.max(0, claims.length - claimCap),
      pointers: [],
    },
    budget: { tokens: opts.budgetTokens ?? DEFAULT_BUDGET_TOKENS, chars, used },
  };
}

/** The ids of every record a read shows. */
export function shownIds(read: BoundedRead): number[] {
  return [...read.constraints.records, ...read.rejected.records, ...read.reasons.records].map((r) => r.id);
}

/**
 * Writes one `read_hit` per record shown. With a plan, the same reason, plan and moment is counted
 * once ever (spec §6); without one (`why` outside a plan) each showing is a row, deduped within
 * the call. Returns the rows written. Runs inside the caller's transaction.
 */
export function writeReadHits(
  store: WhyStore,
  ids: readonly number[],
  at: {
    project: string;
    plan_id: string | null;
    moment: Moment;
    at: string;
    session_id?: string | null;
    step_id?: string | null;
  },
): number {
  let n = 0;
  for (const id of new Set(ids)) {
    if (at.plan_id !== null && store.hasReadHit(id, at.plan_id, at.moment)) continue;
    store.insertReadHit({ reason_id: id, ...at });
    n++;
  }
  return n;
}
