/**
 * Enqueueing a run: one transaction records the workflow's bundle (blob), the `queued` run row
 * (`run.queued`) and the graphile-worker job (`graphile_worker.add_job` through `store.sql`), so a
 * job never names a missing run or bundle, and a run row never waits for a job that was not added.
 * The job key is the run id: a second add of the same run is a no-op (`unsafe_dedupe`).
 */
import { hostname } from "node:os";
import { ErrorCode, RatchetError } from "../core/index.js";
import { type Blobs, redactUrl, type Store } from "../store/index.js";
import { newRunId, RunTrigger, runStoreOf, selectRun, type Workflow } from "../workflow/index.js";
import { putBundle } from "./bundle.js";
import { DEFAULT_QUEUE, type RunJobPayload, runTask } from "./jobs.js";
import { JOB_MAX_ATTEMPTS } from "./limits.js";

export interface EnqueueRequest {
  vars?: Record<string, string>;
  group?: string;
  only?: readonly string[];
  trigger?: RunTrigger;
  stepTimeoutSeconds?: number;
  /** Which workers take it (`ratchet worker --queue`). Default `default`. */
  queue?: string;
  /** A run id chosen by the caller (a schedule slot's); default a new one. */
  runId?: string;
}

export interface QueuedRun {
  run_id: string;
  workflow_id: string;
  bundle_hash: string;
  job_id: number;
  queue: string;
}

/**
 * A workflow that declares `serial: true` (or `concurrency: 1`) runs one at a time across all
 * workers (a graphile queue). `concurrency` above 1 is enforced by the claim (worker.ts).
 */
export function serialQueueOf(wf: Workflow): string | null {
  return wf.serial || wf.concurrency === 1 ? `ratchet:${wf.id}` : null;
}

/** True once graphile-worker's schema is in the database. */
export function queueSchemaReady(store: Store): boolean {
  const row = store.sql.get<{ ok: string | null }>(
    "SELECT to_regprocedure('graphile_worker.add_job(text,json,text,timestamptz,integer,text,integer,text[],text)')::text AS ok",
  );
  return Boolean(row?.ok);
}

/**
 * Installs graphile-worker's schema when it is missing (graphile's own migrations; loaded only then).
 * @throws RatchetError `workspace_not_found` when the server cannot be reached.
 */
export async function ensureQueueSchema(store: Store, url: string): Promise<void> {
  if (queueSchemaReady(store)) return;
  const { runMigrations } = await import("graphile-worker");
  const { quietLogger } = await import("./log.js");
  try {
    await runMigrations({ connectionString: url, logger: await quietLogger() });
  } catch (e) {
    throw new RatchetError(
      ErrorCode.WorkspaceNotFound,
      `cannot install the queue's tables in ${redactUrl(url)}: ${(e as Error).message}`,
      { field: "store" },
    );
  }
}

/**
 * Records a queued run of `wf` and its job (the queue's schema must exist: {@link ensureQueueSchema}).
 * Refuses what a worker would refuse before recording anything: an unknown `--only` step or group.
 * @throws RatchetError `usage` / `not_found` naming the field; `invalid_value` naming `bundle`.
 */
export function enqueueRunSync(
  ctx: { store: Store; blobs: Blobs },
  wf: Workflow,
  req: EnqueueRequest = {},
): QueuedRun {
  selectRun(wf, req.only);
  if (req.group !== undefined && !(req.group in wf.groups))
    throw new RatchetError(
      ErrorCode.NotFound,
      `workflow ${wf.id} has no group ${req.group} (groups: ${Object.keys(wf.groups).join(", ") || "none"})`,
      { field: "group" },
    );
  const queue = req.queue ?? DEFAULT_QUEUE;
  const runId = req.runId ?? newRunId(Date.now());
  const runs = runStoreOf(ctx.store);
  return ctx.store.tx(() => {
    const bundle = putBundle(ctx.blobs, wf.source);
    runs.enqueueRun({
      run_id: runId,
      workflow_id: wf.id,
      workflow_path: wf.source,
      trigger: req.trigger ?? RunTrigger.Manual,
      group_name: req.group ?? null,
      bundle_hash: bundle,
      queued_by: `${process.pid}@${hostname()}`,
    });
    const payload: RunJobPayload = {
      run_id: runId,
      bundle_hash: bundle,
      trigger: req.trigger ?? RunTrigger.Manual,
      vars: req.vars ?? {},
      group: req.group ?? null,
      only: req.only ? [...req.only] : null,
      step_timeout_seconds: req.stepTimeoutSeconds ?? null,
    };
    const job = ctx.store.sql.get<{ id: number }>(
      `SELECT (graphile_worker.add_job(?, ?::json, queue_name => ?, max_attempts => ?, job_key => ?, job_key_mode => 'unsafe_dedupe')).id AS id`,
      [runTask(queue), JSON.stringify(payload), serialQueueOf(wf), JOB_MAX_ATTEMPTS, runId],
    );
    return { run_id: runId, workflow_id: wf.id, bundle_hash: bundle, job_id: Number(job?.id), queue };
  });
}

/** {@link enqueueRunSync} after installing the queue's schema when needed. */
export async function enqueueRun(
  ctx: { store: Store; blobs: Blobs; workspace: { storeUrl?: string } },
  wf: Workflow,
  req: EnqueueRequest = {},
): Promise<QueuedRun> {
  if (!ctx.workspace.storeUrl)
    throw new RatchetError(ErrorCode.InvalidValue, "a queued run needs the PostgreSQL store", {
      field: "store",
    });
  await ensureQueueSchema(ctx.store, ctx.workspace.storeUrl);
  return enqueueRunSync(ctx, wf, req);
}
