/**
 * Numbered migrations, applied in order on open. A landed migration is never edited: add a new one.
 * `schema_migrations` records which ids were applied.
 */

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: "ledger",
    sql: `
CREATE TABLE projects (
  name        TEXT PRIMARY KEY,
  repo_path   TEXT,
  created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX projects_repo ON projects(repo_path) WHERE repo_path IS NOT NULL;

CREATE TABLE plans (
  plan_id         TEXT PRIMARY KEY,
  goal            TEXT NOT NULL,
  kind            TEXT NOT NULL DEFAULT 'plan',
  project         TEXT,
  project_source  TEXT,
  status          TEXT NOT NULL,
  revision_count  INTEGER NOT NULL DEFAULT 0,
  max_revisions   INTEGER NOT NULL,
  source_cwd      TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  finished_at     TEXT
);
CREATE INDEX plans_status ON plans(status, created_at);
CREATE INDEX plans_created ON plans(created_at);

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
  duration_ms       INTEGER,
  lease_holder      TEXT,
  lease_expires_at  INTEGER,
  heartbeat_at      TEXT,
  started_at        TEXT,
  finished_at       TEXT,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
);
CREATE INDEX steps_plan ON steps(plan_id);
CREATE INDEX steps_parent ON steps(parent_step_id);
CREATE INDEX steps_lease ON steps(lease_expires_at) WHERE status = 'IN_PROGRESS';

CREATE TABLE step_logs (
  id         INTEGER PRIMARY KEY,
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

CREATE TABLE deviations (
  id              INTEGER PRIMARY KEY,
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
  id          INTEGER PRIMARY KEY,
  plan_id     TEXT NOT NULL REFERENCES plans(plan_id),
  step_id     TEXT,
  name        TEXT NOT NULL,
  source      TEXT NOT NULL,
  reason      TEXT,
  created_at  TEXT NOT NULL
);
CREATE INDEX skills_plan ON skills(plan_id, id);

CREATE TABLE metrics (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  value       REAL NOT NULL,
  unit        TEXT,
  project     TEXT,
  plan_id     TEXT,
  step_id     TEXT,
  created_at  TEXT NOT NULL
);
CREATE INDEX metrics_plan ON metrics(plan_id, id);
CREATE INDEX metrics_name ON metrics(name, id);

CREATE TABLE events (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  at           TEXT NOT NULL,
  entity_kind  TEXT NOT NULL,
  entity_id    TEXT NOT NULL,
  plan_id      TEXT,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL
);
-- Only the plan filter is indexed: entity filters and live tails scan forward from the resume id
-- (the primary key). Every index here is paid by every write (bench/ledger: two event indexes
-- cost ~40% of write throughput).
CREATE INDEX events_plan ON events(plan_id, id);
`,
  },
  {
    id: 2,
    name: "workflow_runs",
    sql: `
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

CREATE TABLE workflow_step_runs (
  run_id          TEXT NOT NULL REFERENCES workflow_runs(run_id),
  step_id         TEXT NOT NULL,
  ledger_step_id  TEXT,
  mode            TEXT NOT NULL,
  fast_path       INTEGER NOT NULL DEFAULT 0,
  outcome         TEXT,
  exit_code       INTEGER,
  duration_ms     INTEGER,
  tokens          INTEGER NOT NULL DEFAULT 0,
  error           TEXT,
  started_at      TEXT,
  finished_at     TEXT,
  PRIMARY KEY (run_id, step_id)
);
CREATE INDEX workflow_step_runs_step ON workflow_step_runs(step_id, outcome);
`,
  },
  {
    id: 3,
    name: "lean_step_transitions",
    // A step transition used to write six pages: the step, the lease index, the event, the event's
    // plan index and sqlite_sequence (AUTOINCREMENT). Events are never deleted, so a plain INTEGER
    // PRIMARY KEY already hands out ever-increasing ids; and a sweep finds expired leases through
    // the open plans (plans_status) and their steps (steps_plan) instead of an index every start
    // and finish has to update.
    sql: `
CREATE TABLE events_v3 (
  id           INTEGER PRIMARY KEY,
  at           TEXT NOT NULL,
  entity_kind  TEXT NOT NULL,
  entity_id    TEXT NOT NULL,
  plan_id      TEXT,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL
);
INSERT INTO events_v3 (id, at, entity_kind, entity_id, plan_id, type, payload)
  SELECT id, at, entity_kind, entity_id, plan_id, type, payload FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
CREATE INDEX events_plan ON events(plan_id, id);
DROP INDEX steps_lease;
`,
  },
  {
    id: 4,
    name: "server_list_indexes",
    // The server's lists page newest first by keyset: runs across all workflows on (started_at,
    // run_id), plans on (created_at, plan_id) so a page needs no sort of the ties. Neither key
    // column changes after insert, so status updates do not touch these indexes.
    sql: `
CREATE INDEX workflow_runs_started ON workflow_runs(started_at, run_id);
CREATE INDEX plans_created_id ON plans(created_at, plan_id);
`,
  },
  {
    id: 5,
    name: "threads",
    sql: `
CREATE TABLE threads (
  thread_id        TEXT PRIMARY KEY,
  goal             TEXT NOT NULL,
  project          TEXT,
  kind             TEXT NOT NULL,
  parent_thread_id TEXT,
  state            TEXT NOT NULL,
  model            TEXT,
  orchestrator_version INTEGER,
  step_count       INTEGER NOT NULL DEFAULT 0,
  input_tokens     INTEGER NOT NULL DEFAULT 0,
  output_tokens    INTEGER NOT NULL DEFAULT 0,
  cost_usd         REAL NOT NULL DEFAULT 0,
  budget           TEXT NOT NULL,
  final_result     TEXT,
  reason           TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  driver           TEXT,
  driver_heartbeat_ms INTEGER,
  started_ms       INTEGER,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  finished_at      TEXT
);
CREATE INDEX threads_state ON threads(state);
CREATE INDEX threads_created ON threads(created_at);

CREATE TABLE thread_messages (
  id            INTEGER PRIMARY KEY,
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  role          TEXT NOT NULL,
  content       TEXT NOT NULL,
  tool_calls    TEXT,
  call_id       TEXT,
  tool_name     TEXT,
  is_error      INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL
);
CREATE INDEX thread_messages_thread ON thread_messages(thread_id, id);
-- Exactly one result message per tool call.
CREATE UNIQUE INDEX thread_messages_result ON thread_messages(thread_id, call_id) WHERE role = 'tool';

CREATE TABLE thread_checkpoints (
  thread_id     TEXT PRIMARY KEY REFERENCES threads(thread_id),
  seq           INTEGER NOT NULL,
  vm            BLOB NOT NULL,
  call_name     TEXT NOT NULL,
  call_args     TEXT NOT NULL,
  answered      INTEGER NOT NULL DEFAULT 0,
  answer        TEXT,
  script_state  TEXT,
  updated_at    TEXT NOT NULL
);

CREATE TABLE thread_actions (
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  call_id       TEXT NOT NULL,
  action        TEXT NOT NULL,
  args          TEXT NOT NULL,
  status        TEXT NOT NULL,
  decision      TEXT NOT NULL,
  lease_id      TEXT,
  result        TEXT,
  error         TEXT,
  started_at    TEXT NOT NULL,
  finished_at   TEXT,
  PRIMARY KEY (thread_id, call_id)
);

CREATE TABLE thread_approvals (
  approval_id   TEXT PRIMARY KEY,
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  call_id       TEXT NOT NULL,
  action        TEXT NOT NULL,
  args          TEXT NOT NULL,
  args_hash     TEXT NOT NULL,
  status        TEXT NOT NULL,
  always        INTEGER NOT NULL DEFAULT 0,
  decided_by    TEXT,
  reason        TEXT,
  created_at    TEXT NOT NULL,
  decided_at    TEXT
);
CREATE INDEX thread_approvals_thread ON thread_approvals(thread_id, status);

CREATE TABLE thread_leases (
  lease_id      TEXT PRIMARY KEY,
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  pattern       TEXT NOT NULL,
  uses_left     INTEGER,
  expires_ms    INTEGER,
  created_at    TEXT NOT NULL
);
CREATE INDEX thread_leases_thread ON thread_leases(thread_id);

CREATE TABLE action_grants (
  action        TEXT NOT NULL,
  project       TEXT NOT NULL,
  approval_id   TEXT,
  created_at    TEXT NOT NULL,
  PRIMARY KEY (action, project)
);

CREATE TABLE documents (
  doc_id        TEXT PRIMARY KEY,
  kind          TEXT NOT NULL,
  title         TEXT NOT NULL,
  project       TEXT,
  tags          TEXT NOT NULL,
  version       INTEGER NOT NULL DEFAULT 0,
  content       TEXT NOT NULL,
  meta          TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL
);
CREATE INDEX documents_kind ON documents(kind, title, version);

CREATE TABLE orchestrator_failures (
  version       INTEGER PRIMARY KEY,
  consecutive   INTEGER NOT NULL,
  total         INTEGER NOT NULL,
  last_error    TEXT,
  disabled_at   TEXT,
  disabled_reason TEXT,
  updated_at    TEXT NOT NULL
);

CREATE TABLE mission_runs (
  id            INTEGER PRIMARY KEY,
  mission       TEXT NOT NULL,
  day           TEXT NOT NULL,
  source_thread_id TEXT NOT NULL,
  thread_id     TEXT,
  created_at    TEXT NOT NULL,
  UNIQUE (mission, source_thread_id)
);
CREATE INDEX mission_runs_day ON mission_runs(mission, day);
`,
  },
  {
    id: 6,
    name: "drop_plans_created",
    // plans_created_id (migration 4) serves every ORDER BY created_at the old single-column index
    // did; one index less to write per published plan.
    sql: `
DROP INDEX plans_created;
`,
  },
  {
    id: 7,
    name: "plans_contract",
    // The original ledger's plan fields (issue 14): the verbatim prompt, the abandon reason, the
    // review bookkeeping agents read, and the extension keys stored as given (JSON); a metric's
    // source (`record-metric`, `run-step`). A step published without a type has type '' until
    // start/run sets one.
    sql: `
ALTER TABLE plans ADD COLUMN user_query TEXT;
ALTER TABLE plans ADD COLUMN abandon_reason TEXT;
ALTER TABLE plans ADD COLUMN review_state TEXT;
ALTER TABLE plans ADD COLUMN review_skip_reason TEXT;
ALTER TABLE plans ADD COLUMN extensions TEXT;
ALTER TABLE metrics ADD COLUMN source TEXT;
`,
  },
  {
    id: 8,
    name: "thread_inbox",
    // Threads: messages a person injects into a running thread (delivered by __check_signals__),
    // the orchestrator's FINAL outcome kept as an object, why a version was the one that ran,
    // when an approval request expires, and the journal of host calls since the saved VM.
    sql: `
CREATE TABLE thread_inbox (
  id            INTEGER PRIMARY KEY,
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  content       TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  delivered_at  TEXT
);
CREATE INDEX thread_inbox_open ON thread_inbox(thread_id, delivered_at, id);
ALTER TABLE threads ADD COLUMN final_outcome TEXT;
ALTER TABLE threads ADD COLUMN orchestrator_why TEXT;
ALTER TABLE thread_approvals ADD COLUMN expires_ms INTEGER;

-- The answers of the host calls made since the thread's saved VM, replayed on resume.
CREATE TABLE thread_journal (
  thread_id     TEXT NOT NULL REFERENCES threads(thread_id),
  seq           INTEGER NOT NULL,
  call_name     TEXT NOT NULL,
  answer        TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq)
);
`,
  },
  {
    id: 9,
    name: "thread_vms",
    // Threads: the saved VM in a row of its own, so marking its call answered or storing the
    // script's state rewrites a small row and not the VM's bytes (SQLite rewrites a whole row).
    sql: `
CREATE TABLE thread_vms (
  thread_id     TEXT PRIMARY KEY REFERENCES threads(thread_id),
  vm            BLOB NOT NULL
);
INSERT INTO thread_vms (thread_id, vm) SELECT thread_id, vm FROM thread_checkpoints;
UPDATE thread_checkpoints SET vm = x'';
`,
  },
];
