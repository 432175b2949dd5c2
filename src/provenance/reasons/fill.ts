/**
 * `reason-fill` (spec §4.3; marker op `reason-fill`): records the answers to a plan's reason
 * slots. The tier follows from each answer's shape (`stated` = a span of a recorded utterance,
 * `asserted` = an interpretation with optional references, `unstated`); callers cannot pass one.
 * Checks in the spec's order — (1) a state graph, (2) shapes, (3) every node_key in the plan's
 * changed set, (4) referents — then everything is written in ONE transaction, or nothing is.
 *
 * A later answer to a slot the close left open (a system `unstated` row, state `unknown` in
 * `pending` mode or `active` in `ask` mode) appends its row and points the system row's
 * `superseded_by` (its one mutable column) at it, so readers show the answer and `why --pending`
 * stops listing the node. The spec leaves this open (§11); readers imply it.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import { LedgerEvent } from "../../ledger/events.js";
import { defineFlow } from "../../ledger/flow.js";
import type { WordStore } from "../words/index.js";
import { reasonContext } from "./context.js";
import { type Answer, parseFill, ReasonFillInput } from "./fill-input.js";
import { type ReasonStore, Tier } from "./store.js";
import { charLength } from "./text.js";

export interface ReasonFillResult extends Record<string, unknown> {
  plan_id: string;
  filled: number;
  stated: number;
  asserted: number;
  unstated: number;
  adopted: number;
  unknown_keys: string[];
  reason_ids: number[];
}

function referent(field: string, message: string): never {
  throw new RatchetError(ErrorCode.InvalidValue, `field \`${field}\`: ${message}`, { field });
}

/**
 * @throws `plan_not_found`/`project_not_found` (3), `no_state_graph` (10), `schema_violation`
 * (2: shapes, the old `text` shape, a `tier` key), `unknown_node_key` (10: `unknown_keys`),
 * `invalid_value` (2: unknown utterance, span out of range, unknown reference or because id).
 */
export function reasonFill(l: LedgerCore, raw: Record<string, unknown>): ReasonFillResult {
  return l.store.tx(() => {
    const planId = raw.plan_id as string;
    const project = typeof raw.project === "string" ? raw.project : undefined;
    // (1) the plan, its project and a state graph.
    const ctx = reasonContext(l, planId, project);
    // (2) shapes.
    const input = parseFill(raw);
    // (3) every node in the plan's changed set.
    const changed = new Map(ctx.nodes.changedNodes(planId).map((n) => [n.node_key, n]));
    const unknown = [...new Set(input.reasons.map((a) => a.node_key).filter((k) => !changed.has(k)))];
    if (unknown.length > 0)
      throw new RatchetError(
        ErrorCode.UnknownNodeKey,
        `plan ${planId}: node_key${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")} ${unknown.length === 1 ? "is" : "are"} not among the nodes the plan changed (see \`ratchet reason slots ${planId}\`)`,
        { planId, unknown_keys: unknown },
      );
    // (4) referents.
    for (const a of input.reasons) checkReferents(ctx.reasons, ctx.words, a);

    const by = input.source === "human" ? "human" : "agent";
    const recordedBy = input.source;
    const at = l.now();
    const rows = ctx.reasons.reasonsOfPlan(planId);
    const counts = { stated: 0, asserted: 0, unstated: 0, adopted: 0 };
    const ids: number[] = [];
    for (const a of input.reasons) {
      const node = changed.get(a.node_key);
      const id = ctx.reasons.insertReason({
        project: ctx.project,
        node_key: a.node_key,
        run_id: input.run_id ?? node?.run_id ?? null,
        plan_id: planId,
        step_id: input.step_id ?? null,
        kind: a.kind,
        role: "reason",
        tier: a.shape === "stated" ? Tier.Stated : a.shape === "asserted" ? Tier.Asserted : Tier.Unstated,
        state: "active",
        recorded_by: recordedBy,
        at,
        ...(a.shape === "stated"
          ? { verbatim_utterance_id: a.utterance_id, verbatim_start: a.span[0], verbatim_end: a.span[1] }
          : {}),
        ...(a.shape === "asserted" ? { interpretation: a.interpretation } : {}),
      });
      ids.push(id);
      counts[a.shape]++;
      if (a.shape === "asserted") for (const ref of a.refs) ctx.reasons.linkReference(id, ref);
      for (const cited of a.because) {
        ctx.reasons.insertInfluence({
          reason_id: cited,
          project: ctx.project,
          plan_id: planId,
          session_id: null,
          node_key: a.node_key,
          via: "reason_because",
          by,
          at,
        });
        counts.adopted++;
      }
      if (a.shape !== "unstated") {
        for (const r of rows)
          if (
            r.node_key === a.node_key &&
            r.role === "reason" &&
            r.recorded_by === "system" &&
            r.tier === Tier.Unstated &&
            r.superseded_by === null
          ) {
            ctx.reasons.supersede(r.id, id);
            r.superseded_by = id;
          }
      }
    }
    const result = {
      plan_id: planId,
      filled: counts.stated + counts.asserted,
      stated: counts.stated,
      asserted: counts.asserted,
      unstated: counts.unstated,
      adopted: counts.adopted,
      unknown_keys: [],
      reason_ids: ids,
    };
    l.store.appendEvent({
      entityKind: "plan",
      entityId: planId,
      planId,
      type: LedgerEvent.ReasonsFilled,
      payload: { ...counts, reason_ids: ids, source: input.source },
    });
    return result;
  });
}

function checkReferents(store: ReasonStore, words: WordStore, a: Answer): void {
  if (a.shape === "stated") {
    const u = words.getUtterance(a.utterance_id);
    if (!u) referent(`${a.path}.utterance_id`, `utterance ${a.utterance_id} is not recorded`);
    const len = charLength(u.text);
    const [s, e] = a.span;
    if (!(s >= 0 && s < e && e <= len))
      referent(
        `${a.path}.span`,
        `[${s}, ${e}] is outside utterance ${a.utterance_id} (0 ≤ start < end ≤ ${len}, in characters)`,
      );
  }
  if (a.shape === "asserted")
    for (const ref of a.refs)
      if (!words.getReference(ref)) referent(`${a.path}.refs`, `reference ${ref} is not recorded`);
  for (const cited of a.because)
    if (!store.reason(cited)) referent(`${a.path}.because`, `reason ${cited} is not recorded`);
}

export const REASON_FILL_FLOW = defineFlow({
  op: "reason-fill",
  command: ["reason", "fill"],
  summary:
    "Record the answers to a plan's reason slots (stated span, asserted interpretation, or unstated); all or nothing.",
  input: ReasonFillInput,
  example: {
    plan_id: "orders-fiscal-20261201101500",
    project: "shop",
    run_id: 7,
    reasons: [{ node_key: "nk_34676ea5f1d4", utterance_id: 42, span: [0, 33], because: [118] }],
  },
  refusals: [
    { code: ErrorCode.NoStateGraph, exit: 10, when: "the plan's project has no state graph" },
    {
      code: ErrorCode.UnknownNodeKey,
      exit: 10,
      when: "a node_key outside the plan's changed set (`unknown_keys`)",
    },
    {
      code: ErrorCode.InvalidValue,
      exit: 2,
      when: "an unknown utterance, reference or because id, a span outside its utterance, or `project` not the plan's",
    },
  ],
  result: ["plan_id", "filled", "stated", "asserted", "unstated", "adopted", "unknown_keys", "reason_ids"],
  marker: ["plan_id"],
  run: (l, i) => reasonFill(l, i),
});
