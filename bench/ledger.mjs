// bench/ledger — the plan ledger's write path.
//  (a) in-process step lifecycles (start + complete, each one BEGIN IMMEDIATE transaction with its
//      event and the roll-up check) per second on WAL; baselines in the same run, interleaved: the
//      two transactions as bare SQL on minimal tables (update a row + insert an event), and bare
//      SQL writing the same rows as the ledger on the same schema; and the ledger as the resident
//      processes open it (checkpoint "background": the WAL checkpoint on a worker thread).
//      BENCH_ONLY=a runs (a) alone.
//  (b) median whole-process time of one CLI write divided by a bare `node -e 0`, interleaved.
//  (c) per-op cost of `ratchet step apply` with 10,000 ops divided by one CLI process per op.
import { statSync, writeFileSync } from "node:fs";
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
// Plans kept aside for counting the pages each variant writes per transaction (after the rounds).
const PAGE_PLANS = 10;

function ledgerIn(dir, checkpoint) {
  const { workspace } = initWorkspace(dir);
  const store = SqliteStore.open(workspace.dbPath, { create: true, checkpoint });
  return { ws: workspace, store, ledger: new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) }) };
}

// (a) in-process lifecycles, interleaved in rounds with both baselines so the machine's load hits
// all three alike; wall time and CPU time (user + system) of each are summed over the rounds.
const ROUNDS = 10;
const only = process.env.BENCH_ONLY; // e.g. BENCH_ONLY=a: part (a) alone
const a = ledgerIn(tempDir("a"));
const plans = [];
for (let i = 0; i < LIFECYCLES / STEPS_PER_PLAN + PAGE_PLANS; i++) {
  const p = a.ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: STEPS_PER_PLAN }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  plans.push(p.step_ids.slice(0, STEPS_PER_PLAN));
}
const ledgerRound = (from, to) => {
  for (let k = from; k < to; k++) {
    for (const id of plans[k]) {
      a.ledger.start({ step_id: id });
      a.ledger.complete({ step_id: id, summary: "done" });
    }
  }
};
// The ledger as the resident processes open it (the workspace daemon, `ratchet serve`): the WAL
// checkpoint on a worker thread with its own connection (SqliteStore.open checkpoint "background").
const g = ledgerIn(tempDir("ag"), "background");
const gPlans = [];
for (let i = 0; i < LIFECYCLES / STEPS_PER_PLAN + PAGE_PLANS; i++) {
  const p = g.ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: STEPS_PER_PLAN }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  gPlans.push(p.step_ids.slice(0, STEPS_PER_PLAN));
}
const residentRound = (from, to) => {
  for (let k = from; k < to; k++) {
    for (const id of gPlans[k]) {
      g.ledger.start({ step_id: id });
      g.ledger.complete({ step_id: id, summary: "done" });
    }
  }
};

// Baseline 1 (the issue's figure): the bare SQL of two transactions, update a row + insert an
// event, on two minimal tables (no indexes, a 3-column row), no reads and no roll-up.
const bdb = openSqlite(join(tempDir("a0"), "base.db"), { create: true, migrations: [] });
bdb.exec(
  "CREATE TABLE s (id INTEGER PRIMARY KEY, status TEXT, updated TEXT); CREATE TABLE e (id INTEGER PRIMARY KEY, at TEXT, payload TEXT)",
);
const ins = bdb.prepare("INSERT INTO s (id, status, updated) VALUES (?, 'PENDING', ?)");
for (let i = 0; i < LIFECYCLES + PAGE_PLANS * STEPS_PER_PLAN; i++) ins.run(i, "");
const up = bdb.prepare("UPDATE s SET status = ?, updated = ? WHERE id = ?");
const ev = bdb.prepare("INSERT INTO e (at, payload) VALUES (?, ?)");
const move = bdb.transaction((id, to) => {
  up.run(to, new Date().toISOString(), id);
  ev.run(new Date().toISOString(), JSON.stringify({ to }));
});
const bareRound = (from, to) => {
  for (let i = from * STEPS_PER_PLAN; i < to * STEPS_PER_PLAN; i++) {
    move.immediate(i, "IN_PROGRESS");
    move.immediate(i, "COMPLETED");
  }
};

// Baseline 2: the same rows as the ledger, written as bare statements on a store of the same
// schema (published by the Ledger): per transaction the step's row and its plan's status read
// back (the checks), the step update with the columns the ledger sets, the event row (with its
// plan index); on complete the open-step check and, when the plan's last step completes, the
// roll-up's writes (review step in progress and completed, its [REVIEW SKIPPED] log line, the
// plan's review state and close, lease release, three events).
const r = ledgerIn(tempDir("a2"));
const rPlans = [];
for (let i = 0; i < LIFECYCLES / STEPS_PER_PLAN + PAGE_PLANS; i++) {
  const p = r.ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: STEPS_PER_PLAN }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  rPlans.push({ plan: p.plan_id, review: p.review_step_id, ids: p.step_ids.slice(0, STEPS_PER_PLAN) });
}
const rdb = r.store.db;
// The layout of SQLite migration 13, as the store writes it: an event's plan_run_start (1 when the
// event before it belongs to another plan), and a step's reserve shrunk by what its changed columns
// grow (sizes as the store counts them: text bytes, 8 for a number, 2 bytes of margin a column),
// given back when the step finishes.
const size = (c) =>
  `CASE typeof(${c}) WHEN 'null' THEN 0 WHEN 'text' THEN length(CAST(${c} AS BLOB)) WHEN 'blob' THEN length(${c}) ELSE 8 END`;
const stepSet = (cols, finishing) =>
  `${cols.map((c) => `${c} = ?`).join(", ")}, reserve = ${
    finishing
      ? "NULL"
      : `CASE WHEN reserve IS NULL THEN NULL ELSE zeroblob(max(0, length(reserve) + ${cols.map(size).join(" + ")} - ?)) END`
  }`;
const grown = (values) =>
  values.reduce(
    (n, v) => n + (v === null ? 0 : typeof v === "string" ? Buffer.byteLength(v) : 8),
    2 * (values.length + 1),
  );
const q = {
  step: rdb.prepare("SELECT * FROM steps WHERE step_id = ?").raw(true),
  planStatus: rdb.prepare("SELECT status FROM plans WHERE plan_id = ?").pluck(true),
  start: rdb.prepare(
    `UPDATE steps SET ${stepSet(["agent_input", "lease_holder", "lease_expires_at", "heartbeat_at", "status", "updated_at", "started_at"], false)} WHERE step_id = ?`,
  ),
  complete: rdb.prepare(
    `UPDATE steps SET ${stepSet(["summary", "agent_output", "status", "updated_at", "finished_at", "lease_holder", "lease_expires_at", "duration_ms"], true)} WHERE step_id = ?`,
  ),
  moveOn: rdb.prepare(
    `UPDATE steps SET ${stepSet(["status", "updated_at", "finished_at"], false)} WHERE step_id = ?`,
  ),
  moveDone: rdb.prepare(
    `UPDATE steps SET ${stepSet(["status", "updated_at", "finished_at"], true)} WHERE step_id = ?`,
  ),
  event: rdb.prepare(
    "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload, plan_run_start) VALUES (?, ?, ?, ?, ?, ?, coalesce((SELECT plan_id IS NOT ? FROM events ORDER BY id DESC LIMIT 1), 1))",
  ),
  open: rdb
    .prepare(
      "SELECT 1 FROM steps WHERE plan_id = ? AND role = 'regular' AND (status = 'PENDING' OR status = 'IN_PROGRESS' OR status = 'NEEDS_REVIEW') LIMIT 1",
    )
    .pluck(true),
  reviewStatus: rdb.prepare("SELECT status FROM steps WHERE step_id = ?").pluck(true),
  log: rdb.prepare(
    "INSERT INTO step_logs (step_id, plan_id, at, kind, text, bytes, truncated, blob) VALUES (?, ?, ?, 'review', ?, ?, 0, NULL)",
  ),
  planReview: rdb.prepare(
    "UPDATE plans SET review_state = 'skipped', review_skip_reason = ?, updated_at = ? WHERE plan_id = ?",
  ),
  planClose: rdb.prepare("UPDATE plans SET status = ?, updated_at = ?, finished_at = ? WHERE plan_id = ?"),
  release: rdb.prepare(
    "UPDATE steps SET lease_holder = NULL, lease_expires_at = NULL WHERE plan_id = ? AND lease_expires_at IS NOT NULL",
  ),
};
const holder = `${process.pid}@bench`;
const startTx = rdb.transaction((plan, id) => {
  q.step.get(id);
  q.planStatus.get(plan);
  const now = new Date().toISOString();
  const v = [null, holder, Date.now() + 1800_000, now, "IN_PROGRESS", now, now];
  q.start.run(...v, grown(v), id);
  q.event.run(
    now,
    "step",
    id,
    plan,
    "step.in_progress",
    JSON.stringify({ from: "PENDING", to: "IN_PROGRESS", lease_holder: holder }),
    plan,
  );
});
const completeTx = rdb.transaction((p, id) => {
  q.step.get(id);
  q.planStatus.get(p.plan);
  const now = new Date().toISOString();
  q.complete.run("done", null, "COMPLETED", now, now, null, null, 1, id);
  q.event.run(
    now,
    "step",
    id,
    p.plan,
    "step.completed",
    JSON.stringify({ from: "IN_PROGRESS", to: "COMPLETED" }),
    p.plan,
  );
  if (q.open.get(p.plan) !== undefined) {
    q.reviewStatus.get(p.review);
    return;
  }
  const skip = "no registered project: no state-graph review";
  q.moveOn.run("IN_PROGRESS", now, null, grown(["IN_PROGRESS", now, null]), p.review);
  q.event.run(
    now,
    "step",
    p.review,
    p.plan,
    "step.in_progress",
    JSON.stringify({ from: "PENDING", to: "IN_PROGRESS", by: "rollup" }),
    p.plan,
  );
  q.log.run(p.review, p.plan, now, `[REVIEW SKIPPED] ${skip}`, skip.length + 17);
  q.planReview.run(skip, now, p.plan);
  q.moveDone.run("COMPLETED", now, now, p.review);
  q.event.run(
    now,
    "step",
    p.review,
    p.plan,
    "step.completed",
    JSON.stringify({ from: "IN_PROGRESS", to: "COMPLETED", by: "rollup" }),
    p.plan,
  );
  q.planClose.run("COMPLETED", now, now, p.plan);
  q.release.run(p.plan);
  q.event.run(
    now,
    "plan",
    p.plan,
    p.plan,
    "plan.completed",
    JSON.stringify({ from: "IN_PROGRESS", to: "COMPLETED", by: "rollup" }),
    p.plan,
  );
});
const sameRowsRound = (from, to) => {
  for (let k = from; k < to; k++) {
    const p = rPlans[k];
    for (const id of p.ids) {
      startTx.immediate(p.plan, id);
      completeTx.immediate(p, id);
    }
  }
};

const time = { ledger: [0, 0], resident: [0, 0], bare: [0, 0], same: [0, 0] };
const perRound = LIFECYCLES / STEPS_PER_PLAN / ROUNDS;
for (let k = 0; k < ROUNDS; k++) {
  for (const [name, f] of [
    ["ledger", ledgerRound],
    ["resident", residentRound],
    ["bare", bareRound],
    ["same", sameRowsRound],
  ]) {
    const c = process.cpuUsage();
    const t0 = performance.now();
    f(k * perRound, (k + 1) * perRound);
    time[name][0] += performance.now() - t0;
    const u = process.cpuUsage(c);
    time[name][1] += (u.user + u.system) / 1000;
  }
}
// Pages written to the WAL per transaction (frames counted from an emptied WAL; a commit's cost is
// its page writes), on the plans kept aside, after the timed rounds.
const walPages = (db, run) => {
  db.pragma("wal_checkpoint(TRUNCATE)");
  run();
  const frames = (statSync(`${db.name}-wal`).size - 32) / (24 + db.pragma("page_size", { simple: true }));
  return frames / (PAGE_PLANS * STEPS_PER_PLAN * 2);
};
const k0 = LIFECYCLES / STEPS_PER_PLAN;
const pages = {
  ledger: walPages(a.store.db, () => ledgerRound(k0, k0 + PAGE_PLANS)),
  bare: walPages(bdb, () => bareRound(k0, k0 + PAGE_PLANS)),
  same: walPages(rdb, () => sameRowsRound(k0, k0 + PAGE_PLANS)),
};
const perSec = (ms) => LIFECYCLES / (ms / 1000);
const lifecyclesPerSec = perSec(time.ledger[0]);
const residentPerSec = perSec(time.resident[0]);
const residentCheckpoints = g.store.checkpointer?.checkpoints ?? 0;
g.store.close();
const barePerSec = perSec(time.bare[0]);
const samePerSec = perSec(time.same[0]);
const cpuRatio = time.bare[1] / time.ledger[1];
const cpuSameRatio = time.same[1] / time.ledger[1];

const partA = {
  "(a) lifecycles/s (start+complete, in-process)": lifecyclesPerSec,
  "(a) baseline bare-SQL lifecycles/s": barePerSec,
  "(a) ledger / bare SQL throughput": lifecyclesPerSec / barePerSec,
  "(a) ledger / bare SQL, CPU time": cpuRatio,
  "(a) target ≥ 0.5 (issue 19)": lifecyclesPerSec / barePerSec >= 0.5 ? "met" : "MISSED",
  "(a) resident (checkpoint on a worker thread, as daemon/serve) lifecycles/s": residentPerSec,
  "(a) resident ledger / bare SQL throughput": residentPerSec / barePerSec,
  "(a) resident ledger / bare SQL, CPU time (whole process: writer + worker)":
    time.bare[1] / time.resident[1],
  "(a) resident: checkpoints the worker ran": residentCheckpoints,
  "(a) resident target ≥ 0.5 (issue 19)": residentPerSec / barePerSec >= 0.5 ? "met" : "MISSED",
  "(a) WAL pages per transaction: ledger": pages.ledger,
  "(a) WAL pages per transaction: baseline 1": pages.bare,
  "(a) WAL pages per transaction: baseline 2": pages.same,
  "(a) baseline 2, bare SQL of the same rows, /s": samePerSec,
  "(a) ledger / bare SQL of the same rows": lifecyclesPerSec / samePerSec,
  "(a) ledger / bare SQL of the same rows, CPU time": cpuSameRatio,
  "(a) target ≥ 5000/s": lifecyclesPerSec >= 5000 ? "met" : "MISSED",
};
if (only === "a") {
  report("ledger", partA);
  process.exit(0);
}
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
  ...partA,
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
