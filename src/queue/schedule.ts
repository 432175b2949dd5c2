/**
 * Schedules: a workflow that declares `schedule: "0 * * * *"` becomes a graphile-worker cron item
 * of every worker given it. Graphile guarantees one job per slot across workers: each worker's
 * cron inserts the slot into `known_crontabs` under a conditional upsert, and only the one whose
 * upsert moves `last_execution` adds the job. That job's task ({@link SCHEDULE_TASK}) enqueues a
 * run with `trigger=schedule` whose id is derived from the slot (`run-<slot time>-<hash of
 * workflow and slot>`), so even a retried schedule job records the slot's run once.
 *
 * Backfill: a worker that starts after slots were missed (no worker was up) fires the missed slots
 * of the last `backfillSeconds` (default 0: missed slots are skipped), as graphile does.
 */
import { createHash } from "node:crypto";
import type { CronItem, ParsedCronItem } from "graphile-worker";
import { newRunId, type Workflow } from "../workflow/index.js";
import { SCHEDULE_TASK, type ScheduleJobPayload } from "./jobs.js";

/** The cron identifier of a workflow's schedule (stable across workers and restarts). */
export function scheduleIdentifier(workflowId: string): string {
  return `ratchet:schedule:${workflowId}`;
}

/** The cron items of the scheduled workflows among `workflows`. */
export async function scheduleItems(
  workflows: readonly Workflow[],
  backfillSeconds: number,
): Promise<ParsedCronItem[]> {
  const { parseCronItems } = await import("graphile-worker");
  const items: CronItem[] = workflows
    .filter((wf) => wf.schedule !== undefined)
    .map((wf) => ({
      task: SCHEDULE_TASK,
      match: wf.schedule as string,
      identifier: scheduleIdentifier(wf.id),
      options: { backfillPeriod: backfillSeconds * 1000, maxAttempts: 3 },
      payload: { workflow_id: wf.id } satisfies ScheduleJobPayload,
    }));
  return parseCronItems(items);
}

/** The run id of a workflow's slot: the same slot gives the same id on every worker. */
export function slotRunId(workflowId: string, slotIso: string): string {
  const hex = createHash("sha256").update(`${workflowId}\n${slotIso}`).digest("hex").slice(0, 6);
  return newRunId(Date.parse(slotIso), hex);
}
