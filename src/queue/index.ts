/**
 * The queue (issue 17): workflow runs executed by `ratchet worker` processes on any machine,
 * through graphile-worker in the store's PostgreSQL database. See ARCHITECTURE.md.
 */
export { type Bundle, decodeBundle, encodeBundle, materialiseBundle, putBundle } from "./bundle.js";
export { compileQueueConfig, loadQueueConfig, type QueueConfig, requireQueue } from "./config.js";
export {
  type EnqueueRequest,
  enqueueRun,
  enqueueRunSync,
  ensureQueueSchema,
  type QueuedRun,
  queueSchemaReady,
  serialQueueOf,
} from "./enqueue.js";
export { enqueueOrStart, type StartOutcome, type StartRequest } from "./entry.js";
export {
  checkQueueName,
  DEFAULT_QUEUE,
  parseRunJob,
  type RunJobPayload,
  runTask,
  SCHEDULE_TASK,
} from "./jobs.js";
export * as queueLimits from "./limits.js";
export {
  claimRunnerJob,
  enqueueRunnerTaskSync,
  JobEvent as RunnerJobEvent,
  type QueuedRunnerTask,
  RUNNER_ENTITY,
  type RunnerJobResult,
  type RunnerTaskExecutor,
  runnerJobEvents,
  runnerTaskIdentifier,
} from "./runner-job.js";
export { scheduleIdentifier, scheduleItems, slotRunId } from "./schedule.js";
export {
  enqueueThreadTurnSync,
  newTurnId,
  parseThreadTurn,
  type QueuedTurn,
  THREAD_TURN_ENTITY,
  type ThreadTurnExecutor,
  type ThreadTurnOutcome,
  type ThreadTurnPayload,
  TurnEvent,
  threadTaskIdentifier,
} from "./thread-job.js";
export {
  checkConcurrency,
  runWorker,
  type WorkerContext,
  type WorkerOptions,
  type WorkerSummary,
} from "./worker.js";
