/**
 * A plan's reason checklist for the dashboard (`GET /api/plans/{id}/reasons`): its reason slots
 * (the node source's changed nodes, spec §2.2) with the reasons recorded for each in this plan.
 * A slot is answered when one of its rows is not `unstated`. Read-only (no read_hit: the
 * dashboard's display is not one of the spec's moments).
 */
import type { ChangedNode, NodeSource } from "../types.js";
import { type ReadRecord, recordsOf } from "./read.js";
import type { ReasonRow, WhyStore } from "./why-store.js";

export interface ChecklistSlot extends ChangedNode {
  answered: boolean;
  reasons: ReadRecord[];
}

export interface PlanChecklist {
  plan_id: string;
  project: string | null;
  has_graph: boolean;
  slots: ChecklistSlot[];
  answered: number;
  open: number;
  /** Rows of the plan on nodes outside its changed set (rules, rejected paths). */
  other: ReadRecord[];
}

export function planChecklist(
  store: WhyStore,
  nodes: NodeSource,
  plan: { plan_id: string; project: string | null },
): PlanChecklist {
  const hasGraph = plan.project !== null && nodes.hasGraph(plan.project);
  const changed = hasGraph ? nodes.changedNodes(plan.plan_id) : [];
  const rows = store.planReasons(plan.plan_id);
  const byKey = new Map<string, ReasonRow[]>();
  for (const r of rows) if (r.node_key) byKey.set(r.node_key, [...(byKey.get(r.node_key) ?? []), r]);
  const slots = changed.map((c) => {
    const mine = byKey.get(c.node_key) ?? [];
    return {
      ...c,
      answered: mine.some((r) => r.tier !== "unstated"),
      reasons: recordsOf(store, mine, "reasons"),
    };
  });
  const keys = new Set(changed.map((c) => c.node_key));
  const other = rows.filter((r) => !r.node_key || !keys.has(r.node_key));
  const answered = slots.filter((s) => s.answered).length;
  return {
    plan_id: plan.plan_id,
    project: plan.project,
    has_graph: hasGraph,
    slots,
    answered,
    open: slots.length - answered,
    other: recordsOf(store, other, "reasons"),
  };
}
