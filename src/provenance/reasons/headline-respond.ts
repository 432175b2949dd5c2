/**
 * `headline-respond` (`ratchet headline respond`, spec §5.2): answers one finding of the plan's
 * latest headline with `revise` or `proceed`. Writes one `headline_response` and one
 * `influence(via=headline_response)` per id in {the finding's evidence reason ids} ∪ cites,
 * anchored to the finding's target. A second answer to the same finding is refused (exit 2):
 * changing an answer means a new headline. The UNIQUE index is the backstop; its error is mapped
 * to the same refusal.
 */
import {
  arr,
  ErrorCode,
  type Infer,
  MAX_TEXT_CHARS,
  num,
  obj,
  oneOf,
  opt,
  RatchetError,
  str,
} from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import { LedgerEvent } from "../../ledger/events.js";
import { defineFlow } from "../../ledger/flow.js";
import { id } from "../../ledger/inputs.js";
import type { Store } from "../../store/index.js";
import type { SqlPort } from "../../store/sql.js";
import { type HeadlineDoc, recordResponse, withResponses } from "./headline.js";
import { SqlWhyStore, type WhyStore } from "./why-store.js";

export const HeadlineRespondInput = obj({
  plan_id: id("the plan whose latest headline is answered"),
  finding_id: id("the finding's id (`<kind>:<key>:<n>`, from the headline)"),
  action: oneOf(["revise", "proceed"] as const, "revise the plan, or proceed past the finding"),
  rationale: opt(str({ max: MAX_TEXT_CHARS, description: "why (optional)" })),
  cites: opt(
    arr(num({ int: true, min: 1, description: "a reason id" }), {
      max: 100,
      description: "reason ids the answer leans on",
    }),
  ),
  by: opt(oneOf(["agent", "human"] as const, "who answers (default agent)")),
});
export type HeadlineRespondInput = Infer<typeof HeadlineRespondInput>;

/** The store's provenance reader (either store). */
export function whyStoreOf(store: Store): { why: WhyStore; sql: SqlPort } {
  return { why: new SqlWhyStore(store.sql), sql: store.sql };
}

/** The latest headline of a plan, with its answers merged (undefined when it has none). */
export function latestHeadline(why: WhyStore, planId: string): HeadlineDoc | undefined {
  const row = why.latestHeadline(planId);
  if (!row) return undefined;
  const doc = { ...(JSON.parse(row.findings_json) as HeadlineDoc), headline_id: row.id };
  return withResponses(doc, why.responses(row.id), why.adoptedCount(planId));
}

const invalid = (field: string, message: string) =>
  new RatchetError(ErrorCode.InvalidValue, `field \`${field}\`: ${message}; nothing written`, { field });

export function headlineRespond(l: LedgerCore, input: HeadlineRespondInput) {
  const { why, sql } = whyStoreOf(l.store);
  return l.store.tx(() => {
    const plan = l.requirePlan(input.plan_id);
    const doc = latestHeadline(why, plan.plan_id);
    if (!doc)
      throw invalid(
        "plan_id",
        `plan ${plan.plan_id} has no headline (publish computes one for a plan with a project and declared_targets)`,
      );
    const finding = doc.findings.find((f) => f.id === input.finding_id);
    if (!finding)
      throw invalid(
        "finding_id",
        `no finding ${input.finding_id} on the latest headline of ${plan.plan_id} (headline #${doc.headline_id}; findings: ${doc.findings.map((f) => f.id).join(", ") || "none"})`,
      );
    if (finding.response)
      throw invalid(
        "finding_id",
        `finding ${finding.id} already answered on the latest headline of ${plan.plan_id} (response #${finding.response.response_id}, ${finding.response.action} by ${finding.response.by}); changing an answer means a new headline`,
      );
    const cites = [...new Set(input.cites ?? [])];
    const found = new Set(why.reasons(cites).map((r) => r.id));
    const missing = cites.filter((c) => !found.has(c));
    if (missing.length) throw invalid("cites", `reason #${missing.join(", #")} does not exist`);
    const by = input.by ?? "agent";
    const session =
      sql.get<{ session_id: string | null }>("SELECT session_id FROM plans WHERE plan_id = ?", [plan.plan_id])
        ?.session_id ?? null;
    let written: { response_id: number; influence: number };
    try {
      written = recordResponse(why, {
        headlineId: doc.headline_id,
        finding,
        project: doc.project,
        planId: plan.plan_id,
        sessionId: session,
        at: l.now(),
        action: input.action,
        rationale: input.rationale ?? null,
        by,
        cites,
      });
    } catch (e) {
      if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE")
        throw invalid(
          "finding_id",
          `finding ${finding.id} already answered on the latest headline of ${plan.plan_id}`,
        );
      throw e;
    }
    const after = latestHeadline(why, plan.plan_id) as HeadlineDoc;
    why.setPlanHeadline(plan.plan_id, JSON.stringify(after));
    l.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanHeadlineResponded,
      payload: {
        headline_id: doc.headline_id,
        finding_id: finding.id,
        action: input.action,
        by,
        influence: written.influence,
      },
    });
    return {
      response_id: written.response_id,
      plan_id: plan.plan_id,
      finding_id: finding.id,
      action: input.action,
      by,
      adopted: after.summary.adopted,
      summary: after.summary,
    };
  });
}

export const HEADLINE_RESPOND_FLOW = defineFlow({
  op: "headline-respond",
  command: ["headline", "respond"],
  summary:
    "Answer one finding of a plan's latest headline (revise or proceed); records what it cites as adopted.",
  input: HeadlineRespondInput,
  example: {
    plan_id: "orders-fiscal-20261201101500",
    finding_id: "active_constraint:nk_34676ea5f:1",
    action: "proceed",
    rationale: "weekly grain kept",
    cites: [118],
  },
  positional: "plan_id",
  refusals: [
    {
      code: ErrorCode.InvalidValue,
      exit: 2,
      when: "no headline, unknown finding or cited id, or the finding is already answered",
    },
  ],
  result: ["response_id", "plan_id", "finding_id", "action", "by", "adopted", "summary"],
  run: (l, i) => headlineRespond(l, i),
});
