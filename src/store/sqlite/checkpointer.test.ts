import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SQLITE_WAL_CHECKPOINT_BYTES } from "../../core/index.js";
import { SAFETY_NET_FACTOR } from "./checkpointer.js";
import { SqliteStore } from "./sqlite-store.js";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "ratchet-ckpt-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const PAGE = 1024;
const FRAME = PAGE + 24;
/** Today's checkpoint threshold in frames (1 KiB pages, like the store's). */
const FRAMES = SQLITE_WAL_CHECKPOINT_BYTES / PAGE;
/** Each row is ~20 overflow pages: a transaction appends ~21 frames. */
const ROW = 20_000;
const walSize = (db: string) => (existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0);

function scratch(store: SqliteStore) {
  store.db.exec("CREATE TABLE IF NOT EXISTS scratch (id INTEGER PRIMARY KEY, b BLOB)");
  const ins = store.db.prepare("INSERT INTO scratch (b) VALUES (zeroblob(?))");
  return () => store.tx(() => ins.run(ROW));
}

describe("SqliteStore checkpoint: background (resident processes)", () => {
  it("checkpoints from its worker at today's size; readers see every committed row; close stops it and removes the WAL", async () => {
    const db = join(tmp(), "ratchet.db");
    const store = SqliteStore.open(db, { create: true, checkpoint: "background" });
    const ck = store.checkpointer;
    expect(ck?.running).toBe(true);
    while (!ck?.ready) await new Promise((r) => setTimeout(r, 10));
    // The writer's own autocheckpoint is the safety net, not the threshold.
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(FRAMES * SAFETY_NET_FACTOR);
    const write = scratch(store);
    const reader = new Database(db, { readonly: true });
    const count = reader.prepare("SELECT max(id) FROM scratch").pluck();
    let maxWal = 0;
    const n = 6500; // ~136,000 frames: ~16 thresholds, ~4 safety nets
    for (let i = 1; i <= n; i++) {
      write();
      // Another connection sees each commit as soon as it returns, checkpoint or not.
      expect(count.get()).toBe(i);
      if (i % 25 === 0) maxWal = Math.max(maxWal, walSize(db));
    }
    expect(ck?.checkpoints).toBeGreaterThan(0);
    // Bounded by the safety net: the writer's checkpoint at it finds the worker's running (busy)
    // for at most the worker's one checkpoint, so over it by what that one lets through (on a
    // loaded machine, thousands of frames), never by the whole of what was written.
    expect(n * 21).toBeGreaterThan(FRAMES * SAFETY_NET_FACTOR * 4);
    expect(maxWal).toBeLessThanOrEqual(FRAMES * SAFETY_NET_FACTOR * 2 * FRAME);
    reader.close();
    store.close();
    expect(ck?.running).toBe(false);
    // The writer's close was the file's last: it checkpointed and removed the WAL, as before.
    expect(existsSync(`${db}-wal`)).toBe(false);
    const again = new Database(db, { readonly: true });
    expect(again.prepare("SELECT count(*) FROM scratch").pluck().get()).toBe(n);
    expect(again.pragma("integrity_check", { simple: true })).toBe("ok");
    again.close();
  });

  it("a killed worker: the safety net bounds the WAL, then the writer's threshold comes back, said once", async () => {
    const db = join(tmp(), "ratchet.db");
    const lines: string[] = [];
    const store = SqliteStore.open(db, { create: true, checkpoint: "background", log: (l) => lines.push(l) });
    const write = scratch(store);
    write();
    await store.checkpointer?.kill();
    // Before the event loop hears of the death, only the safety net checkpoints.
    let maxWal = 0;
    const n = 2500; // ~52,000 frames, more than the safety net's 32,768
    for (let i = 0; i < n; i++) {
      write();
      if (i % 10 === 0) maxWal = Math.max(maxWal, walSize(db));
    }
    expect(n * 21).toBeGreaterThan(FRAMES * SAFETY_NET_FACTOR * 1.4);
    expect(maxWal).toBeLessThanOrEqual((FRAMES * SAFETY_NET_FACTOR + 64) * FRAME + 32);
    // Once heard of, the writer checkpoints at today's size again, and it was said once.
    await new Promise((r) => setTimeout(r, 50));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/background WAL checkpoint stopped/);
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(FRAMES);
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    maxWal = 0;
    for (let i = 0; i < 1000; i++) {
      write();
      if (i % 10 === 0) maxWal = Math.max(maxWal, walSize(db));
    }
    expect(maxWal).toBeLessThanOrEqual((FRAMES + 64) * FRAME + 32);
    for (let i = 0; i < 50; i++) write();
    expect(lines).toHaveLength(1);
    store.close();
    expect(existsSync(`${db}-wal`)).toBe(false);
  });

  it("a writer in another process still writes while the resident store is open; each sees the other's rows", () => {
    const db = join(tmp(), "ratchet.db");
    const store = SqliteStore.open(db, { create: true, checkpoint: "background" });
    const write = scratch(store);
    for (let i = 0; i < 500; i++) write();
    const other = spawnSync(
      process.execPath,
      [
        "-e",
        `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))});
         const d = new D(process.argv[1]); d.pragma("busy_timeout = 10000");
         const ins = d.prepare("INSERT INTO scratch (b) VALUES (zeroblob(20000))");
         for (let i = 0; i < 300; i++) d.transaction(() => ins.run()).immediate();
         process.stdout.write(String(d.prepare("SELECT count(*) FROM scratch").pluck().get()));
         d.close();`,
        db,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(other.stderr).toBe("");
    expect(Number(other.stdout)).toBeGreaterThanOrEqual(800);
    for (let i = 0; i < 500; i++) write();
    expect(store.db.prepare("SELECT count(*) FROM scratch").pluck().get()).toBe(1300);
    store.close();
  });

  it("only a file gets a worker; the default keeps the writer's own checkpoint", () => {
    const plain = SqliteStore.open(join(tmp(), "ratchet.db"), { create: true });
    expect(plain.checkpointer).toBeUndefined();
    expect(plain.db.pragma("wal_autocheckpoint", { simple: true })).toBe(FRAMES);
    plain.close();
    const mem = SqliteStore.open(":memory:", { create: true, checkpoint: "background" });
    expect(mem.checkpointer).toBeUndefined();
    mem.close();
  });
});

describe("SqliteStore checkpoint: background, the process (dist/, after `npm run build`)", () => {
  const dist = resolve(dirname(fileURLToPath(import.meta.url)), "../../../dist/store/index.js");
  const run = (body: string) =>
    spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { SqliteStore } = await import(${JSON.stringify(dist)});
         const s = SqliteStore.open(process.argv[1], { create: true, checkpoint: "background" });
         s.db.exec("CREATE TABLE IF NOT EXISTS scratch (id INTEGER PRIMARY KEY, b BLOB)");
         const ins = s.db.prepare("INSERT INTO scratch (b) VALUES (zeroblob(20000))");
         for (let i = 0; i < 800; i++) s.tx(() => ins.run());
         ${body}`,
        join(tmp(), "ratchet.db"),
      ],
      { encoding: "utf8", timeout: 60_000 },
    );

  it("exits by itself after close(), and its thread is gone", () => {
    const r = run(
      `const ck = s.checkpointer; s.close();
       process.stdout.write(JSON.stringify({ running: ck.running, thread: ck.threadId }));
       setTimeout(() => { process.stdout.write(" " + ck.threadId); }, 200);`,
    );
    expect(r.status).toBe(0);
    expect(r.stderr).toBe("");
    const [first, later] = r.stdout.split(" ");
    expect(JSON.parse(first as string)).toMatchObject({ running: false });
    expect(later).toBe("-1");
  });

  it("exits by itself without close(): the worker cannot keep it alive", () => {
    const r = run(`process.stdout.write(String(s.checkpointer.running));`);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("true");
  });
});
