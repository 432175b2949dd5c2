/**
 * The runs area on PostgreSQL (migration 2 of `migrations.ts`): SQLite's columns and meaning, plus
 * `seq`, the step's place in its run, which stands in for SQLite's `rowid` order. Writes join
 * {@link PgStore.tx}, so they hold the workspace write lock like every ledger write.
 */
import {
  type RunParam,
  type RunWorkflowRow,
  SqlRunStore,
  STEP_RUN_COLUMNS,
  type WorkflowStepRunRow,
} from "../runs.js";
import type { PgStore } from "./pg-store.js";
import type { PgParam } from "./sync-client.js";

/** `?` placeholders as `$1…$n` (the run statements hold no `?` inside literals). */
function numbered(sql: string): string {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
}

export class PgRunStore extends SqlRunStore {
  readonly #pg: PgStore["pg"];
  readonly #sql = new Map<string, string>();

  constructor(store: PgStore, now?: () => string) {
    super(store, now);
    this.#pg = store.pg;
  }

  #text(sql: string): string {
    let s = this.#sql.get(sql);
    if (s === undefined) {
      s = numbered(sql);
      this.#sql.set(sql, s);
    }
    return s;
  }

  protected get<R>(sql: string, params: readonly RunParam[]): R | undefined {
    return this.#pg.query<R>(this.#text(sql), params as PgParam[]).rows[0];
  }

  protected all<R>(sql: string, params: readonly RunParam[]): R[] {
    return this.#pg.query<R>(this.#text(sql), params as PgParam[]).rows;
  }

  protected run(sql: string, params: readonly RunParam[]): void {
    this.#pg.query(this.#text(sql), params as PgParam[]);
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
