/**
 * Numbered migrations, applied in order on open. A landed migration is never edited: add a new one.
 * `schema_migrations` records which ids were applied.
 */

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/**
 * Triggers that make each table append-only: DELETE is refused, and UPDATE is refused unless it
 * changes only the table's one mutable column (when it has one).
 */
function appendOnly(tables: readonly (readonly [table: string, mutable?: string])[]): string {
  return tables
    .map(([t, mutable]) => {
      const del = `CREATE TRIGGER ${t}_no_delete BEFORE DELETE ON ${t} BEGIN SELECT RAISE(ABORT, '${t} is append-only'); END;`;
      const upd = mutable
        ? `CREATE TRIGGER ${t}_no_update BEFORE UPDATE ON ${t} WHEN ${updatedOtherThan(t, mutable)} BEGIN SELECT RAISE(ABORT, '${t} is append-only except ${mutable}'); END;`
        : `CREATE TRIGGER ${t}_no_update BEFORE UPDATE ON ${t} BEGIN SELECT RAISE(ABORT, '${t} is append-only'); END;`;
      return `${del}\n${upd}`;
    })
    .join("\n");
}

/** A trigger condition true when an UPDATE changes any column but `mutable` (`rowid` stands for the row). */
function updatedOtherThan(table: string, mutable: string): string {
  const cols = PROV_COLUMNS[table] ?? [];
  return cols
    .filter((c) => c !== mutable)
    .map((c) => `OLD.${c} IS NOT NEW.${c}`)
    .join(" OR ");
}

/** The columns of the provenance tables that have a mutable column (for {@link appendOnly}). */
const PROV_COLUMNS: Record<string, readonly string[]> = {
  prov_references: [
    "id",
    "project",
    "kind",
    "uri",
    "label",
    "occurred_at",
    "registered_at",
    "verifiability",
    "visibility",
    "prev_hash",
    "hash",
  ],
  prov_change_reasons: [
    "id",
    "project",
    "node_key",
    "run_id",
    "event_id",
    "plan_id",
    "step_id",
    "kind",
    "role",
    "verbatim_utterance_id",
    "verbatim_start",
    "verbatim_end",
    "interpretation",
    "statement",
    "rationale",
    "rationale_visibility",
    "statement_visibility",
    "state",
    "review_after",
    "occurred_at",
    "recorded_at",
    "recorded_by",
    "tier",
    "rule_id",
    "significance",
    "prev_hash",
    "hash",
  ],
};

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
  {
    id: 10,
    name: "provenance",
    // Provenance (issue 16, ../shared/specs/provenance.md §2): the node source (analysis runs, node
    // snapshots, identity events), the user's words and sources, close-time reasons, headlines,
    // and what was shown (read_hit) versus cited (influence). Every table is append-only (triggers
    // refuse DELETE and UPDATE); the one mutable column of a table is named on its trigger. Tier
    // rules are CHECK constraints, so no caller can store a tier its row does not support.
    sql: `
CREATE TABLE prov_analysis_runs (
  id            INTEGER PRIMARY KEY,
  project       TEXT NOT NULL REFERENCES projects(name),
  plan_id       TEXT,
  step_id       TEXT,
  trigger       TEXT NOT NULL,
  commit_sha    TEXT,
  created_at    TEXT NOT NULL
);
CREATE INDEX prov_analysis_runs_project ON prov_analysis_runs(project, id);
CREATE INDEX prov_analysis_runs_plan ON prov_analysis_runs(plan_id, id) WHERE plan_id IS NOT NULL;

CREATE TABLE prov_node_snapshots (
  run_id          INTEGER NOT NULL REFERENCES prov_analysis_runs(id),
  node_key        TEXT NOT NULL,
  node_type       TEXT NOT NULL,
  qualified_name  TEXT NOT NULL,
  file_path       TEXT NOT NULL,
  line_start      INTEGER NOT NULL,
  line_end        INTEGER NOT NULL,
  struct_sig      TEXT,
  dataflow_sig    TEXT,
  PRIMARY KEY (run_id, node_key)
);
CREATE INDEX prov_node_snapshots_key ON prov_node_snapshots(node_key, run_id);
CREATE INDEX prov_node_snapshots_qn ON prov_node_snapshots(qualified_name, run_id);
CREATE INDEX prov_node_snapshots_file ON prov_node_snapshots(run_id, file_path, line_start);

CREATE TABLE prov_node_events (
  run_id      INTEGER NOT NULL REFERENCES prov_analysis_runs(id),
  seq         INTEGER NOT NULL,
  event_type  TEXT NOT NULL,
  node_key    TEXT NOT NULL,
  payload     TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX prov_node_events_key ON prov_node_events(node_key, run_id);

CREATE TABLE prov_utterances (
  id            INTEGER PRIMARY KEY,
  session_id    TEXT,
  project       TEXT,
  plan_id       TEXT,
  text          TEXT NOT NULL CHECK (length(text) > 0),
  occurred_at   TEXT NOT NULL,
  recorded_at   TEXT NOT NULL,
  visibility    TEXT NOT NULL DEFAULT 'personal' CHECK (visibility IN ('personal','shareable')),
  origin        TEXT NOT NULL DEFAULT 'unknown' CHECK (origin IN ('hook','human_cli','agent_cli','import','unknown')),
  prev_hash     TEXT NOT NULL,
  hash          TEXT NOT NULL
);
CREATE INDEX prov_utterances_plan ON prov_utterances(plan_id) WHERE plan_id IS NOT NULL;
CREATE INDEX prov_utterances_project ON prov_utterances(project, occurred_at);
CREATE INDEX prov_utterances_session ON prov_utterances(session_id) WHERE session_id IS NOT NULL;

CREATE TABLE prov_references (
  id              INTEGER PRIMARY KEY,
  project         TEXT,
  kind            TEXT NOT NULL CHECK (kind IN ('email','meeting','chat','ticket','doc','commit','verbal','other')),
  uri             TEXT,
  label           TEXT NOT NULL CHECK (length(label) BETWEEN 1 AND 512),
  occurred_at     TEXT NOT NULL,
  registered_at   TEXT NOT NULL,
  verifiability   TEXT NOT NULL CHECK (verifiability =
                    CASE WHEN kind = 'verbal' THEN 'verbal' WHEN uri IS NOT NULL THEN 'linked' ELSE 'unreachable' END),
  visibility      TEXT NOT NULL DEFAULT 'shareable' CHECK (visibility IN ('personal','shareable')),
  last_checked    TEXT,
  prev_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL,
  CHECK (NOT (kind = 'verbal' AND uri IS NOT NULL))
);

CREATE TABLE prov_change_reasons (
  id                      INTEGER PRIMARY KEY,
  project                 TEXT NOT NULL,
  node_key                TEXT,
  run_id                  INTEGER,
  event_id                INTEGER,
  plan_id                 TEXT NOT NULL,
  step_id                 TEXT,
  kind                    TEXT NOT NULL DEFAULT 'technical' CHECK (kind IN ('technical','organizational','mixed')),
  role                    TEXT NOT NULL DEFAULT 'reason' CHECK (role IN ('reason','rejected_path','constraint')),
  verbatim_utterance_id   INTEGER REFERENCES prov_utterances(id),
  verbatim_start          INTEGER,
  verbatim_end            INTEGER,
  interpretation          TEXT,
  statement               TEXT,
  rationale               TEXT,
  rationale_visibility    TEXT NOT NULL DEFAULT 'personal',
  statement_visibility    TEXT NOT NULL DEFAULT 'shareable',
  state                   TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active','superseded','expired','unknown')),
  superseded_by           INTEGER,
  review_after            TEXT,
  occurred_at             TEXT NOT NULL,
  recorded_at             TEXT NOT NULL,
  recorded_by             TEXT NOT NULL CHECK (recorded_by IN ('human','agent','system')),
  tier                    TEXT NOT NULL CHECK (tier IN ('stated','asserted','derived','unstated')),
  rule_id                 TEXT,
  significance            TEXT,
  prev_hash               TEXT NOT NULL,
  hash                    TEXT NOT NULL,
  CHECK (node_key IS NOT NULL OR role = 'rejected_path'),
  CHECK (tier <> 'stated' OR (verbatim_utterance_id IS NOT NULL AND verbatim_start IS NOT NULL
         AND verbatim_end IS NOT NULL AND verbatim_start >= 0 AND verbatim_start < verbatim_end)),
  CHECK (tier <> 'asserted' OR coalesce(interpretation, statement) IS NOT NULL),
  CHECK (tier <> 'derived' OR rule_id IS NOT NULL),
  CHECK (tier <> 'unstated' OR (verbatim_utterance_id IS NULL AND interpretation IS NULL
         AND statement IS NULL AND rationale IS NULL)),
  CHECK (rationale IS NULL OR coalesce(interpretation, statement) IS NOT NULL)
);
CREATE INDEX prov_change_reasons_plan ON prov_change_reasons(plan_id, node_key);
CREATE INDEX prov_change_reasons_node ON prov_change_reasons(node_key, id);
CREATE INDEX prov_change_reasons_project ON prov_change_reasons(project, tier, state);

CREATE TABLE prov_reference_links (
  id              INTEGER PRIMARY KEY,
  reason_id       INTEGER REFERENCES prov_change_reasons(id),
  reference_id    INTEGER NOT NULL REFERENCES prov_references(id),
  utterance_id    INTEGER REFERENCES prov_utterances(id),
  stance          TEXT NOT NULL DEFAULT 'supports' CHECK (stance IN ('supports','contradicts','context')),
  CHECK ((reason_id IS NULL) <> (utterance_id IS NULL))
);
CREATE UNIQUE INDEX prov_reference_links_reason ON prov_reference_links(reason_id, reference_id) WHERE reason_id IS NOT NULL;
CREATE UNIQUE INDEX prov_reference_links_utterance ON prov_reference_links(utterance_id, reference_id) WHERE utterance_id IS NOT NULL;

CREATE TABLE prov_reference_checks (
  id              INTEGER PRIMARY KEY,
  reference_id    INTEGER NOT NULL REFERENCES prov_references(id),
  checked_at      TEXT NOT NULL,
  verdict         TEXT NOT NULL CHECK (verdict IN ('ok','gone','moved','no_access')),
  note            TEXT,
  prev_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL
);
CREATE INDEX prov_reference_checks_ref ON prov_reference_checks(reference_id, id);

CREATE TABLE prov_trigger_log (
  id          INTEGER PRIMARY KEY,
  project     TEXT NOT NULL,
  plan_id     TEXT NOT NULL,
  node_key    TEXT,
  path        TEXT NOT NULL CHECK (path IN ('code','external')),
  rule_id     TEXT,
  verdict     TEXT NOT NULL CHECK (verdict IN ('auto','ask','silent','ambiguous')),
  basis       TEXT NOT NULL,
  user_action TEXT,
  at          TEXT NOT NULL
);
CREATE INDEX prov_trigger_log_plan ON prov_trigger_log(plan_id);

CREATE TABLE prov_read_hits (
  id              INTEGER PRIMARY KEY,
  reason_id       INTEGER NOT NULL REFERENCES prov_change_reasons(id),
  project         TEXT NOT NULL,
  plan_id         TEXT,
  session_id      TEXT,
  step_id         TEXT,
  moment          TEXT NOT NULL CHECK (moment IN ('plan','edit','close','why')),
  injected_chars  INTEGER,
  at              TEXT NOT NULL
);
CREATE INDEX prov_read_hits_reason ON prov_read_hits(reason_id, moment);

CREATE TABLE prov_influence (
  id          INTEGER PRIMARY KEY,
  reason_id   INTEGER NOT NULL REFERENCES prov_change_reasons(id),
  project     TEXT NOT NULL,
  plan_id     TEXT,
  session_id  TEXT,
  node_key    TEXT,
  via         TEXT NOT NULL CHECK (via IN ('reason_because','headline_response')),
  by          TEXT NOT NULL CHECK (by IN ('agent','human')),
  at          TEXT NOT NULL
);
CREATE INDEX prov_influence_reason ON prov_influence(reason_id);
CREATE INDEX prov_influence_plan ON prov_influence(plan_id, via);

CREATE TABLE prov_headlines (
  id              INTEGER PRIMARY KEY,
  project         TEXT NOT NULL,
  plan_id         TEXT,
  session_id      TEXT,
  findings_json   TEXT NOT NULL,
  at              TEXT NOT NULL,
  CHECK (plan_id IS NOT NULL OR session_id IS NOT NULL)
);
CREATE INDEX prov_headlines_plan ON prov_headlines(plan_id, id);

CREATE TABLE prov_headline_responses (
  id            INTEGER PRIMARY KEY,
  headline_id   INTEGER NOT NULL REFERENCES prov_headlines(id),
  finding_id    TEXT NOT NULL,
  action        TEXT NOT NULL CHECK (action IN ('revise','proceed')),
  rationale     TEXT,
  by            TEXT NOT NULL CHECK (by IN ('agent','human')),
  cites_json    TEXT NOT NULL DEFAULT '[]',
  at            TEXT NOT NULL,
  UNIQUE (headline_id, finding_id)
);

ALTER TABLE plans ADD COLUMN session_id TEXT;
ALTER TABLE plans ADD COLUMN headline_json TEXT;
${appendOnly([
  ["prov_analysis_runs"],
  ["prov_node_snapshots"],
  ["prov_node_events"],
  ["prov_utterances"],
  ["prov_references", "last_checked"],
  ["prov_reference_links"],
  ["prov_reference_checks"],
  ["prov_change_reasons", "superseded_by"],
  ["prov_trigger_log"],
  ["prov_read_hits"],
  ["prov_influence"],
  ["prov_headlines"],
  ["prov_headline_responses"],
])}`,
  },
  {
    id: 11,
    name: "prov_node_cache",
    // The node source's parse cache (issue 16): the symbols one file's content yields, keyed by
    // analyser revision, language and git blob sha, so a refresh re-parses only changed files.
    // A cache, not a record: rows are only ever inserted (INSERT OR IGNORE), and deleting them
    // loses nothing but time.
    sql: `
CREATE TABLE prov_node_cache (
  cache_key   TEXT PRIMARY KEY,
  facts       TEXT NOT NULL,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    id: 12,
    name: "run_leases",
    // The queue (issue 17): PostgreSQL migration 6's columns, so the run statements (and the lease
    // check of workflow/interrupt.ts) are the same on both stores. A SQLite store has no queue.
    sql: `
ALTER TABLE workflow_runs ADD COLUMN bundle_hash TEXT;
ALTER TABLE workflow_runs ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE workflow_runs ADD COLUMN heartbeat_at TEXT;
`,
  },
  {
    id: 13,
    name: "lean_step_pages",
    // A step transition wrote ~5 pages (bench/ledger, bench/tools/ledger-pages.mjs). Two of them
    // were layout, not data:
    // - events_plan: every event's (plan_id, id) entry went into the middle of the index, at its
    //   plan's place, and split leaves (1.7 pages a transition). Only the first event of each run
    //   of consecutive events of one plan is indexed now (`plan_run_start = 1`); the events of a
    //   run follow their start in id order, so a plan's events are read run by run from the
    //   partial index (sqlite-store.ts, listEvents). A plan worked without interleaving is one run:
    //   one index entry for all its events. Existing rows keep the default 1: each is its own run,
    //   exactly the old index.
    // - steps: a row grew on start by its lease and stamps, its full 1 KiB page overflowed and was
    //   rebalanced with a neighbour (1.9 pages on start). A step is inserted with `reserve`, zero
    //   bytes its updates consume as the row grows (and get back as it shrinks), so the row keeps
    //   its size and is rewritten in its page; a step that finishes gives the reserve back. Open
    //   steps of an existing store get their reserve here.
    sql: `
ALTER TABLE events ADD COLUMN plan_run_start INTEGER NOT NULL DEFAULT 1;
DROP INDEX events_plan;
CREATE INDEX events_plan_runs ON events(plan_id, id) WHERE plan_run_start = 1;
ALTER TABLE steps ADD COLUMN reserve BLOB;
UPDATE steps SET reserve = zeroblob(128) WHERE status IN ('PENDING', 'IN_PROGRESS');
`,
  },
];
