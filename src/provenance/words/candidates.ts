/**
 * The utterances a plan's reason drafts may quote (spec §4.2 "Draft"): those attributed to the
 * plan, the project's utterances inside the plan window (created → finished, or an open end),
 * and every utterance of a session that has one attributed to the plan or is the plan's own
 * `session_id`. Read by `reasons/` (reason-slots `draft`, rule R0).
 */
import type { WordStore } from "./store.js";
import type { UtteranceRow } from "./types.js";

/** The plan's candidate utterances, each once, by id; empty for an unknown plan. */
export function candidateUtterances(store: WordStore, planId: string): UtteranceRow[] {
  const plan = store.planWindow(planId);
  if (!plan) return [];
  const byId = new Map<number, UtteranceRow>();
  const add = (rows: UtteranceRow[]) => {
    for (const u of rows) byId.set(u.id, u);
  };
  add(store.utterancesOfPlan(planId));
  if (plan.project) add(store.utterancesOfProject(plan.project, plan.created_at, plan.finished_at));
  const sessions = new Set(store.sessionsOfPlan(planId));
  if (plan.session_id) sessions.add(plan.session_id);
  for (const s of sessions) add(store.utterancesOfSession(s));
  return [...byId.values()].sort((a, b) => a.id - b.id);
}
