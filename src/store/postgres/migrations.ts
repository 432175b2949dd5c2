/**
 * Numbered PostgreSQL migrations, applied on open under a session advisory lock (open.ts). Like
 * SQLite's, a landed migration is never edited; `schema_migrations` records which ids ran.
 *
 * The ledger tables are SQLite's (migrations 1, 3, 7 and the two plan columns of 10), with the same
 * column names and meaning:
 * - every TEXT column compares byte-wise (`COLLATE "C"`), as SQLite's BINARY collation does, so
 *   keyset paging on (created_at, plan_id) orders the same on both stores whatever the database's
 *   locale;
 * - ids are BIGINT primary keys handed out as `MAX(id) + 1` by the insert itself, under the
 *   workspace write lock every write transaction holds (pg-store.ts): dense and increasing in commit
 *   order, exactly like SQLite's INTEGER PRIMARY KEY under `BEGIN IMMEDIATE`. A sequence would
 *   leave gaps on rollback and, without the lock, hand out ids out of commit order.
 * - epoch-millisecond columns (`lease_expires_at`, `duration_ms`) are BIGINT; REAL is DOUBLE PRECISION.
 *
 * Migration 3 is the `blobs` table (`DbBlobStore`, blobs.ts): content-addressed bytes every machine
 * on the database reads. Migration ids 4 (threads), 5 (provenance) and 6 (queue/leases) are taken.
 *
 * Migration 2 is the runs area (SQLite's migration 2 and the `workflow_runs_started` index of a
 * later one), plus `workflow_step_runs.seq` for SQLite's rowid order.
 *
 * Migration 4 is the threads capability: the final shape of SQLite's migrations 5, 8 and 9
 * (threads, messages, checkpoints with their VM in `thread_vms`, actions, approvals, leases,
 * grants, documents, orchestrator failures, mission runs, the inbox and the journal). Ids of
 * messages, inbox rows and mission runs are `MAX(id) + 1` given by the insert, as the ledger's
 * are (messages are read back `WHERE id > ?` in order); `thread_actions.seq` stands in for
 * SQLite's rowid (calls started in the same millisecond keep their order); VM bytes are BYTEA.
 *
 * Migration 5 is provenance (SQLite's 10 and 11; provenance-migration.ts). Migration 6 is the
 * queue: a run's bundle hash and its lease (src/queue/). Migration 7 is SQLite's 13 (its two
 * layout columns, unused here).
 */
import { provenanceMigrationSql } from "./provenance-migration.js";

export interface PgMigration {
  id: number;
  name: string;
  sql: string;
}

/** `TEXT` with byte-wise comparison (SQLite's BINARY). */
const c = (sql: string) => sql.replace(/\bTEXT\b/g, 'TEXT COLLATE "C"');

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    id: 1,
    name: "ledger",
    sql: c(`
CREATE TABLE projects (
  name        TEXT PRIMARY KEY,
  repo_path   TEXT,
  created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX projects_repo ON projects(repo_path) WHERE repo_path IS NOT NULL;

CREATE TABLE plans (
  plan_id             TEXT PRIMARY KEY,
  goal                TEXT NOT NULL,
  kind                TEXT NOT NULL DEFAULT 'plan',
  project             TEXT,
  project_source      TEXT,
  status              TEXT NOT NULL,
  revision_count      INTEGER NOT NULL DEFAULT 0,
  max_revisions       INTEGER NOT NULL,
  source_cwd          TEXT,
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL,
  finished_at         TEXT,
  user_query          TEXT,
  abandon_reason      TEXT,
  review_state        TEXT,
  review_skip_reason  TEXT,
  extensions          TEXT,
  session_id          TEXT,
  headline_json       TEXT
);
CREATE INDEX plans_status ON plans(status, created_at);
CREATE INDEX plans_created_id ON plans(created_at, plan_id);

CREATE TABLE steps (
  step_id           TEXT PRIMARY KEY,
  plan_id           TEXT NOT NULL REFERENCES plans(plan_id),
  parent_step_id    TEXT REFERENCES steps(step_id),
  seq               INTEGER NOT NULL,
  role              TEXT NOT NULL,
  depth             INTEGER NOT NULL,
  title             TEXT NOT NULL,
  description       TEXT,
  type              TEXT NOT NULL,
  status            TEXT NOT NULL,
  summary           TEXT,
  agent_input       TEXT,
  agent_output      TEXT,
  failure_reason    TEXT,
  exit_code         INTEGER,
  tokens            INTEGER NOT NULL DEFAULT 0,
  duration_ms       BIGINT,
  lease_holder      TEXT,
  lease_expires_at  BIGINT,
  heartbeat_at      TEXT,
  started_at        TEXT,
  finished_at       TEXT,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
);
CREATE INDEX steps_plan ON steps(plan_id);
CREATE INDEX steps_parent ON steps(parent_step_id);

CREATE TABLE step_logs (
  id         BIGINT PRIMARY KEY,
  step_id    TEXT NOT NULL REFERENCES steps(step_id),
  plan_id    TEXT NOT NULL,
  at         TEXT NOT NULL,
  kind       TEXT NOT NULL,
  text       TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  truncated  INTEGER NOT NULL DEFAULT 0,
  blob       TEXT
);
CREATE INDEX step_logs_step ON step_logs(step_id, id);
CREATE INDEX step_logs_plan ON step_logs(plan_id, id);

CREATE TABLE deviations (
  id              BIGINT PRIMARY KEY,
  plan_id         TEXT NOT NULL REFERENCES plans(plan_id),
  kind            TEXT NOT NULL,
  parent_step_id  TEXT,
  justification   TEXT NOT NULL,
  sub_step_ids    TEXT,
  old_max         INTEGER,
  new_max         INTEGER,
  created_at      TEXT NOT NULL
);
CREATE INDEX deviations_plan ON deviations(plan_id, id);

CREATE TABLE skills (
  id          BIGINT PRIMARY KEY,
  plan_id     TEXT NOT NULL REFERENCES plans(plan_id),
  step_id     TEXT,
  name        TEXT NOT NULL,
  source      TEXT NOT NULL,
  reason      TEXT,
  created_at  TEXT NOT NULL
);
CREATE INDEX skills_plan ON skills(plan_id, id);

CREATE TABLE metrics (
  id          BIGINT PRIMARY KEY,
  name        TEXT NOT NULL,
  value       DOUBLE PRECISION NOT NULL,
  unit        TEXT,
  project     TEXT,
  plan_id     TEXT,
  step_id     TEXT,
  created_at  TEXT NOT NULL,
  source      TEXT
);
CREATE INDEX metrics_plan ON metrics(plan_id, id);
CREATE INDEX metrics_name ON metrics(name, id);

CREATE TABLE events (
  id           BIGINT PRIMARY KEY,
  at           TEXT NOT NULL,
  entity_kind  TEXT NOT NULL,
  entity_id    TEXT NOT NULL,
  plan_id      TEXT,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL
);
CREATE INDEX events_plan ON events(plan_id, id);
`),
  },
  {
    id: 2,
    name: "workflow_runs",
    sql: c(`
CREATE TABLE workflow_runs (
  run_id         TEXT PRIMARY KEY,
  workflow_id    TEXT NOT NULL,
  workflow_path  TEXT NOT NULL,
  plan_id        TEXT,
  trigger        TEXT NOT NULL,
  group_name     TEXT,
  status         TEXT NOT NULL,
  owner          TEXT NOT NULL,
  started_at     TEXT NOT NULL,
  finished_at    TEXT,
  error          TEXT
);
CREATE INDEX workflow_runs_workflow ON workflow_runs(workflow_id, started_at);
CREATE INDEX workflow_runs_status ON workflow_runs(status);
CREATE INDEX workflow_runs_started ON workflow_runs(started_at, run_id);

CREATE TABLE workflow_step_runs (
  run_id          TEXT NOT NULL REFERENCES workflow_runs(run_id),
  step_id         TEXT NOT NULL,
  seq             INTEGER NOT NULL,
  ledger_step_id  TEXT,
  mode            TEXT NOT NULL,
  fast_path       INTEGER NOT NULL DEFAULT 0,
  outcome         TEXT,
  exit_code       INTEGER,
  duration_ms     BIGINT,
  tokens          BIGINT NOT NULL DEFAULT 0,
  error           TEXT,
  started_at      TEXT,
  finished_at     TEXT,
  PRIMARY KEY (run_id, step_id)
);
CREATE INDEX workflow_step_runs_step ON workflow_step_runs(step_id, outcome);
CREATE INDEX workflow_step_runs_order ON workflow_step_runs(run_id, seq);
`),
  },
  {
    id: 3,
    name: "blobs",
    sql: c(`
CREATE TABLE blobs (
  hash        TEXT PRIMARY KEY,
  bytes       BYTEA NOT NULL,
  size        BIGINT NOT NULL,
  created_at  TEXT NOT NULL
);
`),
  },
  {
    id: 4,
    name: "threads",
    sql: c(`
CREATE TABLE threads (
  thread_id            TEXT PRIMARY KEY,
  goal                 TEXT NOT NULL,
  project              TEXT,
  kind                 TEXT NOT NULL,
  parent_thread_id     TEXT,
  state                TEXT NOT NULL,
  model                TEXT,
  orchestrator_version INTEGER,
  step_count           INTEGER NOT NULL DEFAULT 0,
  input_tokens         BIGINT NOT NULL DEFAULT 0,
  output_tokens        BIGINT NOT NULL DEFAULT 0,
  cost_usd             DOUBLE PRECISION NOT NULL DEFAULT 0,
  budget               TEXT NOT NULL,
  final_result         TEXT,
  reason               TEXT,
  cancel_requested     INTEGER NOT NULL DEFAULT 0,
  driver               TEXT,
  driver_heartbeat_ms  BIGINT,
  started_ms           BIGINT,
  created_at           TEXT NOT NULL,
  updated_at           TEXT NOT NULL,
  finished_at          TEXT,
  final_outcome        TEXT,
  orchestrator_why     TEXT
);
CREATE INDEX threads_state ON threads(state);
CREATE INDEX threads_created ON threads(created_at);

CREATE TABLE thread_messages (
  id          BIGINT PRIMARY KEY,
  thread_id   TEXT NOT NULL REFERENCES threads(thread_id),
  role        TEXT NOT NULL,
  content     TEXT NOT NULL,
  tool_calls  TEXT,
  call_id     TEXT,
  tool_name   TEXT,
  is_error    INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT NOT NULL
);
CREATE INDEX thread_messages_thread ON thread_messages(thread_id, id);
-- Exactly one result message per tool call.
CREATE UNIQUE INDEX thread_messages_result ON thread_messages(thread_id, call_id) WHERE role = 'tool';

CREATE TABLE thread_checkpoints (
  thread_id     TEXT PRIMARY KEY REFERENCES threads(thread_id),
  seq           INTEGER NOT NULL,
  vm            BYTEA NOT NULL,
  call_name     TEXT NOT NULL,
  call_args     TEXT NOT NULL,
  answered      INTEGER NOT NULL DEFAULT 0,
  answer        TEXT,
  script_state  TEXT,
  updated_at    TEXT NOT NULL
);

CREATE TABLE thread_vms (
  thread_id  TEXT PRIMARY KEY REFERENCES threads(thread_id),
  vm         BYTEA NOT NULL
);

CREATE TABLE thread_actions (
  thread_id    TEXT NOT NULL REFERENCES threads(thread_id),
  call_id      TEXT NOT NULL,
  action       TEXT NOT NULL,
  args         TEXT NOT NULL,
  status       TEXT NOT NULL,
  decision     TEXT NOT NULL,
  lease_id     TEXT,
  result       TEXT,
  error        TEXT,
  started_at   TEXT NOT NULL,
  finished_at  TEXT,
  seq          BIGINT GENERATED BY DEFAULT AS IDENTITY,
  PRIMARY KEY (thread_id, call_id)
);

CREATE TABLE thread_approvals (
  approval_id  TEXT PRIMARY KEY,
  thread_id    TEXT NOT NULL REFERENCES threads(thread_id),
  call_id      TEXT NOT NULL,
  action       TEXT NOT NULL,
  args         TEXT NOT NULL,
  args_hash    TEXT NOT NULL,
  status       TEXT NOT NULL,
  always       INTEGER NOT NULL DEFAULT 0,
  decided_by   TEXT,
  reason       TEXT,
  created_at   TEXT NOT NULL,
  decided_at   TEXT,
  expires_ms   BIGINT
);
CREATE INDEX thread_approvals_thread ON thread_approvals(thread_id, status);

CREATE TABLE thread_leases (
  lease_id    TEXT PRIMARY KEY,
  thread_id   TEXT NOT NULL REFERENCES threads(thread_id),
  pattern     TEXT NOT NULL,
  uses_left   INTEGER,
  expires_ms  BIGINT,
  created_at  TEXT NOT NULL
);
CREATE INDEX thread_leases_thread ON thread_leases(thread_id);

CREATE TABLE action_grants (
  action       TEXT NOT NULL,
  project      TEXT NOT NULL,
  approval_id  TEXT,
  created_at   TEXT NOT NULL,
  PRIMARY KEY (action, project)
);

CREATE TABLE documents (
  doc_id      TEXT PRIMARY KEY,
  kind        TEXT NOT NULL,
  title       TEXT NOT NULL,
  project     TEXT,
  tags        TEXT NOT NULL,
  version     INTEGER NOT NULL DEFAULT 0,
  content     TEXT NOT NULL,
  meta        TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE INDEX documents_kind ON documents(kind, title, version);

CREATE TABLE orchestrator_failures (
  version          INTEGER PRIMARY KEY,
  consecutive      INTEGER NOT NULL,
  total            INTEGER NOT NULL,
  last_error       TEXT,
  disabled_at      TEXT,
  disabled_reason  TEXT,
  updated_at       TEXT NOT NULL
);

CREATE TABLE mission_runs (
  id                BIGINT PRIMARY KEY,
  mission           TEXT NOT NULL,
  day               TEXT NOT NULL,
  source_thread_id  TEXT NOT NULL,
  thread_id         TEXT,
  created_at        TEXT NOT NULL,
  UNIQUE (mission, source_thread_id)
);
CREATE INDEX mission_runs_day ON mission_runs(mission, day);

CREATE TABLE thread_inbox (
  id            BIGINT PRIMARY KEY,
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  content       TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  delivered_at  TEXT
);
CREATE INDEX thread_inbox_open ON thread_inbox(thread_id, delivered_at, id);

-- The answers of the host calls made since the thread's saved VM, replayed on resume.
CREATE TABLE thread_journal (
  thread_id  TEXT NOT NULL REFERENCES threads(thread_id),
  seq        INTEGER NOT NULL,
  call_name  TEXT NOT NULL,
  answer     TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq)
);
`),
  },
  // Provenance (SQLite migrations 10 and 11): provenance-migration.ts.
  { id: 5, name: "provenance", sql: provenanceMigrationSql(c) },
  {
    id: 6,
    name: "run_leases",
    // The queue (issue 17, src/queue/): a queued run's bundle, and the lease of a run a worker
    // executes — its expiry (epoch ms) and last heartbeat. Any process on any machine that finds a
    // running run's lease expired marks it interrupted (workflow/interrupt.ts).
    sql: c(`
ALTER TABLE workflow_runs ADD COLUMN bundle_hash TEXT;
ALTER TABLE workflow_runs ADD COLUMN lease_expires_at BIGINT;
ALTER TABLE workflow_runs ADD COLUMN heartbeat_at TEXT;
`),
  },
  {
    id: 7,
    name: "lean_step_pages",
    // SQLite migration 13's two columns, so `store copy` carries them both ways and both stores
    // hold the same rows. PostgreSQL does not need them: it keeps its full events_plan index and
    // updates rows out of place (MVCC), so it writes plan_run_start's default 1 — every event a run
    // of its own, which is what a SQLite store copied from here reads correctly — and leaves
    // `reserve` NULL. Neither column is returned by a read.
    sql: `
ALTER TABLE events ADD COLUMN plan_run_start INTEGER NOT NULL DEFAULT 1;
ALTER TABLE steps ADD COLUMN reserve BYTEA;
`,
  },
];
