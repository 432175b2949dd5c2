// Where a ledger transaction's time goes, statement by statement, beside baseline 1 (bench/ledger
// (a)): node bench/tools/ledger-statements.mjs [dist] [lifecycles]. Every better-sqlite3 statement
// call (BEGIN IMMEDIATE and COMMIT included) is timed by its SQL text, for the ledger's lifecycles
// and baseline 1's bare transactions run in alternating halves in one process; the time outside
// statements is the JavaScript around them. COMMIT is also shown as a distribution: its median is
// the commit itself, its mean carries the checkpoints (a few commits in a thousand copy the WAL
// into the database and sync both files).
import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const dist = resolve(process.argv[2] ?? "dist");
const N = Number(process.argv[3] ?? 10000);
const { Ledger } = await import(join(dist, "ledger", "index.js"));
const { BlobStore, SqliteStore, initWorkspace, openSqlite } = await import(join(dist, "store", "index.js"));
const Database = createRequire(join(dist, "store", "index.js"))("better-sqlite3");

const acc = new Map();
const commits = { ledger: [], bare: [] };
let on = false;
const proto = Object.getPrototypeOf(new Database(":memory:").prepare("SELECT 1"));
for (const m of ["run", "get", "all"]) {
  const orig = proto[m];
  proto[m] = function (...args) {
    if (!on) return orig.apply(this, args);
    const t = performance.now();
    const r = orig.apply(this, args);
    const d = performance.now() - t;
    const who = this.database.name.endsWith("base.db") ? "bare" : "ledger";
    const k = `${who.padEnd(6)} ${this.source.slice(0, 80)}`;
    const e = acc.get(k) ?? [0, 0];
    e[0] += d;
    e[1]++;
    acc.set(k, e);
    if (this.source === "COMMIT") commits[who].push(d);
    return r;
  };
}

const { workspace } = initWorkspace(mkdtempSync(join(tmpdir(), "ls-")));
const store = SqliteStore.open(workspace.dbPath, { create: true });
const ledger = new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) });
const plans = [];
for (let i = 0; i < N / 20; i++) {
  const p = ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: 20 }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  plans.push(p.step_ids.slice(0, 20));
}
const bdb = openSqlite(join(mkdtempSync(join(tmpdir(), "ls-")), "base.db"), { create: true, migrations: [] });
bdb.exec(
  "CREATE TABLE s (id INTEGER PRIMARY KEY, status TEXT, updated TEXT); CREATE TABLE e (id INTEGER PRIMARY KEY, at TEXT, payload TEXT)",
);
const ins = bdb.prepare("INSERT INTO s (id, status, updated) VALUES (?, 'PENDING', ?)");
for (let i = 0; i < N; i++) ins.run(i, "");
const up = bdb.prepare("UPDATE s SET status = ?, updated = ? WHERE id = ?");
const ev = bdb.prepare("INSERT INTO e (at, payload) VALUES (?, ?)");
const move = bdb.transaction((id, to) => {
  up.run(to, new Date().toISOString(), id);
  ev.run(new Date().toISOString(), JSON.stringify({ to }));
});

on = true;
const total = { ledger: 0, bare: 0 };
const R = 10;
const per = plans.length / R;
for (let r = 0; r < R; r++) {
  let t = performance.now();
  for (let k = r * per; k < (r + 1) * per; k++)
    for (const id of plans[k]) {
      ledger.start({ step_id: id });
      ledger.complete({ step_id: id, summary: "done" });
    }
  total.ledger += performance.now() - t;
  t = performance.now();
  for (let i = (r * N) / R; i < ((r + 1) * N) / R; i++) {
    move.immediate(i, "IN_PROGRESS");
    move.immediate(i, "COMPLETED");
  }
  total.bare += performance.now() - t;
}
on = false;

const tx = 2 * N;
const us = (ms) => ((ms * 1000) / tx).toFixed(2).padStart(7);
for (const who of ["ledger", "bare"]) {
  let inStatements = 0;
  for (const [k, [d]] of acc) if (k.startsWith(who)) inStatements += d;
  console.log(
    `${who}: ${us(total[who])} µs per transaction, ${us(inStatements)} in statements, ${us(total[who] - inStatements)} outside (JavaScript and the timing itself)`,
  );
}
console.log("\nµs per transaction | µs per call | calls | statement");
for (const [k, [d, n]] of [...acc].sort((a, b) => b[1][0] - a[1][0]).slice(0, 24))
  console.log(`${us(d)} | ${((d * 1000) / n).toFixed(2).padStart(8)} | ${String(n).padStart(6)} | ${k}`);
console.log("\nCOMMIT, µs: median | p90 | mean | share of commit time in the slowest 0.5% (checkpoints)");
for (const who of ["ledger", "bare"]) {
  const a = commits[who].slice().sort((x, y) => x - y);
  const sum = a.reduce((s, x) => s + x, 0);
  const top = a.slice(Math.floor(a.length * 0.995)).reduce((s, x) => s + x, 0);
  const at = (q) => (a[Math.floor(a.length * q)] * 1000).toFixed(2);
  console.log(
    `${who.padEnd(6)} ${at(0.5)} | ${at(0.9)} | ${((sum / a.length) * 1000).toFixed(2)} | ${((100 * top) / sum).toFixed(0)} %`,
  );
}
