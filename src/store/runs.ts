/**
 * The runs area of the store: workflow runs and their step runs (`workflow_runs`,
 * `workflow_step_runs`), beside the ledger {@link Store}. `RunStore` is the contract; `SqlRunStore`
 * holds its semantics once — which rows each call writes, with which event, in which transaction —
 * through the store's SQL door (`store.sql`); the SQLite (`sqlite/run-store.ts`) and PostgreSQL
 * (`postgres/run-store.ts`) classes supply only the statements that differ (step-run order). Every write runs inside `store.tx()` together with its
 * event (`entity_kind` "run"), and joins the caller's transaction when there is one, so a step's
 * ledger transition and its run row commit together.
 */
import type { StepOutcome } from "../workflow/types.js";
import type { Store } from "./types.js";

/** Status of a run. */
export const RunStatus = {
  /**
   * Recorded by an enqueue (`ratchet run --queue`, `POST /api/runs` with a queue): waiting for a
   * worker (`ratchet worker`) to claim it. No ledger plan and no step rows yet.
   */
  Queued: "queued",
  /** Its owner process is executing it (or died: see `interrupted`). */
  Running: "running",
  /** Every selected step passed. */
  Passed: "passed",
  /** At least one step did not pass. */
  Failed: "failed",
  /** The owner process died mid-run (found by the next `run` / `runs list` / `runs show`). */
  Interrupted: "interrupted",
  /**
   * Stopped on request (`ratchet runs cancel`, `POST /api/runs/{id}/cancel`): the running process
   * killed its script's process group and closed the run, or — its owner being dead — the request
   * closed it directly.
   */
  Cancelled: "cancelled",
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** A step run's outcome: a {@link StepOutcome}, or `interrupted` when the run's owner died mid-step. */
export type RunStepOutcome = StepOutcome | "interrupted";

/**
 * Outcomes that say nothing about the step itself (excluded from promotion evidence): it did not
 * run, or the harness (not the script) failed.
 */
const NOT_ATTEMPTED = ["skipped", "interrupted", "harness_failed"];

export interface WorkflowRunRow {
  run_id: string;
  workflow_id: string;
  workflow_path: string;
  plan_id: string | null;
  trigger: string;
  group_name: string | null;
  status: RunStatus;
  /** `<pid>@<host>` of the process executing the run. */
  owner: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
}

export interface WorkflowStepRunRow {
  run_id: string;
  step_id: string;
  ledger_step_id: string | null;
  mode: string;
  /** 1 when the saved script ran with no model (the fast path). */
  fast_path: number;
  /** NULL while pending or running. */
  outcome: RunStepOutcome | null;
  exit_code: number | null;
  duration_ms: number | null;
  tokens: number;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** Promotion evidence of one step, from the run tables. */
export interface StepEvidence {
  workflow_id: string;
  step_id: string;
  /** Finished step runs; skipped, interrupted and harness-failed ones excluded. */
  runs: number;
  successes: number;
  failures: number;
  /** Group names with at least one success (`(none)` for runs without `--group`). */
  groups_covered: string[];
  by_outcome: Record<string, number>;
  last_run: { run_id: string; outcome: string; at: string; group_name: string | null } | null;
}

export const NO_GROUP = "(none)";

/** What a run's start records (status, times and error are set by the store). */
export type NewRun = Omit<WorkflowRunRow, "status" | "finished_at" | "error" | "started_at"> & {
  started_at?: string;
};

export interface StepFinish {
  outcome: RunStepOutcome;
  fast_path: boolean;
  exit_code: number | null;
  duration_ms: number | null;
  tokens?: number;
  error: string | null;
}

export interface RunQuery {
  workflowId?: string;
  status?: string;
  /** What started the run (`manual`, `schedule`, …). */
  trigger?: string;
  /** Only runs started at or after this ISO time. */
  since?: string;
  /** Only runs started before this ISO time. */
  until?: string;
  /** Only runs older than this cursor (keyset pagination by started_at, run_id). */
  before?: { started_at: string; run_id: string };
  limit?: number;
}

/** A workflow seen in the run tables: its id, newest path and newest run time. */
export interface RunWorkflowRow {
  workflow_id: string;
  workflow_path: string;
  last_run_at: string;
}

/** What an enqueue records: a `queued` run whose bundle a worker will execute. */
export interface QueuedRunInput {
  run_id: string;
  workflow_id: string;
  workflow_path: string;
  trigger: string;
  group_name: string | null;
  /** The content-addressed bundle (workflow file and learned scripts) the worker materialises. */
  bundle_hash: string;
  /** `<pid>@<host>` of the enqueuing process (recorded in `run.queued`). */
  queued_by: string;
}

/** A worker's claim of a queued run. */
export interface RunClaim {
  plan_id: string;
  /** `<pid>@<host>` of the worker process. */
  owner: string;
  /** Epoch ms after which any process may mark the run interrupted (a heartbeat moves it). */
  lease_expires_at: number;
  /**
   * The workflow's `concurrency`: the claim is refused (nothing written, the run stays `queued`)
   * while this many runs of the workflow are `running` — counted under the write lock.
   */
  max_running?: number;
}

/** The lease of a running run (null columns: a local run, checked by its owner's pid only). */
export interface RunLease {
  run_id: string;
  plan_id: string | null;
  owner: string;
  lease_expires_at: number | null;
  heartbeat_at: string | null;
}

/** The runs contract. Writes join the ledger store's transaction (`store.tx`). */
export interface RunStore {
  /** The ledger store the runs live beside (its `tx` is the runs' write transaction). */
  readonly store: Store;
  /** Inserts a run (status `running`) and a pending row per selected step, with `run.started`. */
  startRun(
    run: NewRun,
    steps: { step_id: string; ledger_step_id: string | null; mode: string }[],
  ): WorkflowRunRow;
  /**
   * Records a `queued` run (no plan, no step rows) with `run.queued`.
   * @throws the store's unique violation when the run id exists (an enqueue is never doubled).
   */
  enqueueRun(run: QueuedRunInput): WorkflowRunRow;
  /**
   * Claims a `queued` run for a worker: status `running`, its plan, owner and lease, one pending row
   * per selected step, with `run.started`. Returns undefined (writing nothing) when the run is not
   * `queued` any more — claimed, cancelled or interrupted — so a job runs a run at most once.
   */
  claimRun(
    runId: string,
    claim: RunClaim,
    steps: { step_id: string; ledger_step_id: string | null; mode: string }[],
  ): WorkflowRunRow | undefined;
  /**
   * Moves the lease of a running run held by `owner`. Returns false when the run is not running
   * under that owner any more (another process found the lease expired and interrupted it).
   */
  heartbeat(runId: string, owner: string, leaseExpiresAt: number): boolean;
  /** Closes a `queued` run that cannot start (`failed`, `run.finished`). False when it is not queued. */
  failQueued(runId: string, error: string): boolean;
  /** The leases of every `running` run. */
  runningLeases(): RunLease[];
  /** Marks a step run as started. */
  startStep(runId: string, stepId: string, patch?: { mode?: string; fast_path?: boolean }): void;
  /** Records a step's outcome with `run.step_finished`. */
  finishStep(runId: string, stepId: string, r: StepFinish): void;
  /**
   * Closes a run: `passed` or `failed` with `run.finished`; `interrupted` (cancelled by a signal)
   * with `run.interrupted`; `cancelled` (on request) with `run.cancelled`.
   */
  finishRun(
    runId: string,
    status: "passed" | "failed" | "interrupted" | "cancelled",
    error: string | null,
  ): void;
  /**
   * Marks a `running` run `interrupted` (with `run.interrupted`): a started, unfinished step becomes
   * `interrupted`, a step that never started `skipped`. Returns the step ids that were running.
   * Call inside the transaction that also fails the ledger steps.
   */
  markInterrupted(runId: string, reason: string): string[];
  /**
   * Like {@link markInterrupted}, status `cancelled` with `run.cancelled` (a cancel of a dead owner's
   * run, or of a `queued` run no worker has claimed yet).
   */
  markCancelled(runId: string, reason: string): string[];
  /**
   * Records a cancel request of a `running` run (`run.cancel_requested`); the process executing it
   * polls {@link cancelRequested}. Returns false when the run is not running.
   */
  requestCancel(runId: string, by: string): boolean;
  /** Whether a cancel of the run was requested. */
  cancelRequested(run: Pick<WorkflowRunRow, "run_id" | "plan_id">): boolean;
  getRun(runId: string): WorkflowRunRow | undefined;
  /** @throws Error when the run is not recorded. */
  requireRun(runId: string): WorkflowRunRow;
  /** Runs, newest first (`started_at DESC, run_id DESC`), after the cursor when given. */
  listRuns(q?: RunQuery): WorkflowRunRow[];
  /** A run's step rows in the order they were inserted (the run's execution order). */
  stepRuns(runId: string): WorkflowStepRunRow[];
  /** The newest step run of `stepId` in `workflowId` that passed (for `--only` and `run-saved` inputs). */
  lastPassed(workflowId: string, stepId: string): { run_id: string } | undefined;
  /** Promotion evidence of one step. */
  evidence(workflowId: string, stepId: string): StepEvidence;
  /** The workflows seen in the run tables, by workflow id. */
  workflows(limit: number): RunWorkflowRow[];
  /** The newest recorded path of a workflow id. */
  workflowPath(workflowId: string): string | undefined;
}

/** A parameter of a run-store statement. */
export type RunParam = string | number | null;

/**
 * The run semantics once. Statements are written with `?` placeholders; `store.sql` rewrites them
 * for the store it runs on.
 */
export abstract class SqlRunStore implements RunStore {
  constructor(
    readonly store: Store,
    protected readonly now: () => string = () => new Date().toISOString(),
  ) {}

  /** Statements go through the store's one SQL door (`store.sql`), inside its transactions. */
  protected get<R>(sql: string, params: readonly RunParam[]): R | undefined {
    return this.store.sql.get<R>(sql, params);
  }
  protected all<R>(sql: string, params: readonly RunParam[]): R[] {
    return this.store.sql.all<R>(sql, params);
  }
  protected run(sql: string, params: readonly RunParam[]): void {
    this.store.sql.run(sql, params);
  }
  /** Inserts one step run; `seq` is its place in the run (0-based). */
  protected abstract insertStepRun(
    runId: string,
    seq: number,
    s: { step_id: string; ledger_step_id: string | null; mode: string },
  ): void;
  abstract stepRuns(runId: string): WorkflowStepRunRow[];
  abstract workflows(limit: number): RunWorkflowRow[];

  #event(run: Pick<WorkflowRunRow, "run_id" | "plan_id">, type: string, payload: Record<string, unknown>) {
    this.store.appendEvent({ entityKind: "run", entityId: run.run_id, planId: run.plan_id, type, payload });
  }

  startRun(
    run: NewRun,
    steps: { step_id: string; ledger_step_id: string | null; mode: string }[],
  ): WorkflowRunRow {
    const row: WorkflowRunRow = {
      run_id: run.run_id,
      workflow_id: run.workflow_id,
      workflow_path: run.workflow_path,
      plan_id: run.plan_id,
      trigger: run.trigger,
      group_name: run.group_name,
      status: RunStatus.Running,
      owner: run.owner,
      started_at: run.started_at ?? this.now(),
      finished_at: null,
      error: null,
    };
    this.store.tx(() => {
      this.run(
        `INSERT INTO workflow_runs (run_id, workflow_id, workflow_path, plan_id, trigger, group_name, status, owner, started_at, finished_at, error)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          row.run_id,
          row.workflow_id,
          row.workflow_path,
          row.plan_id,
          row.trigger,
          row.group_name,
          row.status,
          row.owner,
          row.started_at,
          row.finished_at,
          row.error,
        ],
      );
      for (const [i, s] of steps.entries()) this.insertStepRun(row.run_id, i, s);
      this.#event(row, "run.started", {
        workflow_id: row.workflow_id,
        trigger: row.trigger,
        group_name: row.group_name,
        owner: row.owner,
        steps: steps.map((s) => s.step_id),
      });
    });
    return row;
  }

  enqueueRun(run: QueuedRunInput): WorkflowRunRow {
    const row: WorkflowRunRow = {
      run_id: run.run_id,
      workflow_id: run.workflow_id,
      workflow_path: run.workflow_path,
      plan_id: null,
      trigger: run.trigger,
      group_name: run.group_name,
      status: RunStatus.Queued,
      owner: "queue",
      started_at: this.now(),
      finished_at: null,
      error: null,
    };
    this.store.tx(() => {
      this.run(
        `INSERT INTO workflow_runs (run_id, workflow_id, workflow_path, plan_id, trigger, group_name, status, owner, started_at, finished_at, error, bundle_hash)
           VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, NULL, NULL, ?)`,
        [
          row.run_id,
          row.workflow_id,
          row.workflow_path,
          row.trigger,
          row.group_name,
          row.status,
          row.owner,
          row.started_at,
          run.bundle_hash,
        ],
      );
      this.#event(row, "run.queued", {
        workflow_id: row.workflow_id,
        trigger: row.trigger,
        group_name: row.group_name,
        bundle_hash: run.bundle_hash,
        queued_by: run.queued_by,
      });
    });
    return row;
  }

  claimRun(
    runId: string,
    claim: RunClaim,
    steps: { step_id: string; ledger_step_id: string | null; mode: string }[],
  ): WorkflowRunRow | undefined {
    return this.store.tx(() => {
      const now = this.now();
      if (claim.max_running !== undefined) {
        const cur = this.getRun(runId);
        if (cur?.status !== RunStatus.Queued) return undefined;
        const n = this.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ? AND status = ?",
          [cur.workflow_id, RunStatus.Running],
        );
        if (Number(n?.n ?? 0) >= claim.max_running) return undefined;
      }
      // The status test is the claim: under the write lock, one caller turns `queued` into `running`.
      const won = this.get<{ run_id: string }>(
        `UPDATE workflow_runs SET status = ?, plan_id = ?, owner = ?, started_at = ?, lease_expires_at = ?, heartbeat_at = ?
           WHERE run_id = ? AND status = ? RETURNING run_id`,
        [
          RunStatus.Running,
          claim.plan_id,
          claim.owner,
          now,
          claim.lease_expires_at,
          now,
          runId,
          RunStatus.Queued,
        ],
      );
      if (!won) return undefined;
      const row = this.requireRun(runId);
      for (const [i, s] of steps.entries()) this.insertStepRun(runId, i, s);
      this.#event(row, "run.started", {
        workflow_id: row.workflow_id,
        trigger: row.trigger,
        group_name: row.group_name,
        owner: row.owner,
        steps: steps.map((s) => s.step_id),
        lease_expires_at: claim.lease_expires_at,
      });
      return row;
    });
  }

  heartbeat(runId: string, owner: string, leaseExpiresAt: number): boolean {
    return this.store.tx(
      () =>
        this.get<{ run_id: string }>(
          "UPDATE workflow_runs SET lease_expires_at = ?, heartbeat_at = ? WHERE run_id = ? AND status = ? AND owner = ? RETURNING run_id",
          [leaseExpiresAt, this.now(), runId, RunStatus.Running, owner],
        ) !== undefined,
    );
  }

  failQueued(runId: string, error: string): boolean {
    return this.store.tx(() => {
      const run = this.get<WorkflowRunRow>(
        `UPDATE workflow_runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ? AND status = ? RETURNING ${RUN_COLUMNS}`,
        [RunStatus.Failed, this.now(), error, runId, RunStatus.Queued],
      );
      if (!run) return false;
      this.#event(run, "run.finished", { status: RunStatus.Failed, error });
      return true;
    });
  }

  runningLeases(): RunLease[] {
    return this.all<RunLease>(
      "SELECT run_id, plan_id, owner, lease_expires_at, heartbeat_at FROM workflow_runs WHERE status = ? ORDER BY started_at, run_id",
      [RunStatus.Running],
    );
  }

  startStep(runId: string, stepId: string, patch: { mode?: string; fast_path?: boolean } = {}): void {
    this.store.tx(() => {
      this.run(
        "UPDATE workflow_step_runs SET started_at = ?, mode = COALESCE(?, mode), fast_path = COALESCE(?, fast_path) WHERE run_id = ? AND step_id = ?",
        [
          this.now(),
          patch.mode ?? null,
          patch.fast_path === undefined ? null : patch.fast_path ? 1 : 0,
          runId,
          stepId,
        ],
      );
    });
  }

  finishStep(runId: string, stepId: string, r: StepFinish): void {
    this.store.tx(() => {
      const run = this.requireRun(runId);
      const now = this.now();
      const duration = r.duration_ms === null ? null : Math.round(r.duration_ms);
      this.run(
        `UPDATE workflow_step_runs SET outcome = ?, fast_path = ?, exit_code = ?, duration_ms = ?, tokens = ?, error = ?,
             started_at = COALESCE(started_at, ?), finished_at = ? WHERE run_id = ? AND step_id = ?`,
        [
          r.outcome,
          r.fast_path ? 1 : 0,
          r.exit_code,
          duration,
          r.tokens ?? 0,
          r.error,
          now,
          now,
          runId,
          stepId,
        ],
      );
      this.#event(run, "run.step_finished", {
        step_id: stepId,
        outcome: r.outcome,
        fast_path: r.fast_path,
        exit_code: r.exit_code,
        duration_ms: duration,
        tokens: r.tokens ?? 0,
      });
    });
  }

  finishRun(
    runId: string,
    status: "passed" | "failed" | "interrupted" | "cancelled",
    error: string | null,
  ): void {
    this.store.tx(() => {
      const run = this.requireRun(runId);
      // Closed already (another process found its lease expired and marked it interrupted): the
      // first ending stands.
      if (run.status !== RunStatus.Running) return;
      this.run("UPDATE workflow_runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?", [
        status,
        this.now(),
        error,
        runId,
      ]);
      const type =
        status === "interrupted"
          ? "run.interrupted"
          : status === "cancelled"
            ? "run.cancelled"
            : "run.finished";
      this.#event(run, type, { status, error });
    });
  }

  markInterrupted(runId: string, reason: string): string[] {
    return this.#markEnded(runId, RunStatus.Interrupted, reason);
  }

  markCancelled(runId: string, reason: string): string[] {
    return this.#markEnded(runId, RunStatus.Cancelled, reason);
  }

  requestCancel(runId: string, by: string): boolean {
    return this.store.tx(() => {
      const run = this.requireRun(runId);
      if (run.status !== RunStatus.Running) return false;
      this.#event(run, "run.cancel_requested", { by });
      return true;
    });
  }

  cancelRequested(run: Pick<WorkflowRunRow, "run_id" | "plan_id">): boolean {
    if (run.plan_id === null)
      return (
        this.get(
          "SELECT 1 AS one FROM events WHERE entity_kind = 'run' AND entity_id = ? AND type = 'run.cancel_requested' LIMIT 1",
          [run.run_id],
        ) !== undefined
      );
    // A run's events carry its plan: the store's plan lookup finds them (SQLite migration 13 indexes
    // a plan's events by run of consecutive events, which SQL over `plan_id` alone cannot use).
    const q = { planId: run.plan_id, entityKind: "run", entityId: run.run_id, limit: 1000 };
    for (let since = 0; ; ) {
      const rows = this.store.listEvents({ ...q, since });
      if (rows.some((e) => e.type === "run.cancel_requested")) return true;
      const last = rows.at(-1);
      if (rows.length < q.limit || last === undefined) return false;
      since = last.id;
    }
  }

  #markEnded(runId: string, status: "interrupted" | "cancelled", reason: string): string[] {
    return this.store.tx(() => {
      const run = this.requireRun(runId);
      // A queued run (no steps, no plan) can be cancelled before a worker claims it.
      const queued = run.status === RunStatus.Queued && status === RunStatus.Cancelled;
      if (run.status !== RunStatus.Running && !queued) return [];
      const now = this.now();
      const open = this.stepRuns(runId).filter((s) => s.outcome === null);
      const running = open.filter((s) => s.started_at !== null).map((s) => s.step_id);
      this.run(
        "UPDATE workflow_step_runs SET outcome = 'interrupted', error = ?, finished_at = ? WHERE run_id = ? AND outcome IS NULL AND started_at IS NOT NULL",
        [reason, now, runId],
      );
      this.run(
        "UPDATE workflow_step_runs SET outcome = 'skipped', error = ?, finished_at = ? WHERE run_id = ? AND outcome IS NULL",
        [`not started: ${reason}`, now, runId],
      );
      this.run("UPDATE workflow_runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?", [
        status,
        now,
        reason,
        runId,
      ]);
      this.#event(run, status === "cancelled" ? "run.cancelled" : "run.interrupted", {
        reason,
        running_steps: running,
      });
      return running;
    });
  }

  getRun(runId: string): WorkflowRunRow | undefined {
    return this.get<WorkflowRunRow>(`SELECT ${RUN_COLUMNS} FROM workflow_runs WHERE run_id = ?`, [runId]);
  }

  requireRun(runId: string): WorkflowRunRow {
    const r = this.getRun(runId);
    if (!r) throw new Error(`run ${runId} is not recorded`);
    return r;
  }

  listRuns(q: RunQuery = {}): WorkflowRunRow[] {
    const where: string[] = [];
    const params: RunParam[] = [];
    if (q.workflowId !== undefined) {
      where.push("workflow_id = ?");
      params.push(q.workflowId);
    }
    if (q.status !== undefined) {
      where.push("status = ?");
      params.push(q.status);
    }
    if (q.trigger !== undefined) {
      where.push("trigger = ?");
      params.push(q.trigger);
    }
    if (q.since !== undefined) {
      where.push("started_at >= ?");
      params.push(q.since);
    }
    if (q.until !== undefined) {
      where.push("started_at < ?");
      params.push(q.until);
    }
    if (q.before) {
      where.push("(started_at < ? OR (started_at = ? AND run_id < ?))");
      params.push(q.before.started_at, q.before.started_at, q.before.run_id);
    }
    params.push(q.limit ?? 50);
    return this.all<WorkflowRunRow>(
      `SELECT ${RUN_COLUMNS} FROM workflow_runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY started_at DESC, run_id DESC LIMIT ?`,
      params,
    );
  }

  lastPassed(workflowId: string, stepId: string): { run_id: string } | undefined {
    return this.get<{ run_id: string }>(
      `SELECT s.run_id FROM workflow_step_runs s JOIN workflow_runs r ON r.run_id = s.run_id
         WHERE r.workflow_id = ? AND s.step_id = ? AND s.outcome = 'passed'
         ORDER BY s.finished_at DESC, s.run_id DESC LIMIT 1`,
      [workflowId, stepId],
    );
  }

  evidence(workflowId: string, stepId: string): StepEvidence {
    const rows = this.all<{
      outcome: string;
      finished_at: string;
      run_id: string;
      group_name: string | null;
    }>(
      `SELECT s.outcome, s.finished_at, s.run_id, r.group_name FROM workflow_step_runs s
         JOIN workflow_runs r ON r.run_id = s.run_id
         WHERE r.workflow_id = ? AND s.step_id = ? AND s.outcome IS NOT NULL
         ORDER BY s.finished_at, s.run_id`,
      [workflowId, stepId],
    );
    return summariseEvidence(workflowId, stepId, rows);
  }

  workflowPath(workflowId: string): string | undefined {
    return this.get<{ workflow_path: string }>(
      "SELECT workflow_path FROM workflow_runs WHERE workflow_id = ? ORDER BY started_at DESC LIMIT 1",
      [workflowId],
    )?.workflow_path;
  }
}

/** The columns of a run row, in the order of the SQLite table (so rows serialise alike on both stores). */
export const RUN_COLUMNS =
  "run_id, workflow_id, workflow_path, plan_id, trigger, group_name, status, owner, started_at, finished_at, error";
/** The columns of a step-run row, in the order of the SQLite table. */
export const STEP_RUN_COLUMNS =
  "run_id, step_id, ledger_step_id, mode, fast_path, outcome, exit_code, duration_ms, tokens, error, started_at, finished_at";

/** Pure: evidence from step-run rows ordered oldest first. */
export function summariseEvidence(
  workflowId: string,
  stepId: string,
  rows: readonly { outcome: string; finished_at: string; run_id: string; group_name: string | null }[],
): StepEvidence {
  const byOutcome: Record<string, number> = {};
  const groups = new Set<string>();
  let runs = 0;
  let successes = 0;
  let last: StepEvidence["last_run"] = null;
  for (const r of rows) {
    byOutcome[r.outcome] = (byOutcome[r.outcome] ?? 0) + 1;
    if (NOT_ATTEMPTED.includes(r.outcome)) continue;
    runs++;
    if (r.outcome === "passed") {
      successes++;
      groups.add(r.group_name ?? NO_GROUP);
    }
    last = { run_id: r.run_id, outcome: r.outcome, at: r.finished_at, group_name: r.group_name };
  }
  return {
    workflow_id: workflowId,
    step_id: stepId,
    runs,
    successes,
    failures: runs - successes,
    groups_covered: [...groups].sort(),
    by_outcome: byOutcome,
    last_run: last,
  };
}
