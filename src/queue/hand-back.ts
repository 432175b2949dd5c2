/**
 * Handing a job back to graphile-worker untouched (after the worker's store session is lost, see
 * worker.ts): one transaction on graphile's own pool that adds the job again and completes the
 * current one, so the run has exactly one job whatever happens to this process next.
 *
 * Why the completion is done here and not left to graphile: graphile records a job's completion
 * without awaiting it, and the stop that follows a loss can end its pool before that `DELETE`
 * lands. The job handed back would then stay locked for good — `add_job` in `replace` mode has
 * cleared its key and set its attempts to `max_attempts` — a dead row nothing takes or removes.
 * Graphile's own completion after the task returns then finds nothing to delete (a no-op).
 *
 * Relies on graphile-worker 0.17.3 (pinned): the public `add_job`, and the private tables its own
 * completion writes (`dist/sql/completeJobs.js`: delete the row, unlock its queue if this pool
 * holds it).
 */
import type { JobHelpers } from "graphile-worker";

/**
 * Adds `helpers.job` again — same task, payload, key (`replace`), graphile queue, priority, flags
 * and `max_attempts`, a fresh attempt count, due at `runAt` — and deletes the locked original (and
 * releases its queue's lock), all or nothing.
 * @throws the driver's error when graphile's pool cannot do it (the job is then left to graphile).
 */
export async function handBackJob(helpers: JobHelpers, payload: unknown, runAt: Date): Promise<void> {
  const job = helpers.job;
  const flags = job.flags ? Object.keys(job.flags) : null;
  await helpers.withPgClient(async (c) => {
    await c.query("BEGIN");
    try {
      await c.query(
        `SELECT graphile_worker.add_job($1::text, $2::json,
           queue_name => (SELECT queue_name FROM graphile_worker._private_job_queues WHERE id = $3::int),
           run_at => $4::timestamptz, max_attempts => $5::int, job_key => $6::text,
           priority => $7::int, flags => $8::text[], job_key_mode => 'replace')`,
        [
          job.task_identifier,
          JSON.stringify(payload ?? {}),
          job.job_queue_id,
          runAt.toISOString(),
          job.max_attempts,
          job.key,
          job.priority,
          flags,
        ],
      );
      await c.query(
        `WITH j AS (
           DELETE FROM graphile_worker._private_jobs WHERE id = $1::bigint AND locked_by = $2::text
           RETURNING job_queue_id)
         UPDATE graphile_worker._private_job_queues AS q SET locked_by = NULL, locked_at = NULL
         FROM j WHERE q.id = j.job_queue_id AND q.locked_by = $2::text`,
        [job.id, job.locked_by],
      );
      await c.query("COMMIT");
    } catch (e) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw e;
    }
  });
}
