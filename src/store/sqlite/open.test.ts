import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SQLITE_PAGE_SIZE } from "../../core/index.js";
import { MIGRATIONS } from "./migrations.js";
import { openSqlite } from "./open.js";
import { SqliteStore } from "./sqlite-store.js";

const dbPath = () => join(mkdtempSync(join(tmpdir(), "ratchet-open-")), "ratchet.db");

describe("openSqlite", () => {
  it("creates a new store in WAL mode with the small page size and every migration", () => {
    const db = openSqlite(dbPath(), { create: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("page_size", { simple: true })).toBe(SQLITE_PAGE_SIZE);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBeGreaterThanOrEqual(1000);
    const ids = (db.prepare("SELECT id FROM schema_migrations ORDER BY id").all() as { id: number }[]).map(
      (r) => r.id,
    );
    expect(ids).toEqual(MIGRATIONS.map((m) => m.id));
    db.close();
  });

  it("keeps the page size of an existing store", () => {
    // A store created with SQLite's default page size, before stores were made with smaller pages.
    const p2 = dbPath();
    const raw = new Database(p2);
    raw.pragma("page_size = 4096");
    raw.exec("CREATE TABLE t (x)");
    raw.close();
    const db = openSqlite(p2, { create: true, migrations: [] });
    expect(db.pragma("page_size", { simple: true })).toBe(4096);
    db.close();
  });

  it("migration 6 drops plans_created: plan lists still use an index, with no sort step", () => {
    const path = dbPath();
    const before = openSqlite(path, { create: true, migrations: MIGRATIONS.filter((m) => m.id < 6) });
    expect(before.prepare("SELECT name FROM sqlite_master WHERE name = 'plans_created'").get()).toBeDefined();
    before.close();
    SqliteStore.open(path).close();
    const db = openSqlite(path);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'plans_created'").get()).toBeUndefined();
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT * FROM plans ORDER BY created_at DESC, plan_id DESC LIMIT 10")
      .all() as { detail: string }[];
    expect(plan.map((r) => r.detail).join("; ")).toMatch(/plans_created_id/);
    expect(plan.map((r) => r.detail).join("; ")).not.toMatch(/TEMP B-TREE/);
  });

  it("migration 9 moves each saved thread VM to thread_vms, byte for byte", () => {
    const path = dbPath();
    const before = openSqlite(path, { create: true, migrations: MIGRATIONS.filter((m) => m.id < 9) });
    before
      .prepare(
        "INSERT INTO threads (thread_id, goal, kind, state, budget, created_at, updated_at) VALUES ('t1', 'g', 'test', 'waiting', '{}', 'x', 'x')",
      )
      .run();
    const vm = Buffer.from([1, 2, 3, 250, 0, 7]);
    before
      .prepare(
        "INSERT INTO thread_checkpoints (thread_id, seq, vm, call_name, call_args, updated_at) VALUES ('t1', 4, ?, '__llm_complete__', '{}', 'x')",
      )
      .run(vm);
    before.close();
    const db = openSqlite(path);
    const row = db.prepare("SELECT vm FROM thread_vms WHERE thread_id = 't1'").get() as { vm: Buffer };
    expect(Buffer.compare(row.vm, vm)).toBe(0);
    const cp = db.prepare("SELECT length(vm) AS n, seq FROM thread_checkpoints WHERE thread_id = 't1'").get();
    expect(cp).toEqual({ n: 0, seq: 4 });
    db.close();
  });

  it("migration 3 keeps every event and its id, and new ids continue after the highest", () => {
    const path = dbPath();
    const before = openSqlite(path, { create: true, migrations: MIGRATIONS.filter((m) => m.id < 3) });
    const ins = before.prepare(
      "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES ('t', 'plan', 'p', 'p', 'x', '{}')",
    );
    for (let i = 0; i < 5; i++) ins.run();
    before.prepare("DELETE FROM events WHERE id < 3").run();
    expect(before.prepare("SELECT name FROM sqlite_master WHERE name = 'steps_lease'").get()).toBeDefined();
    before.close();

    const store = SqliteStore.open(path);
    const db = openSqlite(path);
    expect(
      (db.prepare("SELECT id FROM events ORDER BY id").all() as { id: number }[]).map((r) => r.id),
    ).toEqual([3, 4, 5]);
    expect(db.prepare("SELECT sql FROM sqlite_master WHERE name = 'events'").get()).not.toMatchObject({
      sql: expect.stringContaining("AUTOINCREMENT"),
    });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'steps_lease'").get()).toBeUndefined();
    // The plan index of migration 3 became migration 13's index of run starts.
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'events_plan'").get()).toBeUndefined();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'events_plan_runs'").get()).toBeDefined();
    const id = store.tx(() =>
      store.appendEvent({ entityKind: "plan", entityId: "p", planId: "p", type: "y", payload: {} }),
    );
    expect(id).toBe(6);
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
    store.close();
  });
});
