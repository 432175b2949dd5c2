/**
 * The queue's jobs as graphile-worker sees them: task identifiers, payloads and their checks.
 * Pure: no I/O.
 */
import { ErrorCode, RatchetError } from "../core/index.js";

/** The default queue (`ratchet worker` without `--queue`). */
export const DEFAULT_QUEUE = "default";
const QUEUE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * The task of a workflow run in queue `name`. Queues are task identifiers: a worker asks
 * graphile-worker only for the tasks it registers, so `--queue gpu` takes only `gpu`'s runs.
 */
export function runTask(queue: string = DEFAULT_QUEUE): string {
  return queue === DEFAULT_QUEUE ? "ratchet_run" : `ratchet_run@${queue}`;
}

/** The cron task of a scheduled workflow (it enqueues a run; see schedule.ts). */
export const SCHEDULE_TASK = "ratchet_schedule";

/** @throws RatchetError `usage` naming `field` unless `name` is a queue name. */
export function checkQueueName(name: string, field = "queue"): string {
  if (!QUEUE_NAME.test(name))
    throw new RatchetError(
      ErrorCode.Usage,
      `--${field} must be a queue name: lowercase letters, digits, - and _, at most 63 (got ${JSON.stringify(name)})`,
      { field },
    );
  return name;
}

/** The payload of a run job: the run and how to execute it (the bundle carries the files). */
export interface RunJobPayload {
  run_id: string;
  bundle_hash: string;
  trigger: string;
  vars: Record<string, string>;
  group: string | null;
  only: string[] | null;
  step_timeout_seconds: number | null;
}

/** The payload of a schedule job (graphile adds `_cron`). */
export interface ScheduleJobPayload {
  workflow_id: string;
  _cron?: { ts: string; backfilled?: boolean };
}

const badJob = (what: string) =>
  new RatchetError(ErrorCode.InvalidValue, `queue job payload: ${what}`, { field: "payload" });

/** Checks a run job's payload (it comes from a database row any client may write). */
export function parseRunJob(raw: unknown): RunJobPayload {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badJob("must be an object");
  const o = raw as Record<string, unknown>;
  const str = (k: string) => {
    if (typeof o[k] !== "string" || o[k] === "") throw badJob(`${k} must be a non-empty string`);
    return o[k] as string;
  };
  const vars = o.vars ?? {};
  if (
    !vars ||
    typeof vars !== "object" ||
    Array.isArray(vars) ||
    Object.values(vars).some((v) => typeof v !== "string")
  )
    throw badJob("vars must map names to strings");
  const only = o.only ?? null;
  if (only !== null && (!Array.isArray(only) || only.some((s) => typeof s !== "string")))
    throw badJob("only must be a list of step ids");
  const group = o.group ?? null;
  if (group !== null && typeof group !== "string") throw badJob("group must be a string");
  const timeout = o.step_timeout_seconds ?? null;
  if (timeout !== null && (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 1))
    throw badJob("step_timeout_seconds must be a whole number");
  return {
    run_id: str("run_id"),
    bundle_hash: str("bundle_hash"),
    trigger: str("trigger"),
    vars: vars as Record<string, string>,
    group: group as string | null,
    only: only as string[] | null,
    step_timeout_seconds: timeout as number | null,
  };
}

/**
 * SQLSTATEs of a store call that failed because the database was busy, leaving the session usable:
 * the statement (or its wait for the workspace write lock) outlasted `statement_timeout` (57014),
 * a lock was not available (55P03), a serialization failure or deadlock (40001, 40P01). A run job
 * that meets one before its run is claimed puts the job back instead of failing or stranding it.
 */
export const BUSY_SQLSTATES: readonly string[] = ["57014", "55P03", "40001", "40P01"];

/** Whether `e` is a PostgreSQL error of {@link BUSY_SQLSTATES} (a store busy now, worth retrying soon). */
export function storeBusy(e: unknown): boolean {
  const code = (e as { name?: unknown; code?: unknown } | null)?.code;
  return (
    (e as { name?: unknown } | null)?.name === "PgError" &&
    typeof code === "string" &&
    BUSY_SQLSTATES.includes(code)
  );
}
