/**
 * The one call publish makes (src/ledger/flows/publish-plan.ts): inside publish's transaction,
 * after the plan row exists, compute and store the headline when the plan has a project and
 * `declared_targets`. Returns the document (printed under the result's `headline` key) or
 * undefined. Same on SQLite and PostgreSQL (the statements go through `store.sql`).
 */
import type { LedgerCore } from "../../ledger/core.js";
import { LedgerEvent } from "../../ledger/events.js";
import { type HeadlineDoc, publishHeadline } from "./headline.js";
import { nodeSourceFor } from "./node-source.js";
import { SqlWhyStore } from "./why-store.js";

export function headlineAtPublish(
  l: LedgerCore,
  plan: { plan_id: string; project: string | null; extensions: Record<string, unknown>; at: string },
): HeadlineDoc | undefined {
  if (plan.project === null || plan.project === "none" || plan.extensions.declared_targets === undefined)
    return undefined;
  const store = l.store;
  const session =
    store.sql.get<{ session_id: string | null }>("SELECT session_id FROM plans WHERE plan_id = ?", [
      plan.plan_id,
    ])?.session_id ?? null;
  const doc = publishHeadline(new SqlWhyStore(store.sql), nodeSourceFor(store), {
    plan_id: plan.plan_id,
    project: plan.project,
    repo: store.getProject(plan.project)?.repo_path ?? null,
    session_id: session,
    declared_targets: plan.extensions.declared_targets,
    headline_notes: plan.extensions.headline_notes,
    at: plan.at,
  });
  if (doc)
    store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanHeadline,
      payload: { headline_id: doc.headline_id, ...doc.summary },
    });
  return doc;
}
