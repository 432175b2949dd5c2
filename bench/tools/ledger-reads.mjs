// The reads a plan's events take, before/after a layout change, in ONE process:
// node bench/tools/ledger-reads.mjs <distA> <distB> [plans]. Each build gets a store of [plans]
// plans of 20 steps worked through (start + complete each, a plan at a time), and two plans worked
// side by side (their events alternate: one run per event). Timed, interleaved A/B in 5 rounds,
// CPU time per call (µs): a worked plan's events (`events --plan`, the dashboard's plan view), the
// same with since = its last id but 5 (a live tail), an interleaved plan's events, the run
// store's cancel check on a plan (it reads the plan's run events).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [distA, distB] = process.argv.slice(2, 4);
const PLANS = Number(process.argv[4] ?? 1000);
const steps = (n) => Array.from({ length: n }, (_, j) => ({ title: `s${j}`, type: "THINKING" }));

async function setup(dist) {
  const { Ledger } = await import(join(dist, "ledger", "index.js"));
  const { BlobStore, SqliteStore, initWorkspace, runStoreOf } = await import(join(dist, "store", "index.js"));
  const { workspace } = initWorkspace(mkdtempSync(join(tmpdir(), "lr-")));
  const store = SqliteStore.open(workspace.dbPath, { create: true });
  const ledger = new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) });
  let worked;
  for (let i = 0; i < PLANS; i++) {
    const p = ledger.publish({ goal: `plan ${i}`, steps: steps(20) });
    for (const id of p.step_ids) {
      ledger.start({ step_id: id });
      ledger.complete({ step_id: id, summary: "done" });
    }
    if (i === Math.floor(PLANS / 2)) worked = p.plan_id;
  }
  const x = ledger.publish({ goal: "side by side x", steps: steps(40) });
  const y = ledger.publish({ goal: "side by side y", steps: steps(40) });
  for (let j = 0; j < 40; j++)
    for (const p of [x, y]) {
      ledger.start({ step_id: p.step_ids[j] });
      ledger.complete({ step_id: p.step_ids[j], summary: "done" });
    }
  for (let i = 0; i < PLANS / 10; i++) ledger.publish({ goal: `after ${i}`, steps: steps(2) });
  const last = store.listEvents({ planId: worked, limit: 100_000 }).at(-1).id;
  const runs = runStoreOf(store);
  return {
    n: store.listEvents({ planId: worked, limit: 100_000 }).length,
    plan: () => store.listEvents({ planId: worked, limit: 1000 }),
    tail: () => store.listEvents({ planId: worked, since: last - 5, limit: 1000 }),
    interleaved: () => store.listEvents({ planId: x.plan_id, limit: 1000 }),
    cancel: () => runs.cancelRequested({ run_id: "r", plan_id: worked }),
  };
}

const a = await setup(distA);
const b = await setup(distB);
const time = (f, n) => {
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const u = process.cpuUsage(c);
  return (u.user + u.system) / n;
};
const out = {};
for (const k of ["plan", "tail", "interleaved", "cancel"]) {
  const t = { A: [], B: [] };
  for (let r = 0; r < 5; r++) {
    t.A.push(time(a[k], 300));
    t.B.push(time(b[k], 300));
  }
  const med = (xs) => xs.sort((p, q) => p - q)[2];
  out[k] = { A_us: +med(t.A).toFixed(1), B_us: +med(t.B).toFixed(1) };
}
console.log(JSON.stringify({ events_per_plan: [a.n, b.n], ...out }));
