export { BlobStore } from "./blobs.js";
export type { Migration } from "./sqlite/migrations.js";
export { MIGRATIONS } from "./sqlite/migrations.js";
export type { SqliteDb } from "./sqlite/open.js";
export { migrate, openSqlite } from "./sqlite/open.js";
export { SqliteStore } from "./sqlite/sqlite-store.js";
export type {
  DeviationRow,
  EventQuery,
  EventRow,
  MetricRow,
  NewEvent,
  PlanPatch,
  PlanQuery,
  PlanRow,
  ProjectRow,
  SkillRow,
  StepLogRow,
  StepPatch,
  StepRow,
  Store,
} from "./types.js";
export type { Workspace } from "./workspace.js";
export {
  DB_FILE,
  envDb,
  findWorkspace,
  initWorkspace,
  resolveWorkspace,
  WORKSPACE_DIR,
  workspaceForDb,
} from "./workspace.js";
