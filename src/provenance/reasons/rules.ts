/**
 * The close-time rules R0–R6 (spec §4.5) as pure functions over what the close gathered: each
 * says whether it recognises a node and on what basis. R3 (a drift decision on a dataset the node
 * reads) is not implemented: Ratchet records no drift data, so it never recognises a node.
 */
import {
  containsLiteral,
  localName,
  type NodeNames,
  namesNode,
  R0_GENERIC_NODES,
  splitSentences,
} from "./text.js";

export const RuleId = { R0: "R0", R1: "R1", R2: "R2", R4: "R4", R5: "R5", R6: "R6" } as const;

/** A node as the rules see it. */
export interface RuleNode extends NodeNames {
  node_key: string;
  event_types: readonly string[];
  /** In the plan's changed set (added, removed, or struct_sig changed). */
  changed: boolean;
}

export type R0Match =
  | { kind: "stated"; utterance_id: number; span: [number, number]; basis: string }
  | { kind: "ambiguous"; basis: string };

/**
 * R0, the user's words: the first candidate sentence (utterance id order, then sentence order)
 * naming the node literally, unless that sentence names more than {@link R0_GENERIC_NODES} of the
 * touched nodes (generic: `ambiguous`, no reason). A node named only by generic sentences is
 * ambiguous.
 */
export function r0(
  node: RuleNode,
  touched: readonly RuleNode[],
  utterances: readonly { id: number; text: string }[],
): R0Match | undefined {
  let generic: string | undefined;
  for (const u of utterances) {
    for (const s of splitSentences(u.text)) {
      if (!namesNode(s.text, node)) continue;
      const named = touched.filter((n) => namesNode(s.text, n)).length;
      if (named > R0_GENERIC_NODES) {
        generic ??= `utterance #${u.id} [${s.start}, ${s.end}] names ${named} nodes (generic)`;
        continue;
      }
      return {
        kind: "stated",
        utterance_id: u.id,
        span: [s.start, s.end],
        basis: `the user's words name it: utterance #${u.id} [${s.start}, ${s.end}]`,
      };
    }
  }
  return generic ? { kind: "ambiguous", basis: generic } : undefined;
}

/** A run log of the plan, in order: the step, its exit status (from run-step's footer) and text. */
export interface RunLog {
  step_id: string;
  exit_code: number;
  text: string;
}

const FOOTER = /--- exit_code=(-?\d+)/g;

/** The exit status a log's last run-step footer reports, if any. */
export function exitCodeOf(text: string): number | undefined {
  let last: number | undefined;
  for (const m of text.matchAll(FOOTER)) last = Number(m[1]);
  return last;
}

/** R1: a run failed earlier in the plan, then a run passed and the passing log names the node. */
export function r1(node: RuleNode, runs: readonly RunLog[]): string | undefined {
  const firstFail = runs.findIndex((r) => r.exit_code !== 0);
  if (firstFail < 0) return undefined;
  const failed = runs[firstFail] as RunLog;
  for (const r of runs.slice(firstFail + 1))
    if (r.exit_code === 0 && namesNode(r.text, node))
      return `a run failed (${failed.step_id}, exit ${failed.exit_code}) then passed (${r.step_id}) and its log names ${localName(node.qualified_name)}`;
  return undefined;
}

const FAILED_GATE = /\bfail(?:ed|s|ure)?\b|\bFAIL(?:ED)?\b|--- exit_code=[1-9]/i;

/** R2: the previous completed review of the project logged a failed gate naming the node. */
export function r2(
  node: RuleNode,
  previous: { plan_id: string; lines: readonly string[] } | undefined,
): string | undefined {
  if (!previous) return undefined;
  const line = previous.lines.find((l) => FAILED_GATE.test(l) && namesNode(l, node));
  if (!line) return undefined;
  const shown = line.trim().length > 160 ? `${line.trim().slice(0, 160)}…` : line.trim();
  return `the previous review (${previous.plan_id}) logged a failed gate naming it: ${shown}`;
}

/** R4: a pure refactor — matched and renamed/moved, struct_sig unchanged (not in the changed set). */
export function r4(node: RuleNode): string | undefined {
  if (node.changed) return undefined;
  const moves = node.event_types.filter((t) => t === "node_renamed" || t === "node_moved");
  return moves.length > 0 ? `pure refactor: ${moves.join("/")} with struct_sig unchanged` : undefined;
}

/** R5: an active constraint is anchored on the node. */
export function r5(constraints: readonly { id: number; statement: string | null }[]): string | undefined {
  const c = constraints[0];
  if (!c) return undefined;
  return `an active constraint is anchored on it: #${c.id}${c.statement ? ` (${c.statement})` : ""}`;
}

/** Characters of a failed step's log kept in its rejected path. */
export const R6_LOG_TAIL = 300;

/** A rejected path's text (R6) and the node it is anchored to. */
export interface RejectedPath {
  text: string;
  node_key: string | null;
}

/** The first touched node whose local name appears (standalone) in `text`. */
export function anchorOf(text: string, touched: readonly RuleNode[]): string | null {
  for (const n of touched) if (containsLiteral(text, localName(n.qualified_name))) return n.node_key;
  return null;
}

export interface FailedStepFacts {
  step_id: string;
  title: string;
  description: string | null;
  failure_reason: string | null;
  /** Justifications of the deviations that retried it. */
  recovered_by: readonly string[];
  log: string;
}

/** R6: one rejected path per FAILED step and per deviation on a step that did not fail. */
export function r6(
  failed: readonly FailedStepFacts[],
  deviations: readonly { parent_step_id: string | null; justification: string }[],
  touched: readonly RuleNode[],
): RejectedPath[] {
  const out: RejectedPath[] = [];
  for (const f of failed) {
    const parts = [`step ${f.step_id} failed: ${f.title}`];
    if (f.description) parts.push(f.description);
    if (f.failure_reason) parts.push(`reason: ${f.failure_reason}`);
    for (const j of f.recovered_by) parts.push(`recovered by: ${j}`);
    const tail = Array.from(f.log.trim()).slice(-R6_LOG_TAIL).join("");
    if (tail) parts.push(`log: ${tail}`);
    const text = parts.join(" — ");
    out.push({ text, node_key: anchorOf(text, touched) });
  }
  for (const d of deviations) {
    const text = `deviation on ${d.parent_step_id ?? "the plan"}: ${d.justification}`;
    out.push({ text, node_key: anchorOf(text, touched) });
  }
  return out;
}
