/** Bounds of the queue (src/queue/). */

/** Default lease of a run a worker executes: a heartbeat moves it every third of this. */
export const DEFAULT_LEASE_SECONDS = 60;
/** Shortest and longest lease a config or flag may ask for. */
export const MIN_LEASE_SECONDS = 1;
export const MAX_LEASE_SECONDS = 3600;
/** Most jobs one worker process runs at once (`--concurrency`). */
export const MAX_WORKER_CONCURRENCY = 64;
/** Largest bundle (the workflow folder's files, encoded) an enqueue stores. */
export const MAX_BUNDLE_BYTES = 16 * 1024 * 1024;
/** Most files a bundle holds. */
export const MAX_BUNDLE_FILES = 2000;
/** How often a worker looks for runs whose lease expired (any machine's). */
export const RECOVER_EVERY_MS = 5_000;
/** Longest schedule backfill (`--backfill`): a worker that starts late fires missed slots this far back. */
export const MAX_BACKFILL_SECONDS = 7 * 24 * 3600;
/** Attempts graphile-worker gives a job (a run job refuses a second execution of its run itself). */
export const JOB_MAX_ATTEMPTS = 3;
/** A job whose workflow is at its `concurrency` limit is taken again after 1–2 × this (ms). */
export const RESCHEDULE_MIN_MS = 1_000;
/** How often a worker closes runner-task / thread-turn claims whose owner pid is gone on its host. */
export const CLAIM_SWEEP_EVERY_MS = 60_000;
