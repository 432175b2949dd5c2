/**
 * The close writes (spec §4.4–4.5): registered on the ledger's `onPlanClosing` hook, they run in
 * the transaction that closes a reviewed plan COMPLETED (`<plan>-REVIEW.1` completed and the
 * roll-up closing review and plan, or `review-close` pass). In a savepoint: the rules R0–R6, then
 * the unstated backstop for every changed node still without a `reason` row (recorded_by system,
 * kind technical; state `active` and trigger verdict `ask` in `ask` mode, state `unknown` and
 * verdict `silent` in `pending` mode). Nothing here stops the close: with no usable node source
 * the review log says `[REASONS] state graph unavailable …`; a failure rolls back the savepoint
 * (no half-written provenance), is logged, and the close goes on.
 */
import { dirname, isAbsolute } from "node:path";
import type { LedgerCore } from "../../ledger/core.js";
import { hasReviewProject } from "../../ledger/core.js";
import { LedgerEvent } from "../../ledger/events.js";
import { childStepId } from "../../ledger/ids.js";
import { StepStatus } from "../../ledger/states.js";
import { findWorkspace, type PlanRow, SqliteStore, type StepRow, type Store } from "../../store/index.js";
import type { NodeSource } from "../types.js";
import { candidateUtterances, SqlWordStore } from "../words/index.js";
import { CloseMode, loadCloseMode } from "./close-mode.js";
import { nodeSourceFor } from "./node-source.js";
import {
  exitCodeOf,
  type FailedStepFacts,
  RuleId,
  type RuleNode,
  type RunLog,
  r0,
  r1,
  r2,
  r4,
  r5,
  r6,
} from "./rules.js";
import { SqlReasonStore, Tier } from "./store.js";

/** What the close wrote (also logged on the review step). */
export interface CloseSummary {
  mode: CloseMode;
  changed: number;
  by_rule: Record<string, number>;
  ambiguous: number;
  unstated: number;
  rejected_paths: number;
}

/** The `onPlanClosing` hook: never throws. */
export function closeReasons(l: LedgerCore, plan: PlanRow, review: StepRow): void {
  if (!hasReviewProject(plan) || plan.project === null) return;
  const log = (text: string) => l.addLog(review, "review", text);
  let nodes: NodeSource;
  try {
    nodes = nodeSourceFor(l.store);
    if (!nodes.hasGraph(plan.project)) {
      log(
        `[REASONS] state graph unavailable for project ${plan.project} (never analysed); no reasons written`,
      );
      return;
    }
  } catch (e) {
    log(`[REASONS] state graph unavailable for project ${plan.project}: ${(e as Error).message}`);
    return;
  }
  const setting = loadCloseMode({
    repo: l.store.getProject(plan.project)?.repo_path ?? null,
    workspaceDir: workspaceDirOf(l.store),
  });
  if (setting.error) log(`[REASONS] close_mode: ${setting.error}; using ask`);
  const reasons = new SqlReasonStore(l.store);
  try {
    const s = reasons.savepoint(() => {
      const summary = writeClose(l, plan, review, nodes, reasons, setting.mode);
      l.store.appendEvent({
        entityKind: "plan",
        entityId: plan.plan_id,
        planId: plan.plan_id,
        type: LedgerEvent.ReasonsClosed,
        payload: { ...summary },
      });
      return summary;
    });
    const rules = Object.entries(s.by_rule).map(([r, n]) => `${r} ${n}`);
    log(
      `[REASONS] close (close_mode ${s.mode}): ${s.changed} changed node${s.changed === 1 ? "" : "s"}; by rules: ${rules.length ? rules.join(", ") : "none"}; ambiguous ${s.ambiguous}; unstated ${s.unstated}${s.mode === CloseMode.Pending ? " (state unknown, listed by why --pending)" : ""}; rejected paths ${s.rejected_paths}`,
    );
  } catch (e) {
    log(`[REASONS] close writes failed and were rolled back (the close goes on): ${(e as Error).message}`);
  }
}

/**
 * The workspace folder whose `config.json` may set `close_mode`: the SQLite file's folder
 * (`.ratchet/ratchet.db`; an in-memory store has none), or on PostgreSQL the `.ratchet/` found
 * walking up from the current folder (the one that names the database in `store.url`).
 */
function workspaceDirOf(store: Store): string | null {
  if (store instanceof SqliteStore) return isAbsolute(store.db.name) ? dirname(store.db.name) : null;
  return findWorkspace(process.cwd())?.dir ?? null;
}

/** The rules and the backstop, inside the caller's savepoint. */
export function writeClose(
  l: LedgerCore,
  plan: PlanRow,
  review: StepRow,
  nodes: NodeSource,
  reasons: SqlReasonStore,
  mode: CloseMode,
): CloseSummary {
  const project = plan.project as string;
  const planId = plan.plan_id;
  const stepId = childStepId(review.step_id, 1);
  const at = l.now();
  const changed = nodes.changedNodes(planId);
  const changedKeys = new Set(changed.map((n) => n.node_key));
  // A node whose only event is `node_matched` was seen, not touched: an analyzer may match every
  // node of the repo each run, and rules over all of them would write reasons for unchanged code.
  const touchedRaw = nodes
    .touchedNodes(planId)
    .filter((n) => n.event_types.some((t) => t !== "node_matched"));
  for (const n of changed) if (!touchedRaw.some((t) => t.node_key === n.node_key)) touchedRaw.push(n);
  const touched: (RuleNode & { run_id: number })[] = touchedRaw.map((n) => ({
    node_key: n.node_key,
    qualified_name: n.qualified_name,
    file_path: nodes.resolve(project, n.node_key)?.file_path ?? null,
    event_types: n.event_types,
    changed: changedKeys.has(n.node_key),
    run_id: n.run_id,
  }));
  const existing = reasons.reasonsOfPlan(planId);
  const answered = new Set(existing.filter((r) => r.role === "reason").map((r) => r.node_key));
  const summary: CloseSummary = {
    mode,
    changed: changed.length,
    by_rule: {},
    ambiguous: 0,
    unstated: 0,
    rejected_paths: 0,
  };
  const trigger = (
    node_key: string | null,
    rule_id: string | null,
    verdict: "auto" | "ask" | "silent" | "ambiguous",
    basis: string,
  ) =>
    reasons.insertTrigger({ project, plan_id: planId, node_key, path: "code", rule_id, verdict, basis, at });
  const base = (n: { node_key: string; run_id: number }) => ({
    project,
    node_key: n.node_key,
    run_id: n.run_id,
    plan_id: planId,
    step_id: stepId,
    kind: "technical",
    role: "reason" as const,
    state: "active" as const,
    recorded_by: "system" as const,
    at,
  });

  const utterances = candidateUtterances(new SqlWordStore(reasons.home), planId);
  const runs = runLogs(l, planId);
  const previous = previousReview(l, reasons, plan);
  for (const n of touched) {
    if (answered.has(n.node_key)) continue;
    const m0 = r0(n, touched, utterances);
    if (m0?.kind === "stated") {
      reasons.insertReason({
        ...base(n),
        tier: Tier.Stated,
        rule_id: RuleId.R0,
        verbatim_utterance_id: m0.utterance_id,
        verbatim_start: m0.span[0],
        verbatim_end: m0.span[1],
      });
      trigger(n.node_key, RuleId.R0, "auto", m0.basis);
      summary.by_rule.R0 = (summary.by_rule.R0 ?? 0) + 1;
      answered.add(n.node_key);
      continue;
    }
    if (m0?.kind === "ambiguous") {
      trigger(n.node_key, RuleId.R0, "ambiguous", m0.basis);
      summary.ambiguous++;
    }
    const derived: [string, string | undefined][] = [
      [RuleId.R1, r1(n, runs)],
      [RuleId.R2, r2(n, previous)],
      [RuleId.R4, r4(n)],
      [RuleId.R5, r5(reasons.activeConstraints(project, n.node_key))],
    ];
    const hit = derived.find(([, basis]) => basis !== undefined);
    if (hit) {
      const [rule, basis] = hit as [string, string];
      reasons.insertReason({ ...base(n), tier: Tier.Derived, rule_id: rule, interpretation: basis });
      trigger(n.node_key, rule, "auto", basis);
      summary.by_rule[rule] = (summary.by_rule[rule] ?? 0) + 1;
      answered.add(n.node_key);
    }
  }

  // R6: rejected paths, once per (plan, text).
  const seen = reasons.rejectedPathTexts(planId);
  for (const p of r6(failedSteps(l, planId), deviationsOnLiveSteps(l, planId), touched)) {
    if (seen.has(p.text)) continue;
    seen.add(p.text);
    const run = touched.find((t) => t.node_key === p.node_key)?.run_id ?? null;
    reasons.insertReason({
      ...base({ node_key: p.node_key ?? "", run_id: run ?? 0 }),
      node_key: p.node_key,
      run_id: run,
      role: "rejected_path",
      tier: Tier.Derived,
      rule_id: RuleId.R6,
      interpretation: p.text,
    });
    trigger(p.node_key, RuleId.R6, "auto", "a rejected path of the plan (failed step or deviation)");
    summary.rejected_paths++;
  }

  // The unstated backstop: every changed node still without a reason row.
  const pending = mode === CloseMode.Pending;
  for (const n of changed) {
    if (answered.has(n.node_key)) continue;
    reasons.insertReason({ ...base(n), tier: Tier.Unstated, state: pending ? "unknown" : "active" });
    trigger(
      n.node_key,
      null,
      pending ? "silent" : "ask",
      `no rule recognised it and no answer was recorded: unstated at close (close_mode ${mode})`,
    );
    summary.unstated++;
  }
  return summary;
}

/** Run-step logs of the plan's regular steps, in order, with their exit status. */
function runLogs(l: LedgerCore, planId: string): RunLog[] {
  const out: RunLog[] = [];
  for (const g of l.store.logsOfPlan(planId)) {
    if (g.step_id.includes("-REVIEW")) continue;
    const code = exitCodeOf(g.text);
    if (code !== undefined) out.push({ step_id: g.step_id, exit_code: code, text: g.text });
  }
  return out;
}

/** The review logs of the project's previous reviewed, completed plan (R2). */
function previousReview(
  l: LedgerCore,
  reasons: SqlReasonStore,
  plan: PlanRow,
): { plan_id: string; lines: string[] } | undefined {
  const prev = reasons.sql.get<{ plan_id: string }>(
    `SELECT plan_id FROM plans WHERE project = ? AND plan_id <> ? AND status = 'COMPLETED'
         AND review_state = 'reviewed' ORDER BY finished_at DESC, plan_id DESC LIMIT 1`,
    [plan.project, plan.plan_id],
  );
  if (!prev) return undefined;
  const lines = l.store
    .logsOfPlan(prev.plan_id)
    .filter((g) => g.step_id.includes("-REVIEW"))
    .flatMap((g) => g.text.split("\n"));
  return { plan_id: prev.plan_id, lines };
}

function failedSteps(l: LedgerCore, planId: string): FailedStepFacts[] {
  const steps = l.store.stepsOfPlan(planId);
  const devs = l.store.deviationsOfPlan(planId);
  return steps
    .filter((s) => s.status === StepStatus.Failed)
    .map((s) => ({
      step_id: s.step_id,
      title: s.title,
      description: s.description,
      failure_reason: s.failure_reason,
      recovered_by: devs
        .filter((d) => d.kind === "deviate" && d.parent_step_id === s.step_id)
        .map((d) => d.justification),
      log: l.store
        .logsOfStep(s.step_id)
        .map((g) => g.text)
        .join("\n"),
    }));
}

function deviationsOnLiveSteps(l: LedgerCore, planId: string) {
  const failed = new Set(
    l.store
      .stepsOfPlan(planId)
      .filter((s) => s.status === StepStatus.Failed)
      .map((s) => s.step_id),
  );
  return l.store
    .deviationsOfPlan(planId)
    .filter((d) => d.kind === "deviate" && (d.parent_step_id === null || !failed.has(d.parent_step_id)));
}
