/**
 * The runs area on PostgreSQL (migration 2 of `migrations.ts`): SQLite's columns and meaning, plus
 * `seq`, the step's place in its run, which stands in for SQLite's `rowid` order. Writes join
 * {@link PgStore.tx}, so they hold the workspace write lock like every ledger write.
 */
import { type RunWorkflowRow, SqlRunStore, STEP_RUN_COLUMNS, type WorkflowStepRunRow } from "../runs.js";
import type { PgStore } from "./pg-store.js";

export class PgRunStore extends SqlRunStore {
  constructor(store: PgStore, now?: () => string) {
    super(store, now);
  }

  protected insertStepRun(
    runId: string,
    seq: number,
    s: { step_id: string; ledger_step_id: string | null; mode: string },
  ): void {
    this.run(
      "INSERT INTO workflow_step_runs (run_id, step_id, seq, ledger_step_id, mode, fast_path, tokens) VALUES (?, ?, ?, ?, ?, 0, 0)",
      [runId, s.step_id, seq, s.ledger_step_id, s.mode],
    );
  }

  stepRuns(runId: string): WorkflowStepRunRow[] {
    return this.all<WorkflowStepRunRow>(
      `SELECT ${STEP_RUN_COLUMNS} FROM workflow_step_runs WHERE run_id = ? ORDER BY seq`,
      [runId],
    );
  }

  /** One row per workflow id, its newest run (`DISTINCT ON` along `workflow_runs_workflow`). */
  workflows(limit: number): RunWorkflowRow[] {
    return this.all<RunWorkflowRow>(
      `SELECT DISTINCT ON (workflow_id) workflow_id, workflow_path, started_at AS last_run_at
         FROM workflow_runs ORDER BY workflow_id, started_at DESC LIMIT ?`,
      [limit],
    );
  }
}
