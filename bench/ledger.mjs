// bench/ledger — the plan ledger's write path.
//  (a) in-process step lifecycles (start + complete, each one BEGIN IMMEDIATE transaction with its
//      event and the roll-up check) per second on WAL; baseline: the same two transactions written
//      as bare SQL (update a row + insert an event) in the same run.
//  (b) median whole-process time of one CLI write divided by a bare `node -e 0`, interleaved.
//  (c) per-op cost of `ratchet step apply` with 10,000 ops divided by one CLI process per op.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, fmt, median, ROOT, report, tempDir, timeProcess } from "./lib.mjs";

const { Ledger } = await import(join(ROOT, "dist", "ledger", "index.js"));
const { BlobStore, SqliteStore, initWorkspace, openSqlite } = await import(
  join(ROOT, "dist", "store", "index.js")
);

const quick = process.env.BENCH_QUICK === "1";
const LIFECYCLES = quick ? 2000 : 20000;
const STEPS_PER_PLAN = 20;
const CLI_RUNS = quick ? 7 : 25;
const APPLY_OPS = 10000;

function ledgerIn(dir) {
  const { workspace } = initWorkspace(dir);
  const store = SqliteStore.open(workspace.dbPath, { create: true });
  return { ws: workspace, store, ledger: new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) }) };
}

// (a) in-process lifecycles
const a = ledgerIn(tempDir("a"));
const plans = [];
for (let i = 0; i < LIFECYCLES / STEPS_PER_PLAN; i++) {
  const p = a.ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: STEPS_PER_PLAN }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  plans.push(p.step_ids.slice(0, STEPS_PER_PLAN));
}
let t = performance.now();
for (const ids of plans) {
  for (const id of ids) {
    a.ledger.start({ step_id: id });
    a.ledger.complete({ step_id: id, summary: "done" });
  }
}
const ledgerMs = performance.now() - t;
const lifecyclesPerSec = LIFECYCLES / (ledgerMs / 1000);

// Baseline: the bare SQL of the same two transactions.
const bdb = openSqlite(join(tempDir("a0"), "base.db"), { create: true, migrations: [] });
bdb.exec(
  "CREATE TABLE s (id INTEGER PRIMARY KEY, status TEXT, updated TEXT); CREATE TABLE e (id INTEGER PRIMARY KEY, at TEXT, payload TEXT)",
);
const ins = bdb.prepare("INSERT INTO s (id, status, updated) VALUES (?, 'PENDING', ?)");
for (let i = 0; i < LIFECYCLES; i++) ins.run(i, "");
const up = bdb.prepare("UPDATE s SET status = ?, updated = ? WHERE id = ?");
const ev = bdb.prepare("INSERT INTO e (at, payload) VALUES (?, ?)");
const move = bdb.transaction((id, to) => {
  up.run(to, new Date().toISOString(), id);
  ev.run(new Date().toISOString(), JSON.stringify({ to }));
});
t = performance.now();
for (let i = 0; i < LIFECYCLES; i++) {
  move.immediate(i, "IN_PROGRESS");
  move.immediate(i, "COMPLETED");
}
const bareMs = performance.now() - t;
const barePerSec = LIFECYCLES / (bareMs / 1000);

// (b) one CLI write vs node -e 0, interleaved so load affects both alike.
const b = ledgerIn(tempDir("b"));
const bp = b.ledger.publish({
  goal: "cli bench",
  steps: Array.from({ length: CLI_RUNS * 2 }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
});
b.store.close();
const bDir = b.ws.root;
const inputs = bp.step_ids.slice(0, CLI_RUNS).map((id, i) => {
  const f = join(bDir, `start-${i}.json`);
  writeFileSync(f, JSON.stringify({ step_id: id }));
  return f;
});
const nodeTimes = [];
const cliTimes = [];
timeProcess(["-e", "0"]);
timeProcess([BIN, "--version"]);
for (let i = 0; i < CLI_RUNS; i++) {
  nodeTimes.push(timeProcess(["-e", "0"]));
  cliTimes.push(timeProcess([BIN, "step", "start", inputs[i]], { cwd: bDir }));
}
const nodeMedian = median(nodeTimes);
const cliMedian = median(cliTimes);

// (c) step apply with 10,000 ops (5,000 start + complete pairs) in one process.
const c = ledgerIn(tempDir("c"));
const lines = [];
for (let i = 0; i < APPLY_OPS / 2 / STEPS_PER_PLAN; i++) {
  const p = c.ledger.publish({
    goal: `apply ${i}`,
    steps: Array.from({ length: STEPS_PER_PLAN }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  for (const id of p.step_ids.slice(0, STEPS_PER_PLAN)) {
    lines.push(JSON.stringify({ op: "start-step", step_id: id }));
    lines.push(JSON.stringify({ op: "complete-step", step_id: id }));
  }
}
c.store.close();
const opsFile = join(c.ws.root, "ops.jsonl");
writeFileSync(opsFile, `${lines.join("\n")}\n`);
const applyMs = timeProcess([BIN, "step", "apply", opsFile], {
  cwd: c.ws.root,
  maxBuffer: 256 * 1024 * 1024,
});
const applyPerOp = applyMs / lines.length;

report("ledger", {
  "(a) lifecycles/s (start+complete, in-process)": lifecyclesPerSec,
  "(a) baseline bare-SQL lifecycles/s": barePerSec,
  "(a) ledger / bare SQL throughput": lifecyclesPerSec / barePerSec,
  "(a) target ≥ 5000/s": lifecyclesPerSec >= 5000 ? "met" : "MISSED",
  "(b) node -e 0 median ms": nodeMedian,
  "(b) ratchet step start median ms": cliMedian,
  "(b) CLI write / node -e 0": cliMedian / nodeMedian,
  "(b) target ≤ 1.6": cliMedian / nodeMedian <= 1.6 ? "met" : "MISSED",
  "(c) step apply ops": lines.length,
  "(c) step apply total ms": applyMs,
  "(c) step apply ms/op": applyPerOp,
  "(c) apply per-op / CLI per-op": applyPerOp / cliMedian,
  "(c) target ≤ 0.01": applyPerOp / cliMedian <= 0.01 ? "met" : "MISSED",
});
console.log(
  `\nsamples: ${CLI_RUNS} CLI runs, ${LIFECYCLES} lifecycles; ratio (b) ${fmt(cliMedian / nodeMedian)}`,
);
