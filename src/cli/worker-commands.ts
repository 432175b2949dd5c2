/**
 * `ratchet worker` and `ratchet run --queue` (src/queue/): thin — parse, call the queue, print,
 * return the exit status. The queue and workflow modules are imported when a command runs (main.ts
 * registers this file at every start; zod and graphile-worker are not paid for by other commands).
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { RunTrigger, Workflow } from "../workflow/index.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { err, out } from "./io.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;

const collect = (value: string, previous: string[] = []) => [...previous, value];

function wholeNumber(flag: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new RatchetError(
      ErrorCode.Usage,
      `--${flag} must be a whole number from ${min} to ${max} (got ${v})`,
      {
        field: flag,
      },
    );
  return n;
}

const WORKFLOW_FILES = ["workflow.yaml", "workflow.yml", "workflow.json"];

/** The workflows in `dir`: the folder itself when it holds a workflow file, else each subfolder that does. */
export async function workflowsIn(dir: string): Promise<Workflow[]> {
  const { openWorkflow } = await import("./run-commands.js");
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new RatchetError(ErrorCode.NotFound, `--workflows ${dir}: no such folder`, { field: "workflows" });
  if (WORKFLOW_FILES.some((f) => existsSync(join(dir, f)))) return [openWorkflow(dir)];
  return readdirSync(dir)
    .sort()
    .map((name) => join(dir, name))
    .filter((p) => statSync(p).isDirectory() && WORKFLOW_FILES.some((f) => existsSync(join(p, f))))
    .map((p) => openWorkflow(p));
}

export interface WorkerFlags {
  concurrency?: string;
  once?: boolean;
  queue?: string;
  workflows?: string[];
  leaseSeconds?: string;
  backfill?: string;
  json?: boolean;
}

/**
 * `ratchet worker`: exit 0 after a graceful stop (or `--once`), 2 without a PostgreSQL store and a
 * queue, 11 (`store_lost`) when its store session is lost for good (its jobs handed back untouched;
 * a supervisor restarts it).
 */
export async function cmdWorker(opts: GlobalOptions & WorkerFlags): Promise<number> {
  const {
    checkConcurrency,
    checkQueueName,
    DEFAULT_QUEUE,
    loadQueueConfig,
    queueLimits,
    requireQueue,
    runWorker,
  } = await import("../queue/index.js");
  const { killAllRunning } = await import("../exec/index.js");
  const concurrency = checkConcurrency(
    wholeNumber("concurrency", opts.concurrency, 1, queueLimits.MAX_WORKER_CONCURRENCY) ?? 1,
    queueLimits.MAX_WORKER_CONCURRENCY,
  );
  const queue = checkQueueName(opts.queue ?? DEFAULT_QUEUE);
  const leaseSeconds = wholeNumber(
    "lease-seconds",
    opts.leaseSeconds,
    queueLimits.MIN_LEASE_SECONDS,
    queueLimits.MAX_LEASE_SECONDS,
  );
  const backfill = wholeNumber("backfill", opts.backfill, 0, queueLimits.MAX_BACKFILL_SECONDS) ?? 0;
  return withLedgerContext(opts, async (ctx) => {
    const cfg = loadQueueConfig(ctx.workspace.dir);
    requireQueue(ctx.workspace, cfg, "ratchet worker");
    const dirs = opts.workflows?.length
      ? opts.workflows.map((d) => resolve(d))
      : [join(ctx.workspace.root, "workflows")].filter((d) => existsSync(d));
    const scheduled = (await Promise.all(dirs.map((d) => workflowsIn(d)))).flat().filter((w) => w.schedule);
    const stop = new AbortController();
    const kill = new AbortController();
    const onSignal = (sig: NodeJS.Signals) => {
      if (!stop.signal.aborted) {
        err(
          `ratchet worker: ${sig}: taking no more jobs; running ones finish (send it again to interrupt them)`,
        );
        stop.abort();
      } else {
        err(`ratchet worker: ${sig} again: interrupting running jobs`);
        kill.abort();
      }
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const { modelStepsFor } = await import("./build-commands.js");
      const { executeRunnerTask } = await import("./runner-commands.js");
      const summary = await runWorker(ctx, {
        url: ctx.workspace.storeUrl as string,
        concurrency,
        once: Boolean(opts.once),
        queue,
        leaseMs: leaseSeconds !== undefined ? leaseSeconds * 1000 : cfg.leaseMs,
        scheduled,
        backfillSeconds: backfill,
        modelStepsFor: async (wf, dir) =>
          (await needsModel(wf)) ? modelStepsFor(dir, undefined) : undefined,
        runnerTask: (spec, o) => executeRunnerTask(spec, ctx, o),
        threadTurn: async (turn, signal) => {
          const { threadServiceFor } = await import("./thread-commands.js");
          const svc = threadServiceFor(ctx.store, ctx.workspace.dir, {
            signal,
            // A worker never sits on an approval: the thread is left Waiting; a decision enqueues the resume.
            approvalWaitMs: 0,
          });
          const r =
            turn.op === "start"
              ? await svc.start(turn.goal, {
                  ...(turn.project ? { project: turn.project } : {}),
                  ...(turn.model ? { model: turn.model } : {}),
                })
              : await svc.resume(turn.thread_id);
          return {
            thread_id: r.thread.thread_id,
            outcome: r.outcome,
            state: r.thread.state,
            reason: r.thread.reason,
          };
        },
        log: (line) => (opts.json ? err(line) : out(line)),
        stop: stop.signal,
        kill: kill.signal,
      });
      if (opts.json) out(JSON.stringify({ ok: true, op: "worker", ...summary }));
      else
        out(
          `worker ${summary.owner} stopped: executed ${JSON.stringify(summary.executed)}, skipped ${summary.skipped}, scheduled ${summary.scheduled}, runner tasks ${JSON.stringify(summary.tasks)}, deferred ${summary.deferred}, retried ${summary.retried}, handed back ${summary.handedBack}`,
        );
      return 0;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await killAllRunning();
    }
  });
}

/** Whether a run of `wf` would need a model (a step not in learn_code mode, or an orchestrator). */
async function needsModel(wf: Workflow): Promise<boolean> {
  const { ExecutionMode, isOrchestrator, resolveMode } = await import("../workflow/index.js");
  return wf.steps.some(
    (s) => resolveMode(s, wf.defaults).mode !== ExecutionMode.LearnCode || isOrchestrator(s),
  );
}

export interface EnqueueFlags {
  var?: string[];
  group?: string;
  only?: string[];
  json?: boolean;
  quiet?: boolean;
  stepTimeoutSeconds?: number;
  trigger: RunTrigger;
  queueName?: string;
  wait?: boolean;
}

/** `ratchet run --queue`: records a queued run (exit 0); with `--wait`, the run's ending (0 passed, 8 otherwise). */
export async function cmdEnqueue(
  wf: Workflow,
  vars: Record<string, string>,
  only: readonly string[] | undefined,
  opts: GlobalOptions & EnqueueFlags,
): Promise<number> {
  const { checkQueueName, DEFAULT_QUEUE, enqueueRun, loadQueueConfig, requireQueue } = await import(
    "../queue/index.js"
  );
  const { RunStatus, runStoreOf } = await import("../workflow/index.js");
  const queue = checkQueueName(opts.queueName ?? DEFAULT_QUEUE, "queue-name");
  return withLedgerContext(opts, async (ctx) => {
    requireQueue(ctx.workspace, loadQueueConfig(ctx.workspace.dir), "ratchet run --queue");
    const q = await enqueueRun(ctx, wf, {
      vars,
      ...(opts.group !== undefined ? { group: opts.group } : {}),
      ...(only ? { only } : {}),
      trigger: opts.trigger,
      ...(opts.stepTimeoutSeconds !== undefined ? { stepTimeoutSeconds: opts.stepTimeoutSeconds } : {}),
      queue,
    });
    if (!opts.wait) {
      if (opts.json) out(JSON.stringify({ ok: true, op: "run-enqueue", status: RunStatus.Queued, ...q }));
      else if (!opts.quiet) out(q.run_id);
      return 0;
    }
    if (!opts.json && !opts.quiet)
      err(`ratchet: run ${q.run_id} queued (queue ${q.queue}); waiting for a worker`);
    const runs = runStoreOf(ctx.store);
    for (;;) {
      const row = runs.requireRun(q.run_id);
      if (row.status !== RunStatus.Queued && row.status !== RunStatus.Running) {
        const steps = runs.stepRuns(q.run_id);
        if (opts.json) out(JSON.stringify({ ...row, steps }, null, 2));
        else if (!opts.quiet) out(`run ${row.run_id} ${row.status}${row.error ? `: ${row.error}` : ""}`);
        return row.status === RunStatus.Passed ? 0 : 8;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  });
}

/**
 * `thread start --queue` / `thread resume <id> --queue` (and approve/deny `--queue`): records a
 * queued thread turn for `ratchet worker` (exit 0 once queued). A resume is refused at once when
 * the thread is not resumable or a live driver holds it (exit 2 / 5 naming the thread).
 */
export async function cmdEnqueueTurn(
  turn: { op: "start"; goal: string; project?: string; model?: string } | { op: "resume"; threadId: string },
  opts: GlobalOptions & { json?: boolean; queueName?: string; decided?: Record<string, unknown> },
): Promise<number> {
  const {
    checkQueueName,
    DEFAULT_QUEUE,
    enqueueThreadTurnSync,
    ensureQueueSchema,
    loadQueueConfig,
    newTurnId,
    requireQueue,
  } = await import("../queue/index.js");
  const queue = checkQueueName(opts.queueName ?? DEFAULT_QUEUE, "queue-name");
  if (turn.op === "start" && turn.goal.trim() === "")
    throw new RatchetError(ErrorCode.InvalidValue, "goal must be a non-empty text", { field: "goal" });
  return withLedgerContext(opts, async (ctx) => {
    requireQueue(ctx.workspace, loadQueueConfig(ctx.workspace.dir), `ratchet thread ${turn.op} --queue`);
    if (turn.op === "resume") {
      const { threadServiceFor } = await import("./thread-commands.js");
      const { driverAlive, isResumable } = await import("../threads/index.js");
      const svc = threadServiceFor(ctx.store, ctx.workspace.dir, {}, { withTools: false });
      svc.recover();
      const t = svc.show(turn.threadId).thread;
      if (!isResumable(t.state))
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `thread ${t.thread_id} is not resumable from ${t.state}`,
          {
            field: "thread",
            threadId: t.thread_id,
          },
        );
      if (driverAlive(t, Date.now()))
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `thread ${t.thread_id} is being driven by process ${t.driver}`,
          {
            field: "thread",
            threadId: t.thread_id,
          },
        );
    }
    await ensureQueueSchema(ctx.store, ctx.workspace.storeUrl as string);
    const turnId = newTurnId();
    const q = enqueueThreadTurnSync(
      ctx.store,
      turn.op === "start"
        ? {
            turn_id: turnId,
            op: "start",
            goal: turn.goal,
            project: turn.project ?? null,
            model: turn.model ?? null,
          }
        : { turn_id: turnId, op: "resume", thread_id: turn.threadId },
      queue,
    );
    if (opts.json)
      out(
        JSON.stringify({
          ok: true,
          ...opts.decided,
          ...q,
          turn: q.op,
          op: "thread-enqueue",
          status: "queued",
        }),
      );
    else
      out(
        `thread turn ${q.turn_id} queued (${q.op}${q.thread_id ? ` ${q.thread_id}` : ""}, queue ${q.queue})`,
      );
    return 0;
  });
}

/** Registers `ratchet worker` (one line in main.ts). */
export function addWorkerCommands(program: Command, act: Act, globals: () => GlobalOptions): void {
  program
    .command("worker")
    .description(
      "take queued workflow runs, runner tasks and thread turns (and fire workflow schedules) from the PostgreSQL store's queue (graphile-worker); needs queue.enabled or RATCHET_QUEUE=1",
    )
    .option("--concurrency <n>", "jobs run at once by this process (default 1)")
    .option("--once", "process the jobs that are due, then exit")
    .option("--queue <name>", "take jobs of this queue only (default: default)")
    .option(
      "--workflows <dir>",
      "register the schedules of the workflows in dir (repeatable; default: <workspace>/workflows if it exists)",
      collect,
    )
    .option("--lease-seconds <n>", "lease of a claimed run (default: queue.lease_seconds, else 60)")
    .option("--backfill <seconds>", "fire schedule slots missed this far back when starting (default 0)")
    .option("--json", "one JSON summary line on stdout at the end (log lines go to stderr)")
    .action(act(async (o: WorkerFlags) => cmdWorker({ ...globals(), ...o })));
}
