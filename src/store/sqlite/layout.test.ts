// Migration 13's layout (bench/ledger, issue 19): a plan's events found through the first event of
// each run of consecutive events of the plan, and step rows that keep their size through start and
// complete. What must hold: plan reads return exactly the rows a scan of `plan_id` returns, for any
// interleaving, `since` and limit; a step transition rewrites its step in its own page; a store
// written by the schema before migration 13 upgrades without losing or hiding a row.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, test } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../../test/harness/pg.js";
import { type LedgerFixture, makeLedgerFixture } from "../../testing/ledger-fixtures.js";
import { STEP_COLUMNS } from "../columns.js";
import { copyStore } from "../copy.js";
import { openCopyEnd } from "../copy-ends.js";
import type { PgStore } from "../postgres/pg-store.js";
import type { EventRow } from "../types.js";
import { MIGRATIONS } from "./migrations.js";
import { openSqlite, type SqliteDb } from "./open.js";
import { SqliteStore, STEP_RESERVE_BYTES } from "./sqlite-store.js";

function setup(): LedgerFixture {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  return fx;
}

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), "ratchet-layout-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "ratchet.db");
}

/** The reference: a plain scan of the table by `plan_id`, no index. */
function scanned(db: SqliteDb, planId: string, since = 0): EventRow[] {
  return db
    .prepare(
      "SELECT id, at, entity_kind, entity_id, plan_id, type, payload FROM events NOT INDEXED WHERE plan_id = ? AND id > ? ORDER BY id",
    )
    .all(planId, since) as EventRow[];
}

/** The b-tree (table or index) of every page written to the WAL since `from` frames. */
function walPages(db: SqliteDb, path: string, from = 0): string[] {
  const size = db.pragma("page_size", { simple: true }) as number;
  const b = readFileSync(`${path}-wal`);
  const names: string[] = [];
  const name = db.prepare("SELECT name FROM dbstat WHERE pageno = ?").pluck(true);
  for (let o = 32 + from * (24 + size); o + 24 + size <= b.length; o += 24 + size)
    names.push((name.get(b.readUInt32BE(o)) as string | undefined) ?? "?");
  return names;
}

describe("migration 13: a plan's events by runs", () => {
  it("reads exactly the scan's rows for interleaved plans, hook-written events, every since, limits across run pages", () => {
    const path = tempDb();
    const store = SqliteStore.open(path, { create: true });
    onTestFinished(() => store.close());
    const db = store.db;
    // 300 runs of plan a (alternating with b: more than one page of run starts), then long runs,
    // plan-less events, and events written by plain SQL as the prompt hook does (default 1: each
    // its own run).
    store.tx(() => {
      for (let i = 0; i < 600; i++)
        store.appendEvent({
          entityKind: "step",
          entityId: `s${i % 5}`,
          planId: i % 2 ? "b" : "a",
          type: "t",
        });
      for (let i = 0; i < 50; i++)
        store.appendEvent({ entityKind: "step", entityId: "s", planId: "a", type: "u" });
      store.appendEvent({ entityKind: "project", entityId: "x", type: "project.added" });
      for (let i = 0; i < 30; i++)
        store.appendEvent({ entityKind: "step", entityId: "s", planId: "b", type: "v" });
      const hook = db.prepare(
        "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES ('t', 'utterance', 'u', ?, 'utterance.recorded', '{}')",
      );
      hook.run("a");
      hook.run("a");
      store.appendEvent({ entityKind: "step", entityId: "s", planId: "a", type: "w" });
      hook.run("b");
    });
    const last = store.lastEventId();
    expect(last).toBe(685);
    for (const p of ["a", "b", "ghost"]) {
      const want = scanned(db, p);
      expect(store.listEvents({ planId: p, limit: 100_000 })).toEqual(want);
      for (const since of [0, 1, 2, 255, 256, 511, 512, 513, 599, 600, 601, 649, 650, 651, 680, 683, last]) {
        const after = scanned(db, p, since);
        expect(store.listEvents({ planId: p, since, limit: 100_000 })).toEqual(after);
        expect(store.listEvents({ planId: p, since, limit: 7 })).toEqual(after.slice(0, 7));
        expect(store.listEvents({ planId: p, since, entityId: "s3", limit: 100_000 })).toEqual(
          after.filter((e) => e.entity_id === "s3"),
        );
      }
      // Paging with the last id read walks the whole plan.
      const paged: EventRow[] = [];
      for (let since = 0; ; ) {
        const rows = store.listEvents({ planId: p, since, limit: 97 });
        paged.push(...rows);
        if (rows.length < 97) break;
        since = rows.at(-1)?.id ?? 0;
      }
      expect(paged).toEqual(want);
    }
    // Only run starts are indexed: 300 + 300 alternating, a's run of 50 joined its last start, b's
    // run after the plan-less event, and the hook's rows.
    const indexed = db.prepare("SELECT COUNT(*) FROM events WHERE plan_run_start = 1").pluck(true).get();
    expect(indexed).toBe(600 + 1 + 2 + 1 + 1);
    expect(
      db
        .prepare("SELECT COUNT(*) FROM events WHERE plan_id IS NULL AND plan_run_start = 1")
        .pluck(true)
        .get(),
    ).toBe(0);
  });

  it("two connections writing two plans in turn: each decides its run start from the other's committed event", () => {
    const path = tempDb();
    const one = SqliteStore.open(path, { create: true });
    const two = SqliteStore.open(path);
    onTestFinished(() => {
      one.close();
      two.close();
    });
    // Each writer keeps its statements cached across transactions: the event before its own is the
    // other connection's, committed in between, never a stale one.
    const turns = [one, one, two, one, two, two, two, one, two, one, one];
    for (const [i, s] of turns.entries())
      s.tx(() =>
        s.appendEvent({ entityKind: "step", entityId: `e${i}`, planId: s === one ? "p1" : "p2", type: "t" }),
      );
    for (const s of [one, two])
      for (const p of ["p1", "p2"])
        for (const since of [0, 2, 5, 8])
          expect(s.listEvents({ planId: p, since })).toEqual(scanned(s.db, p, since));
    expect(one.db.prepare("SELECT plan_run_start FROM events ORDER BY id").pluck(true).all()).toEqual([
      1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0,
    ]);
  });

  it("a plan worked without interleaving is one index entry, and a transition writes no index page", () => {
    const fx = setup();
    const p = fx.publish("one run", ["THINKING", "THINKING", "THINKING"]);
    for (const id of p.step_ids) {
      fx.ledger.start({ step_id: id });
      fx.ledger.complete({ step_id: id, summary: "done" });
    }
    const db = fx.store.db;
    expect(
      db
        .prepare("SELECT COUNT(*) FROM events WHERE plan_id = ? AND plan_run_start = 1")
        .pluck(true)
        .get(p.plan_id),
    ).toBe(1);
    expect(fx.events(p.plan_id)).toEqual(scanned(db, p.plan_id));
    expect(fx.events(p.plan_id).map((e) => e.type)).toContain("plan.completed");
  });
});

describe("migration 13: step rows keep their size", () => {
  it("start and complete rewrite each step in its own page, no rebalance, no index page per event", () => {
    const fx = setup();
    const path = join(fx.dir, "ledger.db");
    const db = fx.store.db;
    const plans = Array.from({ length: 3 }, (_, i) =>
      fx.publish(
        `plan ${i}`,
        Array.from({ length: 20 }, () => "THINKING" as const),
      ),
    );
    db.pragma("wal_checkpoint(TRUNCATE)");
    const ids = plans.flatMap((p) => p.step_ids);
    for (const id of ids) fx.ledger.start({ step_id: id });
    const started = walPages(db, path);
    // One frame of the steps table per transaction: the row was rewritten where it was.
    expect(started.filter((n) => n === "steps")).toHaveLength(ids.length);
    // One run per plan: its first start event went to the index, the rest followed it.
    expect(started.filter((n) => n === "events_plan_runs").length).toBeLessThanOrEqual(plans.length);
    for (const id of ids) {
      const s = fx.step(id);
      expect(s).toMatchObject({ status: "IN_PROGRESS", lease_holder: "test-holder@test-host" });
      expect(
        db.prepare("SELECT length(reserve) FROM steps WHERE step_id = ?").pluck(true).get(id),
      ).toBeLessThan(STEP_RESERVE_BYTES);
    }
    const before = started.length;
    for (const id of ids) fx.ledger.complete({ step_id: id, summary: "done" });
    const completed = walPages(db, path, before);
    // Each complete rewrites its step once more; the plan-closing one also writes its review step
    // (a row of the same table, in a page of its own, twice in one transaction: one frame).
    expect(completed.filter((n) => n === "steps").length).toBeLessThanOrEqual(ids.length + plans.length);
    for (const id of ids) {
      expect(fx.step(id)).toMatchObject({ status: "COMPLETED", summary: "done", lease_holder: null });
      // A finished step gives its reserve back.
      expect(db.prepare("SELECT reserve FROM steps WHERE step_id = ?").pluck(true).get(id)).toBeNull();
    }
    expect(fx.store.integrityCheck()).toBe("ok");
  });

  it("a step that grows past its reserve, heartbeats and retries keep every value and never show the reserve", () => {
    const fx = setup();
    const p = fx.publish("big", ["THINKING", "THINKING"]);
    const [a, b] = p.step_ids as [string, string];
    const long = "x".repeat(3000);
    fx.ledger.start({ step_id: a, agent_input: long });
    expect(fx.step(a).agent_input).toBe(long);
    expect(
      fx.store.db.prepare("SELECT length(reserve) FROM steps WHERE step_id = ?").pluck(true).get(a),
    ).toBe(0);
    fx.clock.advance(1000);
    fx.ledger.heartbeat({ step_id: a });
    fx.ledger.complete({ step_id: a, summary: long, agent_output: long });
    expect(fx.step(a)).toMatchObject({
      summary: long,
      agent_output: long,
      agent_input: long,
      status: "COMPLETED",
    });
    fx.ledger.start({ step_id: b });
    fx.ledger.fail({ step_id: b, reason: "broke" });
    for (const row of fx.store.stepsOfPlan(p.plan_id)) expect(Object.keys(row)).toEqual([...STEP_COLUMNS]);
    expect(fx.store.integrityCheck()).toBe("ok");
  });
});

describe("migration 13 on a store of the schema before it", () => {
  it("keeps every row, reads every plan's events as before, reserves its open steps, then writes the new way", () => {
    const path = tempDb();
    const old = openSqlite(path, { create: true, migrations: MIGRATIONS.filter((m) => m.id <= 12) });
    const T = "2026-12-01T10:00:00.000Z";
    const ins = (sql: string, ...rows: unknown[][]) => {
      const st = old.prepare(sql);
      for (const r of rows) st.run(...r);
    };
    ins(
      "INSERT INTO plans (plan_id, goal, status, max_revisions, created_at, updated_at) VALUES (?, ?, ?, 3, ?, ?)",
      ["p1", "one", "IN_PROGRESS", T, T],
      ["p2", "two", "IN_PROGRESS", T, T],
    );
    const steps: unknown[][] = [];
    for (const p of ["p1", "p2"])
      for (let i = 1; i <= 4; i++)
        steps.push([
          `${p}-${i}`,
          p,
          i,
          "THINKING",
          i === 1 ? "COMPLETED" : i === 2 ? "IN_PROGRESS" : "PENDING",
          T,
          T,
        ]);
    ins(
      "INSERT INTO steps (step_id, plan_id, seq, role, depth, title, type, status, created_at, updated_at) VALUES (?, ?, ?, 'regular', 0, 'a step', ?, ?, ?, ?)",
      ...steps,
    );
    const events: unknown[][] = [];
    for (const [i, p] of ["p1", "p1", "p2", "p1", null, "p2", "p2", "p1"].entries())
      events.push([T, "step", `e${i}`, p, `t${i}`, "{}"]);
    ins(
      "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES (?, ?, ?, ?, ?, ?)",
      ...events,
    );
    const byPlan = (db: SqliteDb, p: string) =>
      db.prepare("SELECT * FROM events WHERE plan_id = ? ORDER BY id").all(p) as EventRow[];
    const before = { p1: byPlan(old, "p1"), p2: byPlan(old, "p2") };
    const stepsBefore = old.prepare(`SELECT ${STEP_COLUMNS.join(", ")} FROM steps ORDER BY rowid`).all();
    old.close();

    const store = SqliteStore.open(path);
    onTestFinished(() => store.close());
    const db = store.db;
    expect(db.prepare("SELECT MAX(id) FROM schema_migrations").pluck(true).get()).toBe(13);
    expect(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'")
        .pluck(true)
        .all(),
    ).toEqual(["events_plan_runs"]);
    expect(store.listEvents({ planId: "p1" })).toEqual(before.p1);
    expect(store.listEvents({ planId: "p2" })).toEqual(before.p2);
    expect(store.listEvents({ planId: "p2", since: 3 })).toEqual(before.p2.filter((e) => e.id > 3));
    expect(store.listEvents({}).length).toBe(8);
    expect(db.prepare(`SELECT ${STEP_COLUMNS.join(", ")} FROM steps ORDER BY rowid`).all()).toEqual(
      stepsBefore,
    );
    const reserves = db.prepare("SELECT status, length(reserve) AS n FROM steps ORDER BY rowid").all();
    expect(reserves).toContainEqual({ status: "PENDING", n: 128 });
    expect(reserves).toContainEqual({ status: "IN_PROGRESS", n: 128 });
    expect(reserves).toContainEqual({ status: "COMPLETED", n: null });

    // The new writes join the old rows: p1's next events continue its last run.
    store.tx(() => {
      store.updateStep("p1-3", { status: "IN_PROGRESS", started_at: T });
      store.appendEvent({ entityKind: "step", entityId: "p1-3", planId: "p1", type: "step.in_progress" });
      store.appendEvent({ entityKind: "step", entityId: "p1-3", planId: "p1", type: "step.completed" });
      store.appendEvent({ entityKind: "step", entityId: "p2-3", planId: "p2", type: "step.in_progress" });
    });
    expect(store.listEvents({ planId: "p1" }).map((e) => e.type)).toEqual([
      ...before.p1.map((e) => e.type),
      "step.in_progress",
      "step.completed",
    ]);
    expect(store.listEvents({ planId: "p2" }).map((e) => e.id)).toEqual([...before.p2.map((e) => e.id), 11]);
    expect(store.getStep("p1-3")).toMatchObject({ status: "IN_PROGRESS", started_at: T });
    expect(store.integrityCheck()).toBe("ok");
  });
});

describe.runIf(pgAvailable())("migration 13 and store copy (PostgreSQL migration 7)", () => {
  let cluster: PgCluster | undefined;
  beforeAll(async () => {
    cluster = await startPgCluster();
  }, 120_000);
  afterAll(() => cluster?.stop());

  test("SQLite → PostgreSQL (which appends events of its own) → SQLite: every plan reads the scan's events, steps keep their reserve", () => {
    const aPath = tempDb();
    const a = openCopyEnd(aPath, "to");
    const sa = a.store as SqliteStore;
    const write = (s: { tx<T>(f: () => T): T; appendEvent: SqliteStore["appendEvent"] }, plans: string[]) =>
      s.tx(() => {
        for (const [i, p] of plans.entries())
          s.appendEvent({ entityKind: "step", entityId: `${p}-${i}`, planId: p, type: "t" });
      });
    write(sa, ["p1", "p1", "p2", "p1", "p2", "p2", "p2", "p1"]);
    sa.tx(() => {
      sa.insertPlan({
        plan_id: "p1",
        goal: "g",
        kind: "plan",
        project: null,
        project_source: null,
        status: "IN_PROGRESS",
        revision_count: 0,
        max_revisions: 3,
        source_cwd: null,
        created_at: "t",
        updated_at: "t",
        finished_at: null,
      });
      sa.insertStep({
        step_id: "p1-1",
        plan_id: "p1",
        parent_step_id: null,
        seq: 1,
        role: "regular",
        depth: 0,
        title: "s",
        description: null,
        type: "THINKING",
        status: "PENDING",
        summary: null,
        agent_input: null,
        agent_output: null,
        failure_reason: null,
        exit_code: null,
        tokens: 0,
        duration_ms: null,
        lease_holder: null,
        lease_expires_at: null,
        heartbeat_at: null,
        started_at: null,
        finished_at: null,
        created_at: "t",
        updated_at: "t",
      });
    });
    const url = cluster?.createDatabase() as string;
    const b = openCopyEnd(url, "to");
    expect(copyStore(a, b).ok).toBe(true);
    const pg = b.store as PgStore;
    write(pg, ["p2", "p1", "p1", "p2"]);
    expect(pg.listEvents({ planId: "p1" }).map((e) => e.id)).toEqual([1, 2, 4, 8, 10, 11]);
    const cPath = tempDb();
    const c = openCopyEnd(cPath, "to");
    const r = copyStore(b, c);
    expect(r.ok, JSON.stringify(r.tables)).toBe(true);
    const sc = c.store as SqliteStore;
    write(sc, ["p1", "p2", "p2"]);
    for (const p of ["p1", "p2"])
      for (const since of [0, 3, 8, 9, 11, 12])
        expect(sc.listEvents({ planId: p, since })).toEqual(scanned(sc.db, p, since));
    expect(sc.listEvents({ planId: "p1" }).map((e) => e.id)).toEqual([1, 2, 4, 8, 10, 11, 13]);
    expect(sc.db.prepare("SELECT length(reserve) FROM steps WHERE step_id = 'p1-1'").pluck(true).get()).toBe(
      STEP_RESERVE_BYTES,
    );
    expect(Object.keys(pg.getStep("p1-1") ?? {})).toEqual([...STEP_COLUMNS]);
    for (const e of [a, b, c]) e.store.close();
  });
});
