/**
 * The headline at publish (spec §5.1): for a plan with a project and `declared_targets`, one
 * bounded read per target, `read_hit(moment=plan)` per record shown, and findings with stable
 * ids. A headline row is stored every time and copied to `plans.headline_json`. It never blocks
 * publish, except an unanswered finding on a human constraint declared `block: true` in the
 * extensions file (`headline_blocked`, exit 4, nothing written).
 *
 * Finding kinds computed: `active_constraint`, `rejected_path`, `similar_intent`, and from the node
 * source's call edges at the newest run `removed_upstream` (a callee whose latest event is
 * `node_removed`), `downstream_break` (the target has callers) and `downstream_constraint` (active
 * constraints on its callers). Not available (outcomes and table schemas are not recorded):
 * `prior_outcome_failed`, `unverified_upstream` — a hint in the document says so.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { NodeSource } from "../types.js";
import { declaredConstraints, extensionsPath, syncConstraints } from "./headline-extensions.js";
import { type BoundedRead, boundedRead, shownIds, writeReadHits } from "./read.js";
import type { ReasonRow, ResponseRow, WhyStore } from "./why-store.js";

export type Severity = "blocking" | "warning" | "info";

export interface FindingResponse {
  response_id: number;
  action: string;
  by: string;
  rationale: string | null;
  cites: number[];
  at: string;
}

export interface Finding {
  id: string;
  layer: "self" | "impact";
  kind: string;
  tier: string;
  severity: Severity;
  text: string;
  /** The target's qualified name (or the target as given when it is not in the graph). */
  anchor: string;
  node_key: string | null;
  evidence: {
    reason_id?: number;
    reason_ids?: number[];
    /** `removed_upstream`: the callee's removal event. */
    event?: { node_key: string; run_id: number; seq: number };
    /** `downstream_break`: the callers' keys. */
    consumers?: string[];
  };
  /** A human constraint declared `block: true`: publish is refused while it is unanswered. */
  hard: boolean;
  response: FindingResponse | null;
}

export interface HeadlineSummary {
  targets: number;
  layers: 2;
  findings: number;
  blocking: number;
  warning: number;
  info: number;
  unanswered: number;
  hard_unanswered: number;
  shown: number;
  adopted: number;
}

export interface HeadlineTarget {
  target: string;
  resolved: boolean;
  node_key: string | null;
  qualified_name: string | null;
  /** The ids of the records shown, per section, and how many were cut or left out. */
  shown: { constraints: number[]; rejected: number[]; reasons: number[]; omitted: number };
}

export interface HeadlineDoc {
  headline_id: number;
  plan_id: string;
  project: string;
  findings: Finding[];
  summary: HeadlineSummary;
  targets: HeadlineTarget[];
  hints: string[];
  generated_at: string;
}

/** Kinds the spec names that this node source cannot compute (documented in the hint). */
export const UNAVAILABLE_KINDS = ["prior_outcome_failed", "unverified_upstream"] as const;

/** Callers named in a `downstream_break` finding's text (all of them are in its evidence). */
const NAMED_CALLERS = 5;

/** A finding's evidence reason ids. */
export function evidenceIds(f: Pick<Finding, "evidence">): number[] {
  return [
    ...(f.evidence.reason_id !== undefined ? [f.evidence.reason_id] : []),
    ...(f.evidence.reason_ids ?? []),
  ];
}

/** The document with responses merged in and the summary recomputed. */
export function withResponses(
  doc: HeadlineDoc,
  responses: readonly ResponseRow[],
  adopted: number,
): HeadlineDoc {
  const by = new Map(responses.map((r) => [r.finding_id, r]));
  const findings = doc.findings.map((f) => {
    const r = by.get(f.id);
    return r
      ? {
          ...f,
          response: {
            response_id: r.id,
            action: r.action,
            by: r.by,
            rationale: r.rationale,
            cites: JSON.parse(r.cites_json) as number[],
            at: r.at,
          },
        }
      : f;
  });
  return { ...doc, findings, summary: summarize(findings, doc.targets.length, doc.summary.shown, adopted) };
}

export function summarize(
  findings: readonly Finding[],
  targets: number,
  shown: number,
  adopted: number,
): HeadlineSummary {
  const count = (s: Severity) => findings.filter((f) => f.severity === s).length;
  const open = findings.filter((f) => f.severity === "blocking" && f.response === null);
  return {
    targets,
    layers: 2,
    findings: findings.length,
    blocking: count("blocking"),
    warning: count("warning"),
    info: count("info"),
    unanswered: open.length,
    hard_unanswered: open.filter((f) => f.hard).length,
    shown,
    adopted,
  };
}

/** A declared target: a string, or an object naming it (`node`, `target`, `qualified_name`, `node_key`). */
function targetName(t: unknown, i: number): string {
  if (typeof t === "string" && t.trim()) return t.trim();
  if (t && typeof t === "object") {
    const o = t as Record<string, unknown>;
    for (const k of ["node", "target", "qualified_name", "node_key", "name"])
      if (typeof o[k] === "string" && (o[k] as string).trim()) return (o[k] as string).trim();
  }
  throw new RatchetError(
    ErrorCode.InvalidValue,
    `field \`declared_targets[${i}]\`: a target is a qualified name, an nk_… key or file:line (or {"node": …}); nothing written`,
    { field: `declared_targets[${i}]` },
  );
}

interface Note {
  text: string;
  cites: number[];
  target?: string;
}
interface PreAnswer {
  answer: string;
  action: "revise" | "proceed";
  rationale: string | null;
  by: "agent" | "human";
}

const bad = (field: string, msg: string) =>
  new RatchetError(ErrorCode.InvalidValue, `field \`${field}\`: ${msg}; nothing written`, { field });

/**
 * `headline_notes`: `{text, cites: [reason_id, …], target?}` notes (→ `similar_intent`, each
 * citing ≥ 1 existing reason) and `{answer: <finding id>, action, rationale?, by?}` answers given
 * at publish (how a plan passes a `block: true` constraint).
 */
export function parseNotes(raw: unknown, store: WhyStore): { notes: Note[]; answers: PreAnswer[] } {
  const notes: Note[] = [];
  const answers: PreAnswer[] = [];
  if (raw === undefined) return { notes, answers };
  if (!Array.isArray(raw))
    throw bad("headline_notes", "must be a list of {text, cites} notes or {answer, action} answers");
  raw.forEach((n, i) => {
    const f = `headline_notes[${i}]`;
    const o = (n && typeof n === "object" ? n : {}) as Record<string, unknown>;
    if (typeof o.answer === "string") {
      if (o.action !== "revise" && o.action !== "proceed")
        throw bad(`${f}.action`, "must be revise or proceed");
      if (o.by !== undefined && o.by !== "agent" && o.by !== "human")
        throw bad(`${f}.by`, "must be agent or human");
      answers.push({
        answer: o.answer,
        action: o.action,
        rationale: typeof o.rationale === "string" ? o.rationale : null,
        by: (o.by as "agent" | "human" | undefined) ?? "agent",
      });
      return;
    }
    if (typeof o.text !== "string" || !o.text.trim())
      throw bad(
        f,
        'a note needs `text` and `cites` (≥ 1 existing reason id), e.g. {"text": "…", "cites": [12]}',
      );
    const cites = o.cites;
    if (!Array.isArray(cites) || cites.length === 0 || !cites.every((c) => Number.isInteger(c)))
      throw bad(`${f}.cites`, "must cite at least one reason id (integers)");
    const found = new Set(store.reasons(cites as number[]).map((r) => r.id));
    const missing = (cites as number[]).filter((c) => !found.has(c));
    if (missing.length) throw bad(`${f}.cites`, `reason #${missing.join(", #")} does not exist`);
    notes.push({
      text: o.text.trim(),
      cites: cites as number[],
      ...(typeof o.target === "string" ? { target: o.target } : {}),
    });
  });
  return { notes, answers };
}

export interface PublishHeadlineInput {
  plan_id: string;
  project: string;
  repo: string | null;
  session_id: string | null;
  declared_targets: unknown;
  headline_notes: unknown;
  at: string;
}

const key12 = (s: string) => s.slice(0, 12);

/**
 * Computes, stores and returns the plan's headline. Runs inside publish's transaction.
 * @throws RatchetError `invalid_value` (exit 2) for malformed targets or notes, a note citing no
 *   existing reason, an answer to an unknown finding; `headline_blocked` (exit 4) while a `block:
 *   true` human constraint is unanswered.
 */
export function publishHeadline(
  store: WhyStore,
  nodes: NodeSource,
  input: PublishHeadlineInput,
): HeadlineDoc | undefined {
  const raw = input.declared_targets;
  if (raw === undefined || raw === null) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) return undefined;
  const names = [...new Set(list.map(targetName))];
  const { notes, answers } = parseNotes(input.headline_notes, store);
  const hints: string[] = [];
  const hasGraph = nodes.hasGraph(input.project);
  if (!hasGraph) hints.push(`no state graph for project ${input.project}: targets are not resolved`);
  // A broken extensions file never blocks publish: its constraints are not imported, a hint says why.
  let declared: ReturnType<typeof declaredConstraints> = [];
  try {
    declared = declaredConstraints(extensionsPath(input.repo));
  } catch (e) {
    hints.push(`extensions file not used: ${(e as Error).message}`);
  }
  const sync = hasGraph
    ? syncConstraints(store, nodes, input.project, declared, input.at)
    : { blocks: new Map(), unresolved: [] };
  for (const u of sync.unresolved)
    hints.push(`extensions constraint on ${u}: node not in the state graph (not imported)`);
  hints.push(`not available from this node source: ${UNAVAILABLE_KINDS.join(", ")}`);

  const findings: Finding[] = [];
  const counters = new Map<string, number>();
  const push = (f: Omit<Finding, "id" | "response">, key: string) => {
    const base = `${f.kind}:${key12(key)}`;
    const n = (counters.get(base) ?? 0) + 1;
    counters.set(base, n);
    findings.push({ ...f, id: `${base}:${n}`, response: null });
  };
  const targets: HeadlineTarget[] = [];
  const shown: number[] = [];
  for (const name of names) {
    const node = hasGraph ? nodes.resolve(input.project, name) : undefined;
    if (!node) {
      if (hasGraph) hints.push(`target ${name}: not in the state graph (a new node?)`);
      targets.push({
        target: name,
        resolved: false,
        node_key: null,
        qualified_name: null,
        shown: { constraints: [], rejected: [], reasons: [], omitted: 0 },
      });
      continue;
    }
    const read: BoundedRead = boundedRead(store, nodes, input.project, node, name, {
      exceptPlan: input.plan_id,
    });
    const ids = shownIds(read);
    shown.push(...ids);
    targets.push({
      target: name,
      resolved: true,
      node_key: node.node_key,
      qualified_name: node.qualified_name,
      shown: {
        constraints: read.constraints.records.map((r) => r.id),
        rejected: read.rejected.records.map((r) => r.id),
        reasons: read.reasons.records.map((r) => r.id),
        omitted: read.constraints.omitted + read.rejected.omitted + read.reasons.omitted,
      },
    });
    const anchor = node.qualified_name;
    for (const c of store.onNode(input.project, node.node_key, "constraint", { activeOnly: true }))
      push(
        {
          layer: "self",
          kind: "active_constraint",
          tier: c.tier,
          severity: "blocking",
          text: `constraint #${c.id} on ${anchor}: ${describe(c)}`,
          anchor,
          node_key: node.node_key,
          evidence: { reason_id: c.id },
          hard: c.recorded_by === "human" && sync.blocks.get(c.id) === true,
        },
        node.node_key,
      );
    for (const r of store.onNode(input.project, node.node_key, "rejected_path", { limit: 5 }))
      push(
        {
          layer: "self",
          kind: "rejected_path",
          tier: r.tier,
          severity: "warning",
          text: `rejected before (#${r.id}, plan ${r.plan_id}): ${describe(r)}`,
          anchor,
          node_key: node.node_key,
          evidence: { reason_id: r.id },
          hard: false,
        },
        node.node_key,
      );
    for (const c of nodes.callees(input.project, node.node_key)) {
      const last = nodes.history(c.node_key).at(-1);
      if (last?.event_type !== "node_removed") continue;
      push(
        {
          layer: "self",
          kind: "removed_upstream",
          tier: "derived",
          severity: "blocking",
          text: `${anchor} calls ${c.qualified_name}, removed at run ${last.run_id}`,
          anchor,
          node_key: node.node_key,
          evidence: { event: { node_key: c.node_key, run_id: last.run_id, seq: last.seq } },
          hard: false,
        },
        node.node_key,
      );
    }
    const callers = nodes.callers(input.project, node.node_key);
    if (callers.length) {
      const names = callers.slice(0, NAMED_CALLERS).map((c) => c.qualified_name);
      const more = callers.length - names.length;
      push(
        {
          layer: "impact",
          kind: "downstream_break",
          tier: "derived",
          severity: "warning",
          text: `${callers.length} caller(s) of ${anchor} may break: ${names.join(", ")}${more ? ` and ${more} more` : ""}`,
          anchor,
          node_key: node.node_key,
          evidence: { consumers: callers.map((c) => c.node_key) },
          hard: false,
        },
        node.node_key,
      );
    }
    for (const caller of callers)
      for (const c of store.onNode(input.project, caller.node_key, "constraint", { activeOnly: true }))
        push(
          {
            layer: "impact",
            kind: "downstream_constraint",
            tier: c.tier,
            severity: "blocking",
            text: `constraint #${c.id} on caller ${caller.qualified_name} of ${anchor}: ${describe(c)}`,
            anchor,
            node_key: node.node_key,
            evidence: { reason_id: c.id },
            hard: false,
          },
          node.node_key,
        );
  }
  for (const n of notes) {
    const t = targets.find((x) => x.target === n.target || x.qualified_name === n.target) ?? targets[0];
    push(
      {
        layer: "self",
        kind: "similar_intent",
        tier: "asserted",
        severity: "warning",
        text: n.text,
        anchor: t?.qualified_name ?? t?.target ?? n.target ?? "",
        node_key: t?.node_key ?? null,
        evidence: { reason_ids: n.cites },
        hard: false,
      },
      t?.node_key ?? t?.target ?? n.target ?? "note",
    );
  }
  for (const a of answers)
    if (!findings.some((f) => f.id === a.answer))
      throw bad(
        "headline_notes",
        `answer to ${a.answer}: no such finding (findings: ${findings.map((f) => f.id).join(", ") || "none"})`,
      );
  const answered = new Set(answers.map((a) => a.answer));
  const hard = findings.filter((f) => f.hard && !answered.has(f.id));
  if (hard.length)
    throw new RatchetError(
      ErrorCode.HeadlineBlocked,
      `publish refused: unanswered finding(s) on a human constraint declared block: true: ${hard
        .map((f) => `${f.id} (${f.text})`)
        .join(
          "; ",
        )}. Answer each in headline_notes ({"answer": "<finding id>", "action": "revise"|"proceed", "rationale": "…"}) and publish again; nothing written`,
      { findings: hard.map((f) => f.id) },
    );

  writeReadHits(store, shown, {
    project: input.project,
    plan_id: input.plan_id,
    moment: "plan",
    at: input.at,
    session_id: input.session_id,
  });
  const draft: HeadlineDoc = {
    headline_id: 0,
    plan_id: input.plan_id,
    project: input.project,
    findings,
    summary: summarize(findings, targets.length, new Set(shown).size, 0),
    targets,
    hints,
    generated_at: input.at,
  };
  const headlineId = store.insertHeadline({
    project: input.project,
    plan_id: input.plan_id,
    session_id: input.session_id,
    findings_json: JSON.stringify(draft),
    at: input.at,
  });
  for (const a of answers) {
    const f = findings.find((x) => x.id === a.answer) as Finding;
    recordResponse(store, {
      headlineId,
      finding: f,
      project: input.project,
      planId: input.plan_id,
      sessionId: input.session_id,
      at: input.at,
      action: a.action,
      rationale: a.rationale,
      by: a.by,
      cites: [],
    });
  }
  const doc = withResponses(
    { ...draft, headline_id: headlineId },
    store.responses(headlineId),
    store.adoptedCount(input.plan_id),
  );
  store.setPlanHeadline(input.plan_id, JSON.stringify(doc));
  return doc;
}

/** One record's words: statement, interpretation, else its rule, else "(no words recorded)". */
function describe(r: ReasonRow): string {
  return r.statement ?? r.interpretation ?? (r.rule_id ? `rule ${r.rule_id}` : "(no words recorded)");
}

/** Writes one answer and its influence rows ({evidence} ∪ cites, once each). */
export function recordResponse(
  store: WhyStore,
  a: {
    headlineId: number;
    finding: Finding;
    project: string;
    planId: string;
    sessionId: string | null;
    at: string;
    action: string;
    rationale: string | null;
    by: string;
    cites: number[];
  },
): { response_id: number; influence: number } {
  const responseId = store.insertResponse({
    headline_id: a.headlineId,
    finding_id: a.finding.id,
    action: a.action,
    rationale: a.rationale,
    by: a.by,
    cites_json: JSON.stringify(a.cites),
    at: a.at,
  });
  const ids = [...new Set([...evidenceIds(a.finding), ...a.cites])];
  for (const id of ids)
    store.insertInfluence({
      reason_id: id,
      project: a.project,
      plan_id: a.planId,
      session_id: a.sessionId,
      node_key: a.finding.node_key,
      by: a.by,
      at: a.at,
    });
  return { response_id: responseId, influence: ids.length };
}
