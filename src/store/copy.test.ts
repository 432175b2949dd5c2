/**
 * `store copy` and `store verify` on real stores: SQLite temp files and a real PostgreSQL server
 * (test/harness/pg.ts, a fresh database per test). The registry against the SQLite schema; a round
 * trip SQLite → PostgreSQL → SQLite with awkward values, ids and the step-run order kept; and the
 * ways a caller could make it lose data: a non-empty target, a table or column the target lacks, a
 * table nobody registered, a value the target cannot hold, a corrupt blob, a tampered copy, an
 * identity column on the target.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../test/harness/pg.js";
import { RatchetError } from "../core/index.js";
import { BlobStore } from "./blobs.js";
import { COPY_SKIPPED, COPY_TABLES, type CopyEnd, copyStore, firstMismatch, verifyStores } from "./copy.js";
import { openCopyEnd } from "./copy-ends.js";
import { columnsOf, primaryKeyOf, tablesOf } from "./copy-schema.js";
import type { PgStore } from "./postgres/pg-store.js";
import type { SqliteStore } from "./sqlite/sqlite-store.js";

let cluster: PgCluster | undefined;
const dirs: string[] = [];
const opened: CopyEnd[] = [];

beforeAll(async () => {
  if (pgAvailable()) cluster = await startPgCluster();
}, 120_000);
afterAll(() => {
  for (const e of opened) e.store.close();
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "ratchet-copy-"));
  dirs.push(d);
  return d;
}

/** A SQLite end in a fresh workspace folder. */
function sqliteEnd(): CopyEnd & { store: SqliteStore; dir: string } {
  const dir = tempDir();
  const e = openCopyEnd(join(dir, "ratchet.db"), "to");
  opened.push(e);
  return { ...e, store: e.store as SqliteStore, dir };
}

function pgEnd(url = cluster?.createDatabase()): CopyEnd & { store: PgStore; url: string } {
  if (!url) throw new Error("PostgreSQL is not installed: run `bash scripts/ensure-system-deps.sh`");
  const e = openCopyEnd(url, "to");
  opened.push(e);
  return { ...e, store: e.store as PgStore, url };
}

const T = "2026-12-01T10:00:00.000Z";
const BIG = "x".repeat(40_000);

/** Ledger and run rows with awkward values, and one blob referenced by a log. */
function fill(src: CopyEnd & { store: SqliteStore }): { blob: string } {
  const blob = new BlobStore((src.blobs as { dir: string }).dir).put(BIG);
  const db = src.store.db;
  db.exec(`
INSERT INTO projects (name, repo_path, created_at) VALUES ('proj', '/r', '${T}'), ('zeta', NULL, '${T}');
INSERT INTO plans (plan_id, goal, kind, project, status, revision_count, max_revisions, created_at, updated_at, user_query, headline_json)
  VALUES ('P-B', 'Ünïcødé — ''quoted'' "goal" 🚀', 'plan', 'proj', 'IN_PROGRESS', 1, 3, '${T}', '${T}', '', '{"a":[1,2]}'),
         ('P-A', 'second', 'plan', NULL, 'COMPLETED', 0, 3, '${T}', '${T}', NULL, NULL);
INSERT INTO steps (step_id, plan_id, parent_step_id, seq, role, depth, title, type, status, tokens, duration_ms, lease_expires_at, created_at, updated_at)
  VALUES ('P-B.1', 'P-B', NULL, 1, 'regular', 0, 'root', 'COMMAND', 'COMPLETED', 12, 1234, 1798000000000, '${T}', '${T}'),
         ('P-B.1.1', 'P-B', 'P-B.1', 1, 'regular', 1, 'child', 'THINKING', 'PENDING', 0, NULL, NULL, '${T}', '${T}'),
         ('P-A.1', 'P-A', NULL, 1, 'regular', 0, 'other', '', 'COMPLETED', 0, NULL, NULL, '${T}', '${T}');
INSERT INTO step_logs (id, step_id, plan_id, at, kind, text, bytes, truncated, blob)
  VALUES (1, 'P-B.1', 'P-B', '${T}', 'stdout', 'head…tail', 40000, 1, '${blob}'),
         (7, 'P-B.1', 'P-B', '${T}', 'note', 'tab\there
newline', 12, 0, NULL);
INSERT INTO deviations (id, plan_id, kind, justification, old_max, new_max, created_at) VALUES (1, 'P-B', 'budget', 'why', 3, 5, '${T}');
INSERT INTO skills (id, plan_id, step_id, name, source, created_at) VALUES (1, 'P-B', 'P-B.1', 'sk', 'agent', '${T}');
INSERT INTO metrics (id, name, value, unit, project, created_at, source) VALUES (1, 'm', 0.1, 'ms', 'proj', '${T}', 'x'), (2, 'n', -12345678901.5, NULL, NULL, '${T}', NULL);
INSERT INTO events (id, at, entity_kind, entity_id, plan_id, type, payload)
  VALUES (1, '${T}', 'plan', 'P-B', 'P-B', 'plan.published', '{}'), (2, '${T}', 'step', 'P-B.1', 'P-B', 'step.started', '{"x":1}'),
         (5, '${T}', 'plan', 'P-A', 'P-A', 'plan.published', '{}');
INSERT INTO workflow_runs (run_id, workflow_id, workflow_path, plan_id, trigger, status, owner, started_at)
  VALUES ('run-1', 'wf', '/w', 'P-A', 'cli', 'passed', '1@h', '${T}');
INSERT INTO workflow_step_runs (run_id, step_id, ledger_step_id, mode, fast_path, outcome, tokens)
  VALUES ('run-1', 'zz-first', NULL, 'learned', 1, 'passed', 0), ('run-1', 'aa-second', NULL, 'direct', 0, 'failed', 99);
`);
  return { blob };
}

const pgRows = <R>(e: { store: PgStore }, sql: string) => e.store.pg.query<R>(sql).rows;

function refusal(fn: () => unknown): RatchetError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RatchetError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("the copy registry", () => {
  test("covers every table of the SQLite schema with its primary key; names no table SQLite lacks", () => {
    const e = sqliteEnd();
    const tables = tablesOf(e.store.sql);
    const registered = new Map(COPY_TABLES.map((t) => [t.name, t]));
    for (const name of tables) {
      expect(
        registered.has(name) || name in COPY_SKIPPED,
        `table ${name}: add it to COPY_TABLES or COPY_SKIPPED`,
      ).toBe(true);
      const t = registered.get(name);
      if (t) expect(t.key, name).toEqual(primaryKeyOf(e.store.sql, name));
    }
    for (const t of COPY_TABLES) expect(tables.has(t.name), `${t.name} is not a SQLite table`).toBe(true);
    expect(new Set(COPY_TABLES.map((t) => t.name)).size).toBe(COPY_TABLES.length);
  });

  test.runIf(pgAvailable())("covers every table of the PostgreSQL schema", () => {
    const e = pgEnd();
    const registered = new Set(COPY_TABLES.map((t) => t.name));
    for (const name of tablesOf(e.store.sql))
      expect(registered.has(name) || name in COPY_SKIPPED, `PostgreSQL table ${name}`).toBe(true);
  });
});

describe.runIf(pgAvailable())("store copy", () => {
  test("SQLite → PostgreSQL → SQLite: same rows, ids, hashes, blob and step-run order", () => {
    const a = sqliteEnd();
    const { blob } = fill(a);
    const b = pgEnd();
    const lines: string[] = [];
    const r = copyStore(a, b, { batchRows: 2, onProgress: (l) => lines.push(l) });
    expect(r.ok, JSON.stringify(r.tables)).toBe(true);
    expect(r.committed).toBe(true);
    expect(lines).toContain("copying events (3 rows)");
    expect(lines.some((l) => l.startsWith("copying threads"))).toBe(false); // empty tables are not announced
    const counts = Object.fromEntries(r.tables.map((t) => [t.table, t.rows]));
    expect(counts).toMatchObject({
      projects: 2,
      plans: 2,
      steps: 3,
      step_logs: 2,
      events: 3,
      workflow_step_runs: 2,
    });
    for (const t of r.tables) expect(t.hash, t.table).toBe(t.targetHash);
    expect(r.blobs).toMatchObject({ count: 1, targetCount: 1, bytes: BIG.length, ok: true });
    // Ids kept exactly (gaps too); the next event continues after the largest.
    expect(pgRows<{ id: number }>(b, "SELECT id FROM events ORDER BY id").map((x) => x.id)).toEqual([
      1, 2, 5,
    ]);
    const next = b.store.tx(() => b.store.appendEvent({ entityKind: "plan", entityId: "P-A", type: "x" }));
    expect(next).toBe(6);
    b.store.pg.exec("DELETE FROM events WHERE id = 6");
    // PostgreSQL's seq is SQLite's rowid order within the run, not the key order.
    expect(
      pgRows<{ step_id: string; seq: number }>(b, "SELECT step_id, seq FROM workflow_step_runs ORDER BY seq"),
    ).toEqual([
      { step_id: "zz-first", seq: 0 },
      { step_id: "aa-second", seq: 1 },
    ]);
    expect(b.store.getPlan("P-B")?.goal).toBe("Ünïcødé — 'quoted' \"goal\" 🚀");
    expect(pgRows<{ value: number }>(b, "SELECT value FROM metrics ORDER BY id").map((x) => x.value)).toEqual(
      [0.1, -12345678901.5],
    );
    expect(
      pgRows<{ n: number }>(b, `SELECT octet_length(bytes) AS n FROM blobs WHERE hash = '${blob}'`),
    ).toEqual([{ n: BIG.length }]);

    // And back into a fresh SQLite file: the same digests, the same blob file, the same order.
    const c = sqliteEnd();
    const back = copyStore(b, c);
    expect(back.ok).toBe(true);
    expect(back.tables.map((t) => t.hash)).toEqual(r.tables.map((t) => t.hash));
    expect(new BlobStore((c.blobs as { dir: string }).dir).getText(blob)).toBe(BIG);
    expect(
      c.store.db
        .prepare("SELECT step_id FROM workflow_step_runs ORDER BY rowid")
        .all()
        .map((x) => (x as { step_id: string }).step_id),
    ).toEqual(["zz-first", "aa-second"]);
    const v = verifyStores(a, c);
    expect(v.ok, JSON.stringify(v.tables.filter((t) => !t.ok))).toBe(true);
    expect(c.store.integrityCheck()).toBe("ok");
  });

  test("thread rows with BLOB columns: SQLite → SQLite byte for byte; a PostgreSQL target without the thread tables refuses naming one", () => {
    const a = sqliteEnd();
    fill(a);
    const vm = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) % 256));
    a.store.db.exec(`
INSERT INTO threads (thread_id, goal, kind, state, budget, cancel_requested, cost_usd, created_at, updated_at)
  VALUES ('th-1', 'g', 'chat', 'waiting', '{}', 1, 0.25, '${T}', '${T}');
INSERT INTO thread_checkpoints (thread_id, seq, vm, call_name, call_args, answered, updated_at)
  VALUES ('th-1', 3, x'', 'ask', '[]', 0, '${T}');
INSERT INTO thread_journal (thread_id, seq, call_name, answer) VALUES ('th-1', 2, 'b', '"2"'), ('th-1', 1, 'a', '"1"');`);
    a.store.db.prepare("INSERT INTO thread_vms (thread_id, vm) VALUES ('th-1', ?)").run(vm);
    const c = sqliteEnd();
    const r = copyStore(a, c);
    expect(r.ok).toBe(true);
    expect(r.tables.find((t) => t.table === "thread_vms")).toMatchObject({ rows: 1, ok: true });
    const got = c.store.db
      .prepare(
        "SELECT v.vm AS vm, k.vm AS empty FROM thread_vms v JOIN thread_checkpoints k USING (thread_id)",
      )
      .get() as {
      vm: Buffer;
      empty: Buffer;
    };
    expect(Buffer.compare(got.vm, vm)).toBe(0);
    expect(got.empty.length).toBe(0);
    expect(verifyStores(a, c).ok).toBe(true);
    // A changed byte is a difference.
    c.store.db
      .prepare("UPDATE thread_vms SET vm = ?")
      .run(Buffer.concat([vm.subarray(0, 299), Buffer.from([0])]));
    expect(firstMismatch(verifyStores(a, c))).toBe("thread_vms");

    const b = pgEnd();
    if (tablesOf(b.store.sql).has("threads")) {
      expect(copyStore(a, b).ok).toBe(true);
    } else {
      const e = refusal(() => copyStore(a, b));
      expect(e.details).toMatchObject({ field: "to", table: "threads" });
      expect(e.message).toContain("refusing rather than dropping");
      expect(pgRows(b, "SELECT COUNT(*) AS n FROM plans")).toEqual([{ n: 0 }]);
    }
  });

  test("a target with Ratchet data is refused naming it and its first non-empty table; nothing written", () => {
    const a = sqliteEnd();
    fill(a);
    const b = pgEnd();
    b.store.tx(() => b.store.appendEvent({ entityKind: "plan", entityId: "X", type: "stray" }));
    const e = refusal(() => copyStore(a, b));
    expect(e.code).toBe("invalid_value");
    expect(e.details).toMatchObject({ field: "to", table: "events" });
    expect(e.message).toContain(b.label);
    expect(pgRows(b, "SELECT COUNT(*) AS n FROM plans")).toEqual([{ n: 0 }]);
    expect(pgRows(b, "SELECT COUNT(*) AS n FROM blobs")).toEqual([{ n: 0 }]);
    // A blob row alone counts as data too.
    const c = pgEnd();
    c.store.tx(() =>
      c.store.sql.run("INSERT INTO blobs (hash, bytes, size, created_at) VALUES (?, ?, 1, ?)", [
        "0".repeat(64),
        Buffer.from("x"),
        T,
      ]),
    );
    expect(refusal(() => copyStore(a, c)).details).toMatchObject({ field: "to", table: "blobs" });
    // The same store on both sides.
    expect(refusal(() => copyStore(a, a)).details).toMatchObject({ field: "to" });
  });

  test("a table or column the target lacks: refused naming it when the source has data, skipped with a note when not", () => {
    const a = sqliteEnd();
    fill(a);
    const b = pgEnd();
    b.store.pg.exec("DROP TABLE workflow_step_runs");
    const e = refusal(() => copyStore(a, b));
    expect(e.details).toMatchObject({ field: "to", table: "workflow_step_runs" });
    expect(e.message).toContain("2 rows");
    expect(pgRows(b, "SELECT COUNT(*) AS n FROM plans")).toEqual([{ n: 0 }]);

    const c = pgEnd();
    c.store.pg.exec("ALTER TABLE plans DROP COLUMN headline_json");
    const col = refusal(() => copyStore(a, c));
    expect(col.details).toMatchObject({ table: "plans", column: "headline_json" });
    expect(pgRows(c, "SELECT COUNT(*) AS n FROM projects")).toEqual([{ n: 0 }]);

    // No data in them: the copy goes on and says what it left out.
    a.store.db.exec("UPDATE plans SET headline_json = NULL; DELETE FROM workflow_step_runs;");
    const ok = copyStore(a, b);
    expect(ok.ok).toBe(true);
    expect(ok.notes.join("\n")).toContain("workflow_step_runs");
    const ok2 = copyStore(a, c);
    expect(ok2.ok).toBe(true);
  });

  test("a source table nobody registered is refused when it has rows (never dropped silently)", () => {
    const a = sqliteEnd();
    fill(a);
    a.store.db.exec(
      "CREATE TABLE future_things (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO future_things VALUES (1, 'x');",
    );
    const b = pgEnd();
    expect(refusal(() => copyStore(a, b)).details).toMatchObject({ field: "from", table: "future_things" });
    a.store.db.exec("DELETE FROM future_things");
    const r = copyStore(a, b);
    expect(r.ok).toBe(true);
    expect(r.notes.join("\n")).toContain("future_things");
  });

  test("a value the target cannot hold (NUL in TEXT, text in an INTEGER column) is refused naming the table; nothing written", () => {
    const a = sqliteEnd();
    fill(a);
    a.store.db.prepare("UPDATE steps SET title = ? WHERE step_id = 'P-A.1'").run("nul\u0000inside");
    const b = pgEnd();
    const e = refusal(() => copyStore(a, b));
    expect(e.details).toMatchObject({ field: "from", table: "steps" });
    expect(pgRows(b, "SELECT COUNT(*) AS n FROM plans")).toEqual([{ n: 0 }]);
    a.store.db.prepare("UPDATE steps SET title = 'ok', tokens = 'many' WHERE step_id = 'P-A.1'").run();
    expect(refusal(() => copyStore(a, b)).details).toMatchObject({ table: "steps" });
    expect(pgRows(b, "SELECT COUNT(*) AS n FROM steps")).toEqual([{ n: 0 }]);
  });

  test("a corrupt blob in the source folder is refused naming its hash; nothing written", () => {
    const a = sqliteEnd();
    const { blob } = fill(a);
    const dir = (a.blobs as { dir: string }).dir;
    writeFileSync(join(dir, blob.slice(0, 2), blob.slice(2)), `${BIG}tampered`);
    // A stray temp file of an interrupted write is not a blob.
    mkdirSync(join(dir, "ab"), { recursive: true });
    writeFileSync(join(dir, "ab", ".tmp-1-abc"), "half");
    const b = pgEnd();
    const e = refusal(() => copyStore(a, b));
    expect(e.details).toMatchObject({ field: "from", hash: blob });
    expect(e.message).toContain(blob);
    expect(
      pgRows(b, "SELECT (SELECT COUNT(*) FROM blobs) AS blobs, (SELECT COUNT(*) FROM plans) AS plans"),
    ).toEqual([{ blobs: 0, plans: 0 }]);
  });

  test("a corrupt blob already in a target folder is found, not trusted", () => {
    const a = sqliteEnd();
    const { blob } = fill(a);
    const b = pgEnd();
    expect(copyStore(a, b).ok).toBe(true);
    const c = sqliteEnd();
    const dir = (c.blobs as { dir: string }).dir;
    mkdirSync(join(dir, blob.slice(0, 2)), { recursive: true });
    writeFileSync(join(dir, blob.slice(0, 2), blob.slice(2)), "not the bytes");
    const e = refusal(() => copyStore(b, c));
    expect(e.details).toMatchObject({ field: "to", hash: blob });
    expect(c.store.db.prepare("SELECT COUNT(*) AS n FROM plans").get()).toEqual({ n: 0 });
  });

  test("identity columns on the target: the insert overrides them and the sequence moves past the copied ids", () => {
    const a = sqliteEnd();
    fill(a);
    const b = pgEnd();
    b.store.pg.exec("ALTER TABLE events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY");
    b.store.pg.exec("ALTER TABLE metrics ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY");
    expect(columnsOf(b.store.sql, "events").find((c) => c.name === "id")?.sequence).toBe("always");
    expect(copyStore(a, b).ok).toBe(true);
    const ev = pgRows<{ id: number }>(
      b,
      `INSERT INTO events (at, entity_kind, entity_id, type, payload) VALUES ('${T}', 'plan', 'x', 't', '{}') RETURNING id`,
    );
    expect(ev).toEqual([{ id: 6 }]);
    const m = pgRows<{ id: number }>(
      b,
      `INSERT INTO metrics (name, value, created_at) VALUES ('z', 1, '${T}') RETURNING id`,
    );
    expect(m).toEqual([{ id: 3 }]);
  });

  test("a target column with a locale collation (text orders differently) still verifies: the digest orders byte-wise", () => {
    const a = sqliteEnd();
    fill(a);
    a.store.db.exec(
      `INSERT INTO plans (plan_id, goal, status, max_revisions, created_at, updated_at) VALUES ('P-a9', 'lower', 'IN_PROGRESS', 3, '${T}', '${T}')`,
    );
    const b = pgEnd();
    b.store.pg.exec('ALTER TABLE plans ALTER COLUMN plan_id TYPE TEXT COLLATE "und-x-icu"');
    const r = copyStore(a, b);
    expect(r.ok, JSON.stringify(r.tables.filter((t) => !t.ok))).toBe(true);
    // The attack bites: the target's own order is not the source's.
    expect(
      pgRows<{ plan_id: string }>(b, "SELECT plan_id FROM plans ORDER BY plan_id").map((x) => x.plan_id),
    ).toEqual(["P-A", "P-a9", "P-B"]);
    expect(verifyStores(b, a).ok).toBe(true);
  });

  test("store verify finds a tampered copy and names the table; a blob missing on one side too", () => {
    const a = sqliteEnd();
    const { blob } = fill(a);
    const b = pgEnd();
    expect(copyStore(a, b).ok).toBe(true);
    expect(verifyStores(a, b).ok).toBe(true);
    b.store.pg.exec("UPDATE plans SET goal = 'changed' WHERE plan_id = 'P-A'");
    const v = verifyStores(a, b);
    expect(v.ok).toBe(false);
    expect(firstMismatch(v)).toBe("plans");
    expect(v.tables.find((t) => t.table === "plans")).toMatchObject({ rows: 2, targetRows: 2, ok: false });
    b.store.pg.exec("UPDATE plans SET goal = 'second' WHERE plan_id = 'P-A'");
    b.store.pg.exec(`DELETE FROM blobs WHERE hash = '${blob}'`);
    expect(firstMismatch(verifyStores(a, b))).toBe("blobs");
  });
});
