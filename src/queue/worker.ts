/**
 * `ratchet worker`: takes jobs from graphile-worker in the store's PostgreSQL database.
 *
 * A run job ({@link runTask}) names a `queued` run and its bundle. The worker materialises the
 * bundle into its own cache (bundle.ts), loads the workflow from there and executes it with
 * `runWorkflow({ claim })`: recording the run claims it (`queued` → `running` under the write lock,
 * owner `<pid>@<host>`, a lease moved by a heartbeat). A job whose run is not `queued` any more
 * (claimed by an earlier attempt, cancelled, interrupted) completes without executing anything —
 * so a job graphile hands out twice (a worker died holding it) never runs its run twice: the run
 * of a dead worker ends `interrupted`, found by any process once its lease expires (or at once on
 * its own host, by pid). A run that cannot start (a bad bundle, a missing secret on this worker)
 * is closed `failed` with the reason.
 *
 * A schedule job (schedule.ts) enqueues the slot's run. Every {@link RECOVER_EVERY_MS} the worker
 * also marks runs with expired leases interrupted, whoever owned them.
 *
 * Stopping: the first SIGTERM/SIGINT stops taking jobs and lets running ones finish; a second
 * aborts them (their runs end `interrupted`, their ledger steps failed) and exits.
 *
 * A lost store session (the PostgreSQL bridge broke — `Store.broken`, `storeBroken(e)`: nothing
 * this process writes can succeed any more) is fatal: the worker stops taking jobs, aborts the
 * running ones, hands every job it holds or is given back to graphile untouched (same task, payload,
 * key and graphile queue, a fresh attempt count) so no run is failed and no attempt is spent on
 * its own fault, and {@link runWorker} throws `store_lost` (the CLI exits 11) for a supervisor to
 * restart it. A run it had already claimed is left to its lease: another worker's sweep marks it
 * interrupted once the lease runs out.
 */
import { EventEmitter } from "node:events";
import { join } from "node:path";
import type { JobHelpers, Runner, Task, TaskList } from "graphile-worker";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import type { Ledger } from "../ledger/index.js";
import { parseTaskSpec, type TaskSpec } from "../runner/index.js";
import { type Blobs, type Store, storeBroken, type Workspace } from "../store/index.js";
import {
  loadWorkflow,
  type ModelStepRunner,
  RunStatus,
  RunTrigger,
  recoverInterruptedRuns,
  runOwner,
  runStoreOf,
  runWorkflow,
  type Workflow,
} from "../workflow/index.js";
import { materialiseBundle } from "./bundle.js";
import { enqueueRunSync, ensureQueueSchema } from "./enqueue.js";
import { handBackJob } from "./hand-back.js";
import {
  parseRunJob,
  type RunJobPayload,
  runTask,
  SCHEDULE_TASK,
  type ScheduleJobPayload,
  storeBusy,
} from "./jobs.js";
import { CLAIM_SWEEP_EVERY_MS, JOB_MAX_ATTEMPTS, RECOVER_EVERY_MS, RESCHEDULE_MIN_MS } from "./limits.js";
import { quietLogger } from "./log.js";
import {
  claimRunnerJob,
  parseRunnerJob,
  RUNNER_ENTITY,
  type RunnerJobResult,
  type RunnerTaskExecutor,
  recordRunnerResult,
  recoverRunnerTasks,
  runnerTaskIdentifier,
  unreachableRepo,
} from "./runner-job.js";
import { scheduleItems, slotRunId } from "./schedule.js";
import { parseThreadTurn, type ThreadTurnExecutor, TurnEvent, threadTaskIdentifier } from "./thread-job.js";

export interface WorkerContext {
  workspace: Workspace;
  store: Store;
  blobs: Blobs;
  ledger: Ledger;
}

/** Options of {@link runWorker}. */
export interface WorkerOptions {
  /** The PostgreSQL URL of the store (the queue's database). */
  url: string;
  /** Jobs run at once in this process. */
  concurrency: number;
  /** Process what is due, then return (tests, cron-driven hosts). */
  once: boolean;
  /** The queue this worker takes runs from. */
  queue: string;
  /** Lease of a claimed run in ms. */
  leaseMs: number;
  /** Workflows whose `schedule:` this worker registers. */
  scheduled: readonly Workflow[];
  /** How far back missed schedule slots are fired at start (seconds). */
  backfillSeconds: number;
  /** Model steps of a run that needs them (direct / code_exec steps); undefined: such steps fail `needs_model`. */
  modelStepsFor?: (wf: Workflow, workspaceDir: string) => Promise<ModelStepRunner | undefined>;
  /**
   * Where bundles are materialised. Default {@link defaultBundleCache}: outside `.ratchet/`, which
   * the scripts' sandbox may not read (it holds the secrets).
   */
  cacheDir?: string;
  /** Runs a runner task (`ratchet runner run`'s code); undefined: runner jobs are not taken. */
  runnerTask?: RunnerTaskExecutor;
  /** Drives a thread turn (the thread service); undefined: turns fail naming `model`. */
  threadTurn?: ThreadTurnExecutor;
  /** One line per event (started, run finished, …). */
  log: (line: string) => void;
  /** Aborted: stop taking jobs; running ones finish. */
  stop?: AbortSignal;
  /** Aborted: abort running jobs too. */
  kill?: AbortSignal;
}

export interface WorkerSummary {
  owner: string;
  /** Runs this worker executed, by final status. */
  executed: Record<string, number>;
  /** Jobs that found their run not queued any more (not executed again). */
  skipped: number;
  /** Runs enqueued by schedule slots this worker fired. */
  scheduled: number;
  /** Runner tasks this worker ran, by status (and `interrupted`: a dead worker's claim closed). */
  tasks: Record<string, number>;
  /** Thread turns this worker drove, by outcome (`interrupted`: a dead worker's turn closed). */
  turns: Record<string, number>;
  /** Jobs put back for later because their workflow was at its `concurrency` limit. */
  deferred: number;
  /** Jobs put back for later because the store was busy before their run was claimed (jobs.ts `storeBusy`). */
  retried: number;
  /** Jobs handed back untouched because this worker's store session was lost (see {@link runWorker}). */
  handedBack: number;
}

/** Runs a worker until `stop` (or, with `once`, until nothing is due). */
export async function runWorker(ctx: WorkerContext, opts: WorkerOptions): Promise<WorkerSummary> {
  await ensureQueueSchema(ctx.store, opts.url);
  const owner = runOwner();
  const summary: WorkerSummary = {
    owner,
    executed: {},
    skipped: 0,
    scheduled: 0,
    deferred: 0,
    retried: 0,
    handedBack: 0,
    tasks: {},
    turns: {},
  };
  const byId = new Map(opts.scheduled.map((wf) => [wf.id, wf]));
  const cache = opts.cacheDir ?? defaultBundleCache(ctx.workspace);
  const kill = new AbortController();
  let lastDeferredAt = 0;
  let lastClaimSweep = 0;
  opts.kill?.addEventListener("abort", () => kill.abort(), { once: true });

  // Jobs graphile handed to this worker's tasks (a `--once` drain goes on while a round takes one).
  let taken = 0;
  // Why the store's session is lost for good, once it is (see the file's comment).
  let lostCause: string | undefined;
  const lost = new AbortController();
  const sessionLost = (e?: unknown): boolean => {
    if (lostCause !== undefined) return true;
    const why = ctx.store.broken ?? (e !== undefined && storeBroken(e) ? (e as Error).message : undefined);
    if (why === undefined) return false;
    lostCause = why;
    opts.log(`worker ${owner}: the store's session is lost: taking no more jobs (${why})`);
    lost.abort();
    kill.abort();
    return true;
  };
  const queueNameOf = async (helpers: JobHelpers): Promise<string | undefined> => {
    const queueId = helpers.job.job_queue_id;
    if (queueId === null) return undefined;
    // graphile's own pool, not the store's session (which may be the busy or lost one).
    const r = await helpers.withPgClient((c) =>
      c.query<{ queue_name: string }>(
        "SELECT queue_name FROM graphile_worker._private_job_queues WHERE id = $1",
        [queueId],
      ),
    );
    return r.rows[0]?.queue_name;
  };
  /**
   * Gives the job back untouched after a lost session (hand-back.ts): added again with the same
   * task, payload, key and graphile queue, due 1–2 s later with a fresh attempt count, and the
   * current job completed, in one transaction through graphile's own pool.
   */
  const handBack = async (payload: unknown, helpers: JobHelpers): Promise<void> => {
    const runAt = new Date(Date.now() + RESCHEDULE_MIN_MS + Math.floor(Math.random() * RESCHEDULE_MIN_MS));
    await handBackJob(helpers, payload, runAt);
    summary.handedBack++;
    opts.log(
      `job ${helpers.job.id} (${helpers.job.task_identifier}) handed back untouched: this worker's store session is lost`,
    );
  };
  /** `task`, except that a lost store session hands the job back instead of failing or completing it. */
  const guarded =
    (task: Task): Task =>
    async (payload, helpers) => {
      taken++;
      if (sessionLost()) return handBack(payload, helpers);
      try {
        await task(payload, helpers);
      } catch (e) {
        if (sessionLost(e)) return handBack(payload, helpers);
        throw e;
      }
      // A task that swallowed the loss (a run aborted by it returns a report nothing could
      // record): handed back too. Harmless when its ending was recorded before the loss: the
      // next worker finds the run not queued (the task ended) and skips the job.
      if (sessionLost()) return handBack(payload, helpers);
    };

  /**
   * Adds the run's job again (same key, `replace`: graphile clears the key of the locked job this
   * worker is running, so the run keeps exactly one pending job) to run 1–2 s later, in the same
   * graphile queue (a `serial` workflow's stays serial). Added before the current job completes,
   * so the run is never without a job; the claim keeps it from running twice.
   */
  const putBack = async (job: RunJobPayload, helpers: JobHelpers): Promise<Date> => {
    const runAt = new Date(Date.now() + RESCHEDULE_MIN_MS + Math.floor(Math.random() * RESCHEDULE_MIN_MS));
    const queueName = await queueNameOf(helpers);
    await helpers.addJob(runTask(opts.queue), job, {
      jobKey: job.run_id,
      jobKeyMode: "replace",
      runAt,
      maxAttempts: JOB_MAX_ATTEMPTS,
      ...(queueName ? { queueName } : {}),
    });
    lastDeferredAt = Math.max(lastDeferredAt, runAt.getTime());
    return runAt;
  };
  // The store was busy (a lock wait cut by statement_timeout, …) before the run was claimed: the
  // run stays queued and is taken again in 1–2 s. Throwing instead would hand it to graphile's
  // backoff (e^attempt s) and, after JOB_MAX_ATTEMPTS, leave the run queued with no live job.
  const retryBusy = async (job: RunJobPayload, helpers: JobHelpers, e: unknown): Promise<void> => {
    const runAt = await putBack(job, helpers);
    summary.retried++;
    opts.log(
      `job ${helpers.job.id}: run ${job.run_id} not started, the store is busy (${(e as Error).message}); taken again after ${runAt.toISOString()}`,
    );
  };
  const stillQueued = (runId: string): boolean => {
    try {
      return runStoreOf(ctx.store).getRun(runId)?.status === RunStatus.Queued;
    } catch {
      return false;
    }
  };

  const runJob: Task = async (payload, helpers: JobHelpers) => {
    const job = parseRunJob(payload);
    const runs = runStoreOf(ctx.store);
    let cur: ReturnType<typeof runs.getRun>;
    try {
      cur = runs.getRun(job.run_id);
    } catch (e) {
      if (storeBusy(e)) return retryBusy(job, helpers, e);
      throw e;
    }
    if (cur?.status !== RunStatus.Queued) {
      summary.skipped++;
      opts.log(
        `job ${helpers.job.id}: run ${job.run_id} is ${cur?.status ?? "not recorded"}: not executed again`,
      );
      return;
    }
    let wf: Workflow;
    try {
      wf = loadWorkflow(materialiseBundle(ctx.blobs, job.bundle_hash, cache).workflowFile);
    } catch (e) {
      closeUnstarted(job.run_id, `the run's bundle cannot be used on ${owner}: ${toRatchetError(e).message}`);
      return;
    }
    try {
      const modelSteps = await opts.modelStepsFor?.(wf, ctx.workspace.dir);
      const report = await runWorkflow(ctx, wf, {
        claim: {
          runId: job.run_id,
          leaseMs: opts.leaseMs,
          ...(limitedConcurrency(wf) !== null ? { maxRunning: limitedConcurrency(wf) as number } : {}),
        },
        vars: job.vars,
        ...(job.group !== null ? { group: job.group } : {}),
        ...(job.only !== null ? { only: job.only } : {}),
        ...(job.step_timeout_seconds !== null ? { stepTimeoutSeconds: job.step_timeout_seconds } : {}),
        trigger: (job.trigger as RunTrigger) ?? RunTrigger.Manual,
        ...(modelSteps ? { modelSteps } : {}),
        signal: kill.signal,
      });
      summary.executed[report.status] = (summary.executed[report.status] ?? 0) + 1;
      opts.log(`run ${report.run_id} ${report.status} (workflow ${wf.id})`);
    } catch (e) {
      const err = toRatchetError(e);
      if (err.code === ErrorCode.IllegalTransition && err.details?.field === "concurrency") {
        // At the workflow's limit: the run stays queued; a new job takes it again a little later.
        const runAt = await putBack(job, helpers);
        summary.deferred++;
        opts.log(`job ${helpers.job.id}: ${err.message}; taken again after ${runAt.toISOString()}`);
        return;
      }
      if (err.code === ErrorCode.IllegalTransition && err.details?.field === "run_id") {
        summary.skipped++;
        opts.log(`job ${helpers.job.id}: run ${job.run_id} was claimed elsewhere: not executed`);
        return;
      }
      // The store was busy before the claim committed (the claim's transaction rolled back whole).
      if (storeBusy(e) && stillQueued(job.run_id)) return retryBusy(job, helpers, e);
      // Refused before anything ran (variables, secrets, groups on this worker): close it failed.
      closeUnstarted(job.run_id, `the run could not start on ${owner}: ${err.message}`);
    }
  };

  const closeUnstarted = (runId: string, reason: string) => {
    if (runStoreOf(ctx.store).failQueued(runId, reason)) {
      summary.executed[RunStatus.Failed] = (summary.executed[RunStatus.Failed] ?? 0) + 1;
      opts.log(`run ${runId} failed: ${reason}`);
    }
  };

  const runnerJob: Task = async (payload, helpers: JobHelpers) => {
    const job = parseRunnerJob(payload);
    const count = (k: string) => {
      summary.tasks[k] = (summary.tasks[k] ?? 0) + 1;
    };
    const claim = claimRunnerJob(ctx.store, job.task_id, job.queue_id, owner);
    if (claim !== "claimed") {
      if (claim === "interrupted") count("interrupted");
      else summary.skipped++;
      opts.log(
        `job ${helpers.job.id}: runner task ${job.task_id} (${job.queue_id}) ${claim === "interrupted" ? "was claimed by a worker that stopped: marked interrupted, not run again" : "already ended: not run again"}`,
      );
      return;
    }
    const end = (r: Omit<RunnerJobResult, "patch_blob" | "queue_id" | "owner">, patch: string | null) => {
      recordRunnerResult(ctx, job.task_id, { ...r, queue_id: job.queue_id, owner }, patch);
      count(r.status);
      opts.log(`runner task ${job.task_id} ${r.status} (${r.stop_reason})`);
    };
    const refuse = (field: string, message: string) =>
      end(
        {
          status: "error",
          stop_reason: "error",
          rounds: 0,
          changed_files: [],
          dod_passed: false,
          error: message,
          field,
        },
        null,
      );
    let spec: TaskSpec;
    try {
      spec = parseTaskSpec(job.spec, "/");
    } catch (e) {
      refuse("spec", `the queued spec is not valid on ${owner}: ${toRatchetError(e).message}`);
      return;
    }
    const why = unreachableRepo(spec);
    if (why) {
      refuse(
        "repo",
        `repo: ${why}; the worker needs the task's repository at the spec's cwd (a shared checkout, or a clone at that path)`,
      );
      return;
    }
    if (!opts.runnerTask) {
      refuse("model", `worker ${owner} cannot run runner tasks (no runner given)`);
      return;
    }
    try {
      const result = await opts.runnerTask(spec, {
        signal: kill.signal,
        onEvent: (e) =>
          ctx.store.tx(() =>
            ctx.store.appendEvent({
              entityKind: RUNNER_ENTITY,
              entityId: spec.task_id,
              type: `runner.${e.type}`,
              payload: e,
            }),
          ),
      });
      end(
        {
          status: result.status,
          stop_reason: result.stop_reason,
          rounds: result.rounds,
          changed_files: result.changed_files,
          dod_passed: result.dod.passed,
          error: result.error ?? null,
        },
        result.patch_file,
      );
    } catch (e) {
      const err = toRatchetError(e);
      end(
        {
          status: "error",
          stop_reason: "error",
          rounds: 0,
          changed_files: [],
          dod_passed: false,
          error: err.message,
          ...(typeof err.details?.field === "string" ? { field: err.details.field } : {}),
        },
        null,
      );
    }
  };

  const threadJob: Task = async (payload, helpers: JobHelpers) => {
    const turn = parseThreadTurn(payload);
    const count = (k: string) => {
      summary.turns[k] = (summary.turns[k] ?? 0) + 1;
    };
    const claim = claimRunnerJob(ctx.store, turn.turn_id, turn.turn_id, owner, TurnEvent);
    if (claim !== "claimed") {
      if (claim === "interrupted") count("interrupted");
      else summary.skipped++;
      opts.log(
        `job ${helpers.job.id}: thread turn ${turn.turn_id} ${claim === "interrupted" ? "was claimed by a worker that stopped: marked interrupted, not driven again" : "already ended: not driven again"}`,
      );
      return;
    }
    const end = (r: Record<string, unknown> & { outcome: string }) => {
      ctx.store.tx(() =>
        ctx.store.appendEvent({
          entityKind: TurnEvent.kind,
          entityId: turn.turn_id,
          type: TurnEvent.Result,
          payload: { queue_id: turn.turn_id, op: turn.op, owner, ...r },
        }),
      );
      count(r.outcome);
      opts.log(
        `thread turn ${turn.turn_id} (${turn.op}) ${r.outcome}${r.thread_id ? ` thread ${String(r.thread_id)}` : ""}`,
      );
    };
    if (!opts.threadTurn) {
      end({
        outcome: "refused",
        thread_id: turn.op === "resume" ? turn.thread_id : null,
        error: `worker ${owner} cannot drive threads`,
        field: "model",
      });
      return;
    }
    try {
      const r = await opts.threadTurn(turn, kill.signal);
      end({ ...r });
    } catch (e) {
      const err = toRatchetError(e);
      // A resume refused (another live driver, not resumable) or a start refused (no model): recorded.
      end({
        outcome: "refused",
        thread_id: turn.op === "resume" ? turn.thread_id : null,
        error: err.message,
        code: err.code,
        ...(typeof err.details?.field === "string" ? { field: err.details.field } : {}),
      });
    }
  };

  const scheduleJob: Task = async (payload) => {
    const p = payload as ScheduleJobPayload;
    const wf = byId.get(p.workflow_id);
    const slot = p._cron?.ts;
    if (!wf || !slot) {
      opts.log(`schedule job for ${String(p.workflow_id)}: not a workflow this worker was given; skipped`);
      return;
    }
    const runId = slotRunId(wf.id, slot);
    if (runStoreOf(ctx.store).getRun(runId)) return;
    try {
      enqueueRunSync(ctx, wf, { trigger: RunTrigger.Schedule, runId, queue: opts.queue });
      summary.scheduled++;
      opts.log(`schedule ${wf.schedule} of ${wf.id}: slot ${slot} enqueued run ${runId}`);
    } catch (e) {
      // Another worker recorded this slot's run between the check and the insert.
      if (runStoreOf(ctx.store).getRun(runId)) return;
      throw e;
    }
  };

  const taskList: TaskList = {
    [runTask(opts.queue)]: guarded(runJob),
    [runnerTaskIdentifier(opts.queue)]: guarded(runnerJob),
    [threadTaskIdentifier(opts.queue)]: guarded(threadJob),
    [SCHEDULE_TASK]: guarded(scheduleJob),
  };
  const { run: runGraphile, runOnce } = await import("graphile-worker");
  const logger = await quietLogger();
  const recover = () => {
    // A call that swallowed the loss (a run's heartbeat) left the session marked broken: seen here.
    if (sessionLost()) return;
    try {
      for (const r of recoverInterruptedRuns(ctx))
        opts.log(`run ${r.run_id} marked interrupted: ${r.reason}`);
      // Claims of runner tasks and thread turns are events (no index by entity): swept less often.
      if (Date.now() - lastClaimSweep >= CLAIM_SWEEP_EVERY_MS) {
        lastClaimSweep = Date.now();
        for (const t of recoverRunnerTasks(ctx.store, TurnEvent))
          opts.log(`thread turn ${t.task_id} marked interrupted: its worker is gone`);
        for (const t of recoverRunnerTasks(ctx.store))
          opts.log(`runner task ${t.task_id} (${t.queue_id}) marked interrupted: its worker is gone`);
      }
    } catch (e) {
      if (!sessionLost(e)) opts.log(`recovery of expired leases failed (retried): ${(e as Error).message}`);
    }
  };
  recover();
  const sweep = setInterval(recover, RECOVER_EVERY_MS);
  sweep.unref();
  const cron = await scheduleItems(opts.scheduled, opts.backfillSeconds);
  const common = { connectionString: opts.url, taskList, logger, noHandleSignals: true };
  /** The summary, unless the store's session was lost: then `store_lost` (exit 11) naming the cause. */
  const endOf = (s: WorkerSummary): WorkerSummary => {
    if (lostCause === undefined) sessionLost();
    if (lostCause === undefined) return s;
    throw new RatchetError(
      ErrorCode.StoreLost,
      `ratchet worker ${owner}: its store session is lost, so it stopped taking jobs and handed back the ${s.handedBack} job(s) it was given untouched (their runs stay queued for another worker; a run it had claimed is interrupted when its lease runs out); restart the worker: ${lostCause}`,
      { field: "store", owner, handed_back: s.handedBack, executed: s.executed },
    );
  };
  try {
    if (opts.once) {
      if (cron.length > 0) {
        // Register the schedules and fire due (backfilled) slots, then stop; the drain below runs them.
        const events = new EventEmitter();
        const started = new Promise<void>((resolve) => events.once("cron:started", () => resolve()));
        const runner = await runGraphile({
          ...common,
          concurrency: opts.concurrency,
          parsedCronItems: cron,
          events: events as never,
        });
        await started;
        await runner.stop();
      }
      // Rounds of N single-job drains, each taking jobs until none is due, until a round takes
      // none. Another round after one that took a job: a `serial` workflow's next job is not due
      // to a drain while the graphile queue is still locked by the job before it, whose completion
      // graphile does not await. Completions are batched here (no delay) so that the end of a
      // round awaits them: the next round finds the queue free, and no completion is cut by the
      // end of the round's pool (the job would stay locked, its serial queue with it). A round
      // that put a job back for later (a workflow at its concurrency limit) waits for it first.
      const once = { ...common, preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } } };
      for (;;) {
        const before = summary.deferred + summary.retried;
        const takenBefore = taken;
        await Promise.all(Array.from({ length: opts.concurrency }, () => runOnce(once)));
        if (taken === takenBefore || kill.signal.aborted) break;
        if (summary.deferred + summary.retried !== before)
          await new Promise((r) => setTimeout(r, Math.max(0, lastDeferredAt - Date.now()) + 50));
      }
      return endOf(summary);
    }
    const events = new EventEmitter();
    const runner: Runner = await runGraphile({
      ...common,
      concurrency: opts.concurrency,
      parsedCronItems: cron,
      pollInterval: 1000,
      events: events as never,
    });
    opts.log(
      `worker ${owner} started: queue ${opts.queue}, concurrency ${opts.concurrency}, ${cron.length} schedule(s)`,
    );
    const stopped = new Promise<void>((resolve) => {
      if (opts.stop?.aborted || lost.signal.aborted) resolve();
      opts.stop?.addEventListener("abort", () => resolve(), { once: true });
      lost.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await Promise.race([stopped, runner.promise]);
    await runner.stop();
    await runner.promise.catch(() => undefined);
    return endOf(summary);
  } finally {
    clearInterval(sweep);
  }
}

/** The limit the claim enforces for `wf` (`concurrency` above 1); 1 is a graphile queue (serialQueueOf). */
function limitedConcurrency(wf: Workflow): number | null {
  return wf.concurrency !== undefined && wf.concurrency > 1 && !wf.serial ? wf.concurrency : null;
}

/** `<workspace root>/.ratchet-worker/bundles`: the worker's bundle cache. */
export function defaultBundleCache(ws: Pick<Workspace, "root">): string {
  return join(ws.root, ".ratchet-worker", "bundles");
}

/** @throws RatchetError `invalid_value` naming `concurrency`. */
export function checkConcurrency(n: number, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new RatchetError(
      ErrorCode.Usage,
      `--concurrency must be a whole number from 1 to ${max} (got ${n})`,
      {
        field: "concurrency",
      },
    );
  return n;
}
