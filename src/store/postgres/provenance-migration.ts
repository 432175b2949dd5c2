/**
 * PostgreSQL migration 5, `provenance`: SQLite's migrations 10 and 11 (src/store/sqlite/migrations.ts)
 * with the same tables, columns, CHECK constraints (the tier rules, derived verifiability) and
 * indexes. `plans.session_id` and `plans.headline_json` are already in PostgreSQL migration 1.
 *
 * - Ids: SQLite's `INTEGER PRIMARY KEY` is `max(rowid) + 1`; here `BIGINT PRIMARY KEY` filled by a
 *   BEFORE INSERT trigger with `MAX(id) + 1` when the insert gives none — dense and identical to
 *   SQLite's for the same writes (a rolled-back savepoint leaves no gap), and safe because every
 *   provenance write runs inside `store.tx`, under the workspace write lock.
 * - Append-only: BEFORE DELETE and BEFORE UPDATE row triggers raise `<table> is append-only`; the
 *   one mutable column of a table (`prov_references.last_checked`,
 *   `prov_change_reasons.superseded_by`) may change alone — an UPDATE that changes any other column
 *   raises `<table> is append-only except <column>`, exactly SQLite's triggers. (TRUNCATE, a table
 *   owner's statement, is not a row change; it is outside the rule on both stores, as deleting the
 *   SQLite file is.)
 * - `prov_node_cache` (SQLite migration 11) is a cache, not a record: inserted with
 *   `ON CONFLICT DO NOTHING`, no triggers.
 */

/** Tables with an `id` the trigger fills. */
const ID_TABLES = [
  "prov_analysis_runs",
  "prov_utterances",
  "prov_references",
  "prov_change_reasons",
  "prov_reference_links",
  "prov_reference_checks",
  "prov_trigger_log",
  "prov_read_hits",
  "prov_influence",
  "prov_headlines",
  "prov_headline_responses",
] as const;

/** Every append-only table and its one mutable column (SQLite migration 10's list). */
const APPEND_ONLY: readonly (readonly [string, string?])[] = [
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
];

const FUNCTIONS = `
CREATE FUNCTION prov_next_id() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.id IS NULL THEN
    EXECUTE format('SELECT COALESCE(MAX(id), 0) + 1 FROM %I', TG_TABLE_NAME) INTO NEW.id;
  END IF;
  RETURN NEW;
END
$fn$;

CREATE FUNCTION prov_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = '23001';
END
$fn$;

CREATE FUNCTION prov_append_only_except() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF (to_jsonb(OLD) - TG_ARGV[0]) IS DISTINCT FROM (to_jsonb(NEW) - TG_ARGV[0]) THEN
    RAISE EXCEPTION '% is append-only except %', TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = '23001';
  END IF;
  RETURN NEW;
END
$fn$;
`;

function triggers(): string {
  const ids = ID_TABLES.map(
    (t) => `CREATE TRIGGER ${t}_id BEFORE INSERT ON ${t} FOR EACH ROW EXECUTE FUNCTION prov_next_id();`,
  );
  const rules = APPEND_ONLY.map(([t, mutable]) => {
    const del = `CREATE TRIGGER ${t}_no_delete BEFORE DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION prov_append_only();`;
    const upd = mutable
      ? `CREATE TRIGGER ${t}_no_update BEFORE UPDATE ON ${t} FOR EACH ROW EXECUTE FUNCTION prov_append_only_except('${mutable}');`
      : `CREATE TRIGGER ${t}_no_update BEFORE UPDATE ON ${t} FOR EACH ROW EXECUTE FUNCTION prov_append_only();`;
    return `${del}\n${upd}`;
  });
  return [...ids, ...rules].join("\n");
}

/** The tables (TEXT columns get `COLLATE "C"` from the caller's helper). */
export const PROVENANCE_TABLES = `
CREATE TABLE prov_analysis_runs (
  id            BIGINT PRIMARY KEY,
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
  run_id          BIGINT NOT NULL REFERENCES prov_analysis_runs(id),
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
  run_id      BIGINT NOT NULL REFERENCES prov_analysis_runs(id),
  seq         INTEGER NOT NULL,
  event_type  TEXT NOT NULL,
  node_key    TEXT NOT NULL,
  payload     TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX prov_node_events_key ON prov_node_events(node_key, run_id);

CREATE TABLE prov_utterances (
  id            BIGINT PRIMARY KEY,
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
  id              BIGINT PRIMARY KEY,
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
  id                      BIGINT PRIMARY KEY,
  project                 TEXT NOT NULL,
  node_key                TEXT,
  run_id                  BIGINT,
  event_id                BIGINT,
  plan_id                 TEXT NOT NULL,
  step_id                 TEXT,
  kind                    TEXT NOT NULL DEFAULT 'technical' CHECK (kind IN ('technical','organizational','mixed')),
  role                    TEXT NOT NULL DEFAULT 'reason' CHECK (role IN ('reason','rejected_path','constraint')),
  verbatim_utterance_id   BIGINT REFERENCES prov_utterances(id),
  verbatim_start          INTEGER,
  verbatim_end            INTEGER,
  interpretation          TEXT,
  statement               TEXT,
  rationale               TEXT,
  rationale_visibility    TEXT NOT NULL DEFAULT 'personal',
  statement_visibility    TEXT NOT NULL DEFAULT 'shareable',
  state                   TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active','superseded','expired','unknown')),
  superseded_by           BIGINT,
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
  id              BIGINT PRIMARY KEY,
  reason_id       BIGINT REFERENCES prov_change_reasons(id),
  reference_id    BIGINT NOT NULL REFERENCES prov_references(id),
  utterance_id    BIGINT REFERENCES prov_utterances(id),
  stance          TEXT NOT NULL DEFAULT 'supports' CHECK (stance IN ('supports','contradicts','context')),
  CHECK ((reason_id IS NULL) <> (utterance_id IS NULL))
);
CREATE UNIQUE INDEX prov_reference_links_reason ON prov_reference_links(reason_id, reference_id) WHERE reason_id IS NOT NULL;
CREATE UNIQUE INDEX prov_reference_links_utterance ON prov_reference_links(utterance_id, reference_id) WHERE utterance_id IS NOT NULL;

CREATE TABLE prov_reference_checks (
  id              BIGINT PRIMARY KEY,
  reference_id    BIGINT NOT NULL REFERENCES prov_references(id),
  checked_at      TEXT NOT NULL,
  verdict         TEXT NOT NULL CHECK (verdict IN ('ok','gone','moved','no_access')),
  note            TEXT,
  prev_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL
);
CREATE INDEX prov_reference_checks_ref ON prov_reference_checks(reference_id, id);

CREATE TABLE prov_trigger_log (
  id          BIGINT PRIMARY KEY,
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
  id              BIGINT PRIMARY KEY,
  reason_id       BIGINT NOT NULL REFERENCES prov_change_reasons(id),
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
  id          BIGINT PRIMARY KEY,
  reason_id   BIGINT NOT NULL REFERENCES prov_change_reasons(id),
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
  id              BIGINT PRIMARY KEY,
  project         TEXT NOT NULL,
  plan_id         TEXT,
  session_id      TEXT,
  findings_json   TEXT NOT NULL,
  at              TEXT NOT NULL,
  CHECK (plan_id IS NOT NULL OR session_id IS NOT NULL)
);
CREATE INDEX prov_headlines_plan ON prov_headlines(plan_id, id);

CREATE TABLE prov_headline_responses (
  id            BIGINT PRIMARY KEY,
  headline_id   BIGINT NOT NULL REFERENCES prov_headlines(id),
  finding_id    TEXT NOT NULL,
  action        TEXT NOT NULL CHECK (action IN ('revise','proceed')),
  rationale     TEXT,
  by            TEXT NOT NULL CHECK (by IN ('agent','human')),
  cites_json    TEXT NOT NULL DEFAULT '[]',
  at            TEXT NOT NULL,
  UNIQUE (headline_id, finding_id)
);

CREATE TABLE prov_node_cache (
  cache_key   TEXT PRIMARY KEY,
  facts       TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
`;

/** Migration 5's statements given the TEXT → `TEXT COLLATE "C"` helper of migrations.ts. */
export function provenanceMigrationSql(collateC: (sql: string) => string): string {
  return `${collateC(PROVENANCE_TABLES)}\n${FUNCTIONS}\n${triggers()}\n`;
}
