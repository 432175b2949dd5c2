/** The runs area on SQLite: `workflow_runs` / `workflow_step_runs` of migration 2, unchanged. */
import { type RunWorkflowRow, SqlRunStore, STEP_RUN_COLUMNS, type WorkflowStepRunRow } from "../runs.js";
import type { SqliteStore } from "./sqlite-store.js";

export class SqliteRunStore extends SqlRunStore {
  constructor(store: SqliteStore, now?: () => string) {
    super(store, now);
  }

  protected insertStepRun(
    runId: string,
    _seq: number,
    s: { step_id: string; ledger_step_id: string | null; mode: string },
  ): void {
    this.run(
      "INSERT INTO workflow_step_runs (run_id, step_id, ledger_step_id, mode, fast_path, tokens) VALUES (?, ?, ?, ?, 0, 0)",
      [runId, s.step_id, s.ledger_step_id, s.mode],
    );
  }

  stepRuns(runId: string): WorkflowStepRunRow[] {
    return this.all<WorkflowStepRunRow>(
      `SELECT ${STEP_RUN_COLUMNS} FROM workflow_step_runs WHERE run_id = ? ORDER BY rowid`,
      [runId],
    );
  }

  /**
   * Jumps from one workflow id to the next along `workflow_runs_workflow` (a skip scan), so the
   * cost grows with the number of workflows, not of runs.
   */
  workflows(limit: number): RunWorkflowRow[] {
    return this.all<RunWorkflowRow>(
      `WITH RECURSIVE ids(id) AS (
         SELECT MIN(workflow_id) FROM workflow_runs
         UNION ALL
         SELECT (SELECT MIN(workflow_id) FROM workflow_runs WHERE workflow_id > ids.id) FROM ids WHERE ids.id IS NOT NULL
       )
       SELECT r.workflow_id, r.workflow_path, r.started_at AS last_run_at
         FROM ids JOIN workflow_runs r ON r.rowid = (
           SELECT rowid FROM workflow_runs WHERE workflow_id = ids.id ORDER BY started_at DESC LIMIT 1)
         WHERE ids.id IS NOT NULL LIMIT ?`,
      [limit],
    );
  }
}
