/** Read views of the ledger: a plan in tree order with logs, deviations, metrics and skills. */
import { ErrorCode, RatchetError } from "../core/index.js";
import type {
  Blobs,
  DeviationRow,
  MetricRow,
  PlanRow,
  SkillRow,
  StepLogRow,
  StepRow,
  Store,
} from "../store/index.js";

export interface StepView extends StepRow {
  logs: (StepLogRow & { full?: string })[];
  children: string[];
}

export interface PlanView {
  plan: PlanRow;
  /** Steps in tree order: each step followed by its children (by seq), the review step last. */
  steps: StepView[];
  deviations: DeviationRow[];
  metrics: MetricRow[];
  skills: SkillRow[];
}

/** Orders steps so each parent is followed by its subtree, siblings by `seq`. Pure. */
export function treeOrder<T extends { step_id: string; parent_step_id: string | null; seq: number }>(
  steps: readonly T[],
): T[] {
  const byParent = new Map<string | null, T[]>();
  const ids = new Set(steps.map((s) => s.step_id));
  for (const s of steps) {
    const key = s.parent_step_id && ids.has(s.parent_step_id) ? s.parent_step_id : null;
    const list = byParent.get(key) ?? [];
    list.push(s);
    byParent.set(key, list);
  }
  for (const list of byParent.values()) list.sort((a, b) => a.seq - b.seq);
  const out: T[] = [];
  const visit = (parent: string | null) => {
    for (const s of byParent.get(parent) ?? []) {
      out.push(s);
      visit(s.step_id);
    }
  };
  visit(null);
  return out;
}

export function showPlan(
  store: Store,
  blobs: Blobs,
  planId: string,
  opts: { step?: string; full?: boolean } = {},
): PlanView {
  const plan = store.getPlan(planId);
  if (!plan) throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId });
  const rows = store.stepsOfPlan(planId);
  if (opts.step !== undefined && !rows.some((s) => s.step_id === opts.step)) {
    throw new RatchetError(ErrorCode.StepNotFound, `step ${opts.step} not found in plan ${planId}`, {
      stepId: opts.step,
      planId,
    });
  }
  const logs = store.logsOfPlan(planId);
  const logsByStep = new Map<string, StepLogRow[]>();
  for (const l of logs) {
    const list = logsByStep.get(l.step_id) ?? [];
    list.push(l);
    logsByStep.set(l.step_id, list);
  }
  const ordered = treeOrder(rows);
  const views: StepView[] = ordered
    .filter(
      (s) => opts.step === undefined || s.step_id === opts.step || s.step_id.startsWith(`${opts.step}.`),
    )
    .map((s) => ({
      ...s,
      children: rows
        .filter((c) => c.parent_step_id === s.step_id)
        .sort((a, b) => a.seq - b.seq)
        .map((c) => c.step_id),
      logs: (logsByStep.get(s.step_id) ?? []).map((l) =>
        opts.full && l.blob && blobs.has(l.blob) ? { ...l, full: blobs.getText(l.blob) } : l,
      ),
    }));
  return {
    plan,
    steps: views,
    deviations: store.deviationsOfPlan(planId),
    metrics: store.metricsOfPlan(planId),
    skills: store.skillsOfPlan(planId),
  };
}

const BADGE: Record<string, string> = {
  PENDING: "·",
  IN_PROGRESS: "▶",
  NEEDS_REVIEW: "?",
  COMPLETED: "✓",
  FAILED: "✗",
};

/** Renders a plan view as text for people. Pure. */
export function renderPlan(v: PlanView, opts: { logs?: boolean } = {}): string {
  const p = v.plan;
  const lines: string[] = [];
  lines.push(
    `${p.plan_id}  ${p.status}${p.project ? `  project=${p.project}` : ""}  revisions ${p.revision_count}/${p.max_revisions}`,
  );
  lines.push(`  goal: ${p.goal}`);
  for (const s of v.steps) {
    const indent = "  ".repeat(s.depth + 1);
    const extra = [
      s.exit_code !== null ? `exit=${s.exit_code}` : "",
      s.duration_ms !== null ? `${(s.duration_ms / 1000).toFixed(2)}s` : "",
      s.failure_reason ? `reason: ${s.failure_reason}` : "",
      s.summary ? `— ${s.summary}` : "",
    ]
      .filter(Boolean)
      .join("  ");
    lines.push(
      `${indent}${BADGE[s.status] ?? " "} ${s.step_id} [${s.type || "untyped"}] ${s.status}  ${s.title}${extra ? `  ${extra}` : ""}`,
    );
    if (opts.logs) {
      for (const l of s.logs) {
        const body = (l.full ?? l.text).replace(/\n$/, "");
        lines.push(
          `${indent}    ┌ ${l.kind} ${l.at}${l.truncated ? ` (cut; full ${l.bytes} bytes in blob ${l.blob?.slice(0, 12)})` : ""}`,
        );
        for (const line of body.split("\n")) lines.push(`${indent}    │ ${line}`);
      }
    }
  }
  if (v.deviations.length) {
    lines.push("  deviations:");
    for (const d of v.deviations) {
      lines.push(
        d.kind === "raise_budget"
          ? `    #${d.id} raise-budget ${d.old_max} → ${d.new_max}: ${d.justification}`
          : `    #${d.id} under ${d.parent_step_id} → ${JSON.parse(d.sub_step_ids ?? "[]").join(", ")}: ${d.justification}`,
      );
    }
  }
  if (v.metrics.length) {
    lines.push("  metrics:");
    for (const m of v.metrics)
      lines.push(
        `    ${m.name} = ${m.value}${m.unit ? ` ${m.unit}` : ""}${m.step_id ? ` (${m.step_id})` : ""}`,
      );
  }
  if (v.skills.length) {
    lines.push("  skills:");
    for (const k of v.skills) lines.push(`    ${k.name} (${k.source})${k.reason ? `: ${k.reason}` : ""}`);
  }
  return lines.join("\n");
}
