export { BlobStore, type Blobs, blobHash, checkBlobHash, DbBlobStore } from "./blobs.js";
export {
  COPY_SKIPPED,
  COPY_TABLES,
  type CopyEnd,
  type CopyOptions,
  type CopyReport,
  type CopyTable,
  copyStore,
  firstMismatch,
  type TableCheck,
  verifyStores,
} from "./copy.js";
export { type EndRole, openCopyEnd } from "./copy-ends.js";
export { PG_MIGRATIONS, type PgMigration } from "./postgres/migrations.js";
export { PgStore } from "./postgres/pg-store.js";
export {
  PgError,
  type PgParam,
  type PgResult,
  SyncPg,
  type SyncPgOptions,
  storeBroken,
} from "./postgres/sync-client.js";
export { isPostgresUrl, redactUrl } from "./postgres/url.js";
export { noteCommand, sqliteOnly } from "./refusal.js";
export {
  type NewRun,
  NO_GROUP,
  type QueuedRunInput,
  type RunClaim,
  type RunLease,
  type RunQuery,
  RunStatus,
  type RunStepOutcome,
  type RunStore,
  type RunWorkflowRow,
  type StepEvidence,
  type StepFinish,
  summariseEvidence,
  type WorkflowRunRow,
  type WorkflowStepRunRow,
} from "./runs.js";
export { blobsOf, isPostgresStore, openStore, runStoreOf } from "./select.js";
export {
  PgSqlPort,
  type SqlArgs,
  type SqlDialect,
  SqliteSqlPort,
  type SqlParam,
  type SqlPort,
  type SqlRunResult,
  toPgStatement,
} from "./sql.js";
export type { Migration } from "./sqlite/migrations.js";
export { MIGRATIONS } from "./sqlite/migrations.js";
export type { SqliteDb } from "./sqlite/open.js";
export { migrate, openSqlite } from "./sqlite/open.js";
export { type CheckpointMode, SqliteStore } from "./sqlite/sqlite-store.js";
export type {
  DeviationRow,
  EventQuery,
  EventRow,
  MetricRow,
  MoveStepRow,
  NewEvent,
  PlanPatch,
  PlanQuery,
  PlanRow,
  ProjectRow,
  SkillRow,
  StepForMove,
  StepLogRow,
  StepPatch,
  StepRow,
  StepStateRow,
  Store,
} from "./types.js";
export type { Workspace } from "./workspace.js";
export {
  configuredStoreUrl,
  DB_FILE,
  envDb,
  findWorkspace,
  initWorkspace,
  resolveWorkspace,
  WORKSPACE_DIR,
  workspaceForDb,
} from "./workspace.js";
