/**
 * Runner tasks as queue jobs (`ratchet runner run <spec> --queue`).
 *
 * What travels: the validated task spec (absolute `cwd` / `output_dir`). The repository does not
 * travel: the worker must reach the spec's `cwd` as a git repository — the same path on a shared
 * checkout (or a clone at that path). A worker that cannot is not guessed around: the task ends
 * `error` with a reason naming `repo`.
 *
 * The task's queue state lives in the shared `events` table (entity_kind `runner_task`, entity id
 * the task id), one `queue_id` per enqueue (the job key is `<task id>:<queue id>`):
 * `runner.job_queued` → `runner.job_claimed` (the exactly-once point: written under the store's
 * write lock only when no claim of that queue id exists) → the runner's own `runner.<event>` lines →
 * `runner.job_result` (status, changed files, patch blob hash). A job handed out again after its
 * worker died finds the claim without a result and records `runner.job_interrupted` — never a
 * second execution; so does a worker's sweep for claims whose owner pid is gone on its own host.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { TaskEvent, TaskResult, TaskSpec } from "../runner/index.js";
import type { Blobs, Store } from "../store/index.js";
import { DEFAULT_QUEUE } from "./jobs.js";
import { JOB_MAX_ATTEMPTS } from "./limits.js";

export const RUNNER_ENTITY = "runner_task";

/** The event names of one kind of event-claimed job (runner tasks, thread turns). */
export interface JobEvents {
  kind: string;
  Queued: string;
  Claimed: string;
  Result: string;
  Interrupted: string;
}

export const JobEvent: JobEvents = {
  kind: RUNNER_ENTITY,
  Queued: "runner.job_queued",
  Claimed: "runner.job_claimed",
  Result: "runner.job_result",
  Interrupted: "runner.job_interrupted",
};

/** The task identifier of runner jobs in queue `name`. */
export function runnerTaskIdentifier(queue: string = DEFAULT_QUEUE): string {
  return queue === DEFAULT_QUEUE ? "ratchet_runner" : `ratchet_runner@${queue}`;
}

export interface RunnerJobPayload {
  task_id: string;
  queue_id: string;
  /** The validated spec (absolute paths), re-validated by the worker. */
  spec: Record<string, unknown>;
}

export interface QueuedRunnerTask {
  task_id: string;
  queue_id: string;
  job_id: number;
  queue: string;
  cwd: string;
}

const badJob = (what: string) =>
  new RatchetError(ErrorCode.InvalidValue, `runner job payload: ${what}`, { field: "payload" });

export function parseRunnerJob(raw: unknown): RunnerJobPayload {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badJob("must be an object");
  const o = raw as Record<string, unknown>;
  for (const k of ["task_id", "queue_id"])
    if (typeof o[k] !== "string" || o[k] === "") throw badJob(`${k} must be a non-empty string`);
  if (!o.spec || typeof o.spec !== "object" || Array.isArray(o.spec)) throw badJob("spec must be an object");
  return {
    task_id: o.task_id as string,
    queue_id: o.queue_id as string,
    spec: o.spec as Record<string, unknown>,
  };
}

/** Records a queued runner task and its job in one transaction (the queue's schema must exist). */
export function enqueueRunnerTaskSync(store: Store, spec: TaskSpec, queue = DEFAULT_QUEUE): QueuedRunnerTask {
  const queueId = `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`;
  const payload: RunnerJobPayload = { task_id: spec.task_id, queue_id: queueId, spec: { ...spec } };
  return store.tx(() => {
    store.appendEvent({
      entityKind: RUNNER_ENTITY,
      entityId: spec.task_id,
      type: JobEvent.Queued,
      payload: { queue_id: queueId, queue, cwd: spec.cwd, queued_by: `${process.pid}@${hostname()}` },
    });
    const job = store.sql.get<{ id: number }>(
      `SELECT (graphile_worker.add_job(?, ?::json, max_attempts => ?, job_key => ?, job_key_mode => 'unsafe_dedupe')).id AS id`,
      [runnerTaskIdentifier(queue), JSON.stringify(payload), JOB_MAX_ATTEMPTS, `${spec.task_id}:${queueId}`],
    );
    return { task_id: spec.task_id, queue_id: queueId, job_id: Number(job?.id), queue, cwd: spec.cwd };
  });
}

interface JobEventRow {
  id: number;
  type: string;
  at: string;
  payload: Record<string, unknown>;
}

/** The queue events of one enqueue of a task, oldest first. */
export function runnerJobEvents(
  store: Store,
  taskId: string,
  queueId?: string,
  names: JobEvents = JobEvent,
): JobEventRow[] {
  const rows = store.sql.all<{ id: number; type: string; at: string; payload: string }>(
    "SELECT id, type, at, payload FROM events WHERE entity_kind = ? AND entity_id = ? AND type IN (?, ?, ?, ?) ORDER BY id",
    [names.kind, taskId, names.Queued, names.Claimed, names.Result, names.Interrupted],
  );
  return rows
    .map((r) => ({
      id: Number(r.id),
      type: r.type,
      at: r.at,
      payload: (typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>,
    }))
    .filter((r) => queueId === undefined || r.payload.queue_id === queueId);
}

export type ClaimOutcome = "claimed" | "ended" | "interrupted";

/**
 * The exactly-once point: under the write lock, claims the enqueue `queueId` of `taskId` for `owner`
 * unless a claim exists. A claim without a result (its worker died) is closed `interrupted` here.
 */
export function claimRunnerJob(
  store: Store,
  taskId: string,
  queueId: string,
  owner: string,
  names: JobEvents = JobEvent,
): ClaimOutcome {
  const JobEvent = names;
  return store.tx(() => {
    const evs = runnerJobEvents(store, taskId, queueId, names);
    if (evs.some((e) => e.type === JobEvent.Result || e.type === JobEvent.Interrupted)) return "ended";
    const claim = evs.find((e) => e.type === JobEvent.Claimed);
    if (claim) {
      store.appendEvent({
        entityKind: names.kind,
        entityId: taskId,
        type: JobEvent.Interrupted,
        payload: {
          queue_id: queueId,
          owner: claim.payload.owner ?? null,
          reason: `the worker ${String(claim.payload.owner)} that claimed it stopped before it finished; not run again`,
        },
      });
      return "interrupted";
    }
    store.appendEvent({
      entityKind: names.kind,
      entityId: taskId,
      type: JobEvent.Claimed,
      payload: { queue_id: queueId, owner },
    });
    return "claimed";
  });
}

/**
 * Why the worker cannot run the task on the spec's repository, or undefined when it can: `cwd`
 * must be a folder inside a git work tree on this machine.
 */
export function unreachableRepo(spec: Pick<TaskSpec, "cwd">): string | undefined {
  if (!existsSync(spec.cwd) || !statSync(spec.cwd).isDirectory())
    return `no folder ${spec.cwd} on this worker`;
  const r = spawnSync("git", ["-C", spec.cwd, "rev-parse", "--is-inside-work-tree"], { encoding: "utf8" });
  if (r.status !== 0 || r.stdout.trim() !== "true")
    return `${spec.cwd} is not a git work tree on this worker`;
  return undefined;
}

/** The result of a queued task as recorded (what `runner status` reads from the database). */
export interface RunnerJobResult {
  queue_id: string;
  owner: string;
  status: TaskResult["status"];
  stop_reason: string;
  rounds: number;
  changed_files: string[];
  dod_passed: boolean;
  patch_blob: string | null;
  error: string | null;
  field?: string;
}

/** Records the task's ending (and its patch as a blob) in one transaction. */
export function recordRunnerResult(
  ctx: { store: Store; blobs: Blobs },
  taskId: string,
  r: Omit<RunnerJobResult, "patch_blob">,
  patchFile: string | null,
): RunnerJobResult {
  return ctx.store.tx(() => {
    const patch = patchFile && existsSync(patchFile) ? ctx.blobs.put(readFileSync(patchFile)) : null;
    const result: RunnerJobResult = { ...r, patch_blob: patch };
    ctx.store.appendEvent({
      entityKind: RUNNER_ENTITY,
      entityId: taskId,
      type: JobEvent.Result,
      payload: { ...result },
    });
    return result;
  });
}

/** Claims whose owner ran on this host and whose pid is gone: closed `interrupted`. */
export function recoverRunnerTasks(
  store: Store,
  names: JobEvents = JobEvent,
): { task_id: string; queue_id: string }[] {
  const JobEvent = names;
  const host = hostname();
  const claims = store.sql.all<{ entity_id: string; payload: string }>(
    "SELECT entity_id, payload FROM events WHERE entity_kind = ? AND type = ? ORDER BY id",
    [names.kind, JobEvent.Claimed],
  );
  const out: { task_id: string; queue_id: string }[] = [];
  for (const c of claims) {
    const p = (typeof c.payload === "string" ? JSON.parse(c.payload) : c.payload) as Record<string, unknown>;
    const [pid, h] = String(p.owner ?? "").split("@");
    if (h !== host || !pid || pidAlive(Number(pid))) continue;
    const queueId = String(p.queue_id);
    const ended = runnerJobEvents(store, c.entity_id, queueId, names).some(
      (e) => e.type === JobEvent.Result || e.type === JobEvent.Interrupted,
    );
    if (ended) continue;
    if (claimRunnerJob(store, c.entity_id, queueId, "", names) === "interrupted")
      out.push({ task_id: c.entity_id, queue_id: queueId });
  }
  return out;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The shape of the worker's runner: the same code as `ratchet runner run` (the CLI passes it). */
export type RunnerTaskExecutor = (
  spec: TaskSpec,
  o: { signal: AbortSignal; onEvent: (e: TaskEvent) => void },
) => Promise<TaskResult>;
