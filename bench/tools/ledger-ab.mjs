// Before/after of the in-process ledger (bench/ledger (a)) in ONE process, so the load of a shared
// machine hits both alike: node bench/tools/ledger-ab.mjs <distA> <distB> [lifecycles] [rounds].
// <distA>, <distB>: two `tsc -p tsconfig.build.json` outputs inside the worktree (they resolve
// node_modules from there), e.g. a copy of dist/ made before a change, and dist/. Prints lifecycles/s
// by wall and by CPU time (user + system) of A, B and the bare-SQL baseline 1, interleaved in rounds.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [distA, distB] = process.argv.slice(2, 4);
const N = Number(process.argv[4] ?? 4000);
const R = Number(process.argv[5] ?? 10);
async function setup(dist) {
  const { Ledger } = await import(join(dist, "ledger", "index.js"));
  const { BlobStore, SqliteStore, initWorkspace } = await import(join(dist, "store", "index.js"));
  const { workspace } = initWorkspace(mkdtempSync(join(tmpdir(), "lp-")));
  const store = SqliteStore.open(workspace.dbPath, { create: true });
  const ledger = new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) });
  const ids = [];
  for (let i = 0; i < N / 20; i++) {
    const p = ledger.publish({
      goal: `bench plan ${i}`,
      steps: Array.from({ length: 20 }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
    });
    ids.push(...p.step_ids.slice(0, 20));
  }
  let k = 0;
  return (n) => {
    for (let i = 0; i < n; i++) {
      const id = ids[k++];
      ledger.start({ step_id: id });
      ledger.complete({ step_id: id, summary: "done" });
    }
  };
}
const a = await setup(distA);
const b = await setup(distB);
const { openSqlite } = await import(join(distA, "store", "index.js"));
const bdb = openSqlite(join(mkdtempSync(join(tmpdir(), "lp-")), "base.db"), { create: true, migrations: [] });
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
let bk = 0;
const bare = (n) => {
  for (let i = 0; i < n; i++) {
    const id = bk++;
    move.immediate(id, "IN_PROGRESS");
    move.immediate(id, "COMPLETED");
  }
};
const tot = { A: [0, 0], B: [0, 0], bare: [0, 0] };
const per = N / R;
for (let r = 0; r < R; r++) {
  for (const [name, f] of [
    ["A", a],
    ["B", b],
    ["bare", bare],
  ]) {
    const c = process.cpuUsage();
    const t = performance.now();
    f(per);
    const w = performance.now() - t;
    const cu = process.cpuUsage(c);
    tot[name][0] += w;
    tot[name][1] += (cu.user + cu.system) / 1000;
  }
}
const rate = (ms) => N / (ms / 1000);
const out = {};
for (const k of ["A", "B", "bare"])
  out[k] = { wall: Math.round(rate(tot[k][0])), cpu: Math.round(rate(tot[k][1])) };
out.ratioA = { wall: +(out.A.wall / out.bare.wall).toFixed(3), cpu: +(out.A.cpu / out.bare.cpu).toFixed(3) };
out.ratioB = { wall: +(out.B.wall / out.bare.wall).toFixed(3), cpu: +(out.B.cpu / out.bare.cpu).toFixed(3) };
console.log(JSON.stringify(out));
