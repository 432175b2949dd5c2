/**
 * A run's steps as timeline rows for {@link timeline} (the plan timeline's component): one row per
 * step run, timed by the run tables, and under each the sub-steps of its ledger step (retries,
 * deviations) from the run's plan. Pure (tested in test/web/run-timeline.test.ts).
 */
// biome-ignore lint/suspicious/noExplicitAny: JSON from the API is read field by field
type Json = any;

/** A run step's outcome in the ledger's status words, which the timeline colours. */
function statusOf(s: Json, runOpen: boolean): string {
  if (s.outcome === null || s.outcome === undefined)
    return s.started_at ? (runOpen ? "IN_PROGRESS" : "FAILED") : "PENDING";
  if (s.outcome === "passed") return "COMPLETED";
  if (s.outcome === "skipped") return "SKIPPED";
  return "FAILED";
}

/**
 * Rows for the timeline. A step that started but has no end in a run that is over is drawn up to
 * the run's end (it does not tick); in a running run it reaches "now" and ticks.
 */
export function runTimelineSteps(run: Json, stepRuns: readonly Json[], planSteps: readonly Json[]): Json[] {
  const open = run.status === "running";
  const rows: Json[] = stepRuns.map((s, i) => ({
    step_id: s.ledger_step_id ?? `${run.run_id}:${s.step_id}`,
    run_step_id: s.step_id,
    parent_step_id: null,
    seq: i,
    title: s.step_id,
    status: statusOf(s, open),
    started_at: s.started_at,
    finished_at: s.finished_at ?? (s.started_at && !open ? (run.finished_at ?? s.started_at) : null),
  }));
  const included = new Set(rows.map((r) => r.step_id));
  // Sub-steps in depth order, so a retry's own retries find their parent included.
  for (const s of [...planSteps].sort((a, b) => (a.depth ?? 0) - (b.depth ?? 0))) {
    if (!s.parent_step_id || !included.has(s.parent_step_id) || included.has(s.step_id)) continue;
    included.add(s.step_id);
    rows.push({
      step_id: s.step_id,
      parent_step_id: s.parent_step_id,
      seq: s.seq,
      title: s.title,
      status: s.status,
      started_at: s.started_at,
      finished_at: s.finished_at ?? (s.started_at && !open && run.finished_at ? run.finished_at : null),
    });
  }
  return rows;
}
