/**
 * `reason-slots` (spec §4.2; marker op `reason-slots`): the plan's changed nodes that have no
 * `reason` row yet, the checklist the review agent shows the user once, what the close-time rules
 * already filled, and with `draft` up to two utterance spans per slot, scored deterministically.
 * A read: it writes nothing.
 */
import { bool, ErrorCode, type Infer, obj, opt } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import { defineFlow } from "../../ledger/flow.js";
import { id } from "../../ledger/inputs.js";
import type { ChangedNode } from "../types.js";
import { candidateUtterances } from "../words/index.js";
import { reasonContext } from "./context.js";
import type { ReasonRow } from "./store.js";
import { checklistText, type DraftCandidate, draftFor } from "./text.js";

export const ReasonSlotsInput = obj({
  plan_id: id("the plan whose changed nodes need a reason"),
  project: opt(id("its project (default: the plan's; refused when it is not the plan's)")),
  draft: opt(bool("propose up to two spans of the user's recorded words per slot")),
});
export type ReasonSlotsInput = Infer<typeof ReasonSlotsInput>;

export interface AutoFilled {
  node_key: string | null;
  rule_id: string;
  basis: string;
}

export interface SlotDraft {
  node_key: string;
  qualified_name: string;
  candidates: DraftCandidate[];
}

export interface ReasonSlotsResult extends Record<string, unknown> {
  plan_id: string;
  project: string;
  slots: ChangedNode[];
  checklist: string;
  auto_filled: AutoFilled[];
  draft?: SlotDraft[];
}

/** What a rule-written reason rests on, as `auto_filled` and `why` show it. */
export function basisOf(r: ReasonRow): string {
  if (r.interpretation) return r.interpretation;
  if (r.verbatim_utterance_id !== null)
    return `the user's words: utterance #${r.verbatim_utterance_id} [${r.verbatim_start}, ${r.verbatim_end}]`;
  return r.statement ?? "";
}

/** The open slots of a plan: changed nodes with no `reason` row for the plan (any tier). */
export function openSlots(changed: readonly ChangedNode[], rows: readonly ReasonRow[]): ChangedNode[] {
  const answered = new Set(rows.filter((r) => r.role === "reason").map((r) => r.node_key));
  return changed.filter((n) => !answered.has(n.node_key));
}

/**
 * @throws `plan_not_found` / `project_not_found` (3), `invalid_value` (2), `no_state_graph` (10).
 */
export function reasonSlots(l: LedgerCore, input: ReasonSlotsInput): ReasonSlotsResult {
  const { plan, project, nodes, reasons, words } = reasonContext(l, input.plan_id, input.project);
  const rows = reasons.reasonsOfPlan(plan.plan_id);
  const slots = openSlots(nodes.changedNodes(plan.plan_id), rows);
  const auto_filled = rows
    .filter((r) => r.role === "reason" && r.rule_id !== null && (r.tier === "derived" || r.tier === "stated"))
    .map((r) => ({ node_key: r.node_key, rule_id: r.rule_id as string, basis: basisOf(r) }));
  const result: ReasonSlotsResult = {
    plan_id: plan.plan_id,
    project,
    slots,
    checklist: checklistText(plan.plan_id, slots),
    auto_filled,
  };
  if (input.draft) {
    const utterances = candidateUtterances(words, plan.plan_id);
    result.draft = slots.map((s) => ({
      node_key: s.node_key,
      qualified_name: s.qualified_name,
      candidates: draftFor(
        {
          qualified_name: s.qualified_name,
          file_path: nodes.resolve(project, s.node_key)?.file_path ?? null,
        },
        utterances,
      ),
    }));
  }
  return result;
}

export const REASON_SLOTS_FLOW = defineFlow({
  op: "reason-slots",
  command: ["reason", "slots"],
  summary:
    "A plan's changed nodes still without a reason, the checklist to ask the user once, and (draft) spans of their words.",
  input: ReasonSlotsInput,
  example: { plan_id: "orders-fiscal-20261201101500", project: "shop", draft: true },
  positional: "plan_id",
  refusals: [
    {
      code: ErrorCode.NoStateGraph,
      exit: 10,
      when: "the plan's project has no state graph (never analysed)",
    },
    { code: ErrorCode.InvalidValue, exit: 2, when: "`project` is not the plan's project" },
  ],
  result: ["plan_id", "project", "slots", "checklist", "auto_filled", "draft?"],
  marker: ["plan_id"],
  ownCommand: true,
  run: (l, i) => reasonSlots(l, i),
});
