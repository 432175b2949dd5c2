// bench/scale — the ledger on SQLite and on PostgreSQL, in the same run (issue 17, first part).
//  (a) ledger step lifecycles/s (start + complete: two write transactions, each with its event and
//      the roll-up check) with 1 and with 8 writer processes on one store; SQLite (WAL) and
//      PostgreSQL (fsync on, synchronous_commit on), printed as ratios PostgreSQL / SQLite. A third
//      column runs PostgreSQL with synchronous_commit=off (commits survive a process crash but not
//      an OS crash — SQLite's synchronous=NORMAL in WAL mode promises the same), to show what the
//      per-commit fsync costs.
//  (b) the synchronous bridge's cost per statement: `SELECT 1` through SyncPg (worker thread +
//      Atomics.wait) against the same statement on an async `pg` Client in the same process.
//  (c) opening a store in a fresh process: `ratchet plan list` on SQLite vs PostgreSQL (worker
//      start, `pg` load, connect).
//  (d) learned workflow runs/s executed locally: `ratchet run` of the two-step learned fixture
//      (test/fixtures/workflows/pipeline, zero model requests), one process after the other, on
//      SQLite vs PostgreSQL.
//  (e) queued learned runs/s through `ratchet worker` processes (1, 2 and 4 workers, each in its
//      own folder with no copy of the workflow, concurrency 1 each) on PostgreSQL, and the ratio to
//      (d)'s local `ratchet run` on PostgreSQL of the same run. The runs are enqueued first (in this
//      process, not timed); the rate is runs over the span from the first claim to the last finish
//      (the run rows' own times), so worker start-up is not counted.
//  (events) live event delivery across processes: this process commits one event (its own store
//      connection), and two other processes deliver it — `ratchet events --follow --json` (a stdout
//      line) and `ratchet serve` (an SSE frame on GET /events read here). Latency from the return of
//      the commit to the line / frame arriving, median and p95, on SQLite (a watch of the WAL file's
//      folder) and on PostgreSQL (LISTEN/NOTIFY), and the ratio PostgreSQL / SQLite.
// BENCH_ONLY=d runs part (d) alone; BENCH_ONLY=e runs (d) and (e); BENCH_ONLY=events the event delivery part alone.
// The PostgreSQL server is a throwaway cluster (Debian's postgresql; initdb in a temp folder, as
// the `postgres` user when root), like test/harness/pg.ts.
// Run as `node bench/scale.mjs --writer <url|path> <steps> <id>` it is one writer process.
import { spawn, spawnSync } from "node:child_process";
import { chownSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { BIN, fmt, median, percentile, ROOT, report, tempDir, timeProcess } from "./lib.mjs";

const { Ledger } = await import(join(ROOT, "dist", "ledger", "index.js"));
const { BlobStore, PgStore, SqliteStore, SyncPg, initWorkspace, isPostgresUrl } = await import(
  join(ROOT, "dist", "store", "index.js")
);

function openLedger(target) {
  const store = isPostgresUrl(target) ? PgStore.open(target) : SqliteStore.open(target, { create: true });
  return {
    store,
    ledger: new Ledger({ store, blobs: new BlobStore(join(tmpdir(), "ratchet-bench-scale-blobs")) }),
  };
}

// ── writer mode: publish one plan, say ready, wait for "go", run the lifecycles, report ──
if (process.argv[2] === "--writer") {
  const [, , , target, stepsArg, id] = process.argv;
  const steps = Number(stepsArg);
  const { store, ledger } = openLedger(target);
  const p = ledger.publish({
    goal: `writer ${id}`,
    steps: Array.from({ length: steps }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  process.stdout.write("ready\n");
  process.stdin.once("data", () => {
    const start = performance.timeOrigin + performance.now();
    for (const sid of p.step_ids.slice(0, steps)) {
      ledger.start({ step_id: sid });
      ledger.complete({ step_id: sid, summary: "done" });
    }
    const end = performance.timeOrigin + performance.now();
    store.close();
    process.stdout.write(`${JSON.stringify({ start, end, n: steps })}\n`);
    process.exit(0);
  });
} else {
  await main();
}

/** Runs `writers` writer processes on `target`, released together; lifecycles per second overall. */
async function lifecycles(target, writers, perWriter) {
  const procs = Array.from({ length: writers }, (_, i) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "bench", "scale.mjs"), "--writer", target, String(perWriter), String(i)],
      {
        stdio: ["pipe", "pipe", "inherit"],
      },
    );
    let out = "";
    child.stdout.setEncoding("utf8");
    const ready = new Promise((res) => {
      child.stdout.on("data", (c) => {
        out += c;
        if (out.includes("ready\n")) res();
      });
    });
    const done = new Promise((res, rej) =>
      child.on("close", (code) =>
        code === 0
          ? res(JSON.parse(out.split("\n").filter(Boolean).at(-1)))
          : rej(new Error(`writer exited ${code}`)),
      ),
    );
    return { child, ready, done };
  });
  await Promise.all(procs.map((p) => p.ready));
  for (const p of procs) p.child.stdin.end("go\n");
  const results = await Promise.all(procs.map((p) => p.done));
  const start = Math.min(...results.map((r) => r.start));
  const end = Math.max(...results.map((r) => r.end));
  return results.reduce((n, r) => n + r.n, 0) / ((end - start) / 1000);
}

async function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/** A throwaway cluster; returns { url(db), createDb(name, settings), stop }. */
async function startCluster() {
  const root = "/usr/lib/postgresql";
  const major = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a))[0] : undefined;
  if (!major) throw new Error("PostgreSQL is not installed: run `bash scripts/ensure-system-deps.sh`");
  const bin = join(root, major, "bin");
  const dir = mkdtempSync(join(tmpdir(), "ratchet-bench-pg-"));
  const root_ = userInfo().uid === 0;
  if (root_) {
    const id = (f) => Number(spawnSync("id", [f, "postgres"], { encoding: "utf8" }).stdout.trim());
    chownSync(dir, id("-u"), id("-g"));
  }
  const run = (b, args) => {
    const [cmd, argv] = root_
      ? ["runuser", ["-u", "postgres", "--", join(bin, b), ...args]]
      : [join(bin, b), args];
    const r = spawnSync(cmd, argv, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${b} failed: ${r.stderr}`);
    return r.stdout;
  };
  run("initdb", ["-D", join(dir, "data"), "-U", "postgres", "--auth=trust", "--locale=C", "--no-sync"]);
  const port = await freePort();
  run("pg_ctl", [
    "-D",
    join(dir, "data"),
    "-l",
    join(dir, "log"),
    "-w",
    "-o",
    `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=on`,
    "start",
  ]);
  const stop = () => {
    try {
      run("pg_ctl", ["-D", join(dir, "data"), "-m", "fast", "-w", "stop"]);
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stop);
  const psql = (sql) =>
    run("psql", ["-h", dir, "-p", String(port), "-U", "postgres", "-d", "postgres", "-X", "-q", "-c", sql]);
  const url = (db) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    url,
    createDb(name, settings = "") {
      psql(`CREATE DATABASE ${name}`);
      if (settings) psql(`ALTER DATABASE ${name} SET ${settings}`);
      return url(name);
    },
    stop,
  };
}

/** (d): `runs` learned runs of the pipeline fixture, one `ratchet run` process after the other; runs/s. */
function learnedRuns(target, runs) {
  const dir = tempDir("scale-runs");
  const wf = join(dir, "workflows", "pipeline");
  cpSync(join(ROOT, "test", "fixtures", "workflows", "pipeline"), wf, { recursive: true });
  const env = { ...process.env, RATCHET_DB: target, SECRET_API_TOKEN: "bench-token" };
  const args = [BIN, "run", join(wf, "workflow.yaml"), "--group", "small", "--quiet"];
  timeProcess(args, { cwd: dir, env }); // warm-up (and PostgreSQL's migrations)
  const t = performance.now();
  for (let i = 0; i < runs; i++) timeProcess(args, { cwd: dir, env });
  return (runs * 1000) / (performance.now() - t);
}

function partD(figures, cluster, quick) {
  const RUNS = quick ? 5 : 15;
  const sqDir = tempDir("scale-runs-sqlite");
  const sq = learnedRuns(join(initWorkspace(sqDir).workspace.dbPath), RUNS);
  const pg = learnedRuns(cluster.createDb("b_runs"), RUNS);
  figures[`(d) learned runs/s, local \`ratchet run\`, sqlite (${RUNS} runs)`] = sq;
  figures[`(d) learned runs/s, local \`ratchet run\`, postgres (${RUNS} runs)`] = pg;
  figures["(d) ratio postgres / sqlite"] = pg / sq;
}

/** Resolves the next time `pred(id)` holds for an id seen on `emitter`'s lines; records arrival times. */
function idWatcher() {
  const seen = new Map();
  const waiters = new Map();
  return {
    saw(id) {
      const at = performance.now();
      if (!seen.has(id)) seen.set(id, at);
      waiters.get(id)?.(at);
      waiters.delete(id);
    },
    when(id, timeoutMs = 30_000) {
      if (seen.has(id)) return Promise.resolve(seen.get(id));
      return new Promise((res, rej) => {
        const t = setTimeout(
          () => rej(new Error(`event ${id} not delivered within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.set(id, (at) => {
          clearTimeout(t);
          res(at);
        });
      });
    },
  };
}

/** (events): commit here → `events --follow` line and SSE frame in two other processes. */
async function eventLatency(target, samples) {
  const dir = tempDir("scale-events");
  const env = { ...process.env, RATCHET_DB: target };
  const { store } = openLedger(target);
  const append = (i) =>
    store.tx(() => store.appendEvent({ entityKind: "bench", entityId: `e${i}`, type: "bench.tick" }));
  const since = store.lastEventId();
  const follow = spawn(process.execPath, [BIN, "events", "--follow", "--json", "--since", String(since)], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const followIds = idWatcher();
  let buf = "";
  follow.stdout.setEncoding("utf8");
  follow.stdout.on("data", (c) => {
    buf += c;
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) followIds.saw(JSON.parse(line).id);
      nl = buf.indexOf("\n");
    }
  });
  const token = "bench-scale-token-0123456789abcdef";
  const serve = spawn(process.execPath, [BIN, "serve", "--port", "0", "--token", token, "--quiet"], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise((res, rej) => {
    let out = "";
    serve.stdout.setEncoding("utf8");
    serve.stdout.on("data", (c) => {
      out += c;
      if (out.includes("\n")) res(JSON.parse(out.split("\n")[0]).url);
    });
    serve.once("exit", (code) => rej(new Error(`ratchet serve exited (${code})`)));
  });
  const sseIds = idWatcher();
  const abort = new AbortController();
  const res = await fetch(`${url}/events?since=${since}`, { signal: abort.signal });
  void (async () => {
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let sbuf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        sbuf += value;
        for (const m of sbuf.matchAll(/^id: (\d+)$/gm)) sseIds.saw(Number(m[1]));
        sbuf = sbuf.slice(sbuf.lastIndexOf("\n") + 1);
      }
    } catch {}
  })();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  try {
    // warm-up: both readers are up (the follower's listener connected) once these arrive
    for (let i = 0; i < 3; i++) {
      const id = append(`w${i}`);
      await Promise.all([followIds.when(id), sseIds.when(id)]);
    }
    const followMs = [];
    const sseMs = [];
    for (let i = 0; i < samples; i++) {
      await sleep(40); // apart, so one wake-up never carries two samples
      const id = append(i);
      const t0 = performance.now();
      const [f, e] = await Promise.all([followIds.when(id), sseIds.when(id)]);
      followMs.push(f - t0);
      sseMs.push(e - t0);
    }
    return {
      follow: { p50: median(followMs), p95: percentile(followMs, 95) },
      sse: { p50: median(sseMs), p95: percentile(sseMs, 95) },
    };
  } finally {
    abort.abort();
    follow.kill("SIGTERM");
    serve.kill("SIGTERM");
    await Promise.all(
      [follow, serve].map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once("exit", r)))),
    );
    store.close();
  }
}

async function partEvents(figures, cluster, quick) {
  const N = quick ? 15 : 60;
  const sq = await eventLatency(join(initWorkspace(tempDir("scale-ev-sqlite")).workspace.dbPath), N);
  const pg = await eventLatency(cluster.createDb("b_events"), N);
  for (const [label, r] of [
    ["sqlite (WAL file watch)", sq],
    ["postgres (LISTEN/NOTIFY)", pg],
  ]) {
    figures[`(events) ${label}: commit → \`events --follow\` line, median ms (${N})`] = r.follow.p50;
    figures[`(events) ${label}: commit → \`events --follow\` line, p95 ms`] = r.follow.p95;
    figures[`(events) ${label}: commit → SSE frame, median ms (${N})`] = r.sse.p50;
    figures[`(events) ${label}: commit → SSE frame, p95 ms`] = r.sse.p95;
  }
  figures["(events) ratio postgres / sqlite, events --follow (median)"] = pg.follow.p50 / sq.follow.p50;
  figures["(events) ratio postgres / sqlite, SSE (median)"] = pg.sse.p50 / sq.sse.p50;
}

/** (e): `runs` queued learned runs executed by `workers` worker processes; runs/s over claim→finish. */
async function queuedRuns(cluster, workers, runs, tag) {
  const url = cluster.createDb(`b_queue_${tag}`);
  const { enqueueRun } = await import(join(ROOT, "dist", "queue", "index.js"));
  const { loadWorkflow } = await import(join(ROOT, "dist", "workflow", "index.js"));
  const { DbBlobStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const dir = tempDir(`scale-queue-${tag}`);
  const wfDir = join(dir, "workflows", "pipeline");
  cpSync(join(ROOT, "test", "fixtures", "workflows", "pipeline"), wfDir, { recursive: true });
  const wf = loadWorkflow(join(wfDir, "workflow.yaml"));
  const store = PgStore.open(url);
  const ctx = { store, blobs: new DbBlobStore(store), workspace: { storeUrl: url } };
  for (let i = 0; i < runs; i++) await enqueueRun(ctx, wf, { group: "small" });
  const env = { ...process.env, RATCHET_DB: url, RATCHET_QUEUE: "1", SECRET_API_TOKEN: "bench-token" };
  const procs = Array.from({ length: workers }, (_, i) => {
    const wdir = tempDir(`scale-worker-${tag}-${i}`);
    return spawn(process.execPath, [BIN, "worker", "--json"], { cwd: wdir, env, stdio: "ignore" });
  });
  const left = () =>
    store.pg.query("SELECT COUNT(*)::int AS n FROM workflow_runs WHERE status IN ('queued', 'running')")
      .rows[0].n;
  while (left() > 0) await new Promise((r) => setTimeout(r, 200));
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => new Promise((r) => p.on("exit", r))));
  const span = store.pg.query(
    "SELECT MIN(started_at) AS a, MAX(finished_at) AS b, COUNT(*) FILTER (WHERE status = 'passed')::int AS ok FROM workflow_runs",
  ).rows[0];
  store.close();
  if (span.ok !== runs) throw new Error(`(e) ${workers} workers: ${span.ok} of ${runs} runs passed`);
  return (runs * 1000) / (Date.parse(span.b) - Date.parse(span.a));
}

async function partE(figures, cluster, quick) {
  const RUNS = quick ? 12 : 40;
  const local = figures["(d) learned runs/s, local `ratchet run`, postgres (" + (quick ? 5 : 15) + " runs)"];
  for (const w of [1, 2, 4]) {
    const rate = await queuedRuns(cluster, w, RUNS, `w${w}`);
    figures[`(e) queued learned runs/s, ${w} worker(s) (${RUNS} runs)`] = rate;
    figures[`(e) ratio to local \`ratchet run\` on postgres, ${w} worker(s)`] = rate / local;
  }
}

async function main() {
  const quick = process.env.BENCH_QUICK === "1";
  if (process.env.BENCH_ONLY === "events") {
    const cluster = await startCluster();
    try {
      const figures = {};
      await partEvents(figures, cluster, quick);
      report("scale-events", figures);
    } finally {
      cluster.stop();
    }
    return;
  }
  if (process.env.BENCH_ONLY === "d" || process.env.BENCH_ONLY === "e") {
    const cluster = await startCluster();
    try {
      const figures = {};
      partD(figures, cluster, quick);
      if (process.env.BENCH_ONLY === "e") await partE(figures, cluster, quick);
      report("scale-runs", figures);
    } finally {
      cluster.stop();
    }
    return;
  }
  const ONE = quick ? 100 : 400; // lifecycles of the single writer
  const EACH = quick ? 25 : 100; // lifecycles of each of the 8 writers
  const cluster = await startCluster();
  try {
    const sqliteTarget = (tag) => join(initWorkspace(tempDir(`scale-${tag}`)).workspace.dbPath);
    const figures = {};
    const rows = [];
    for (const [label, mk] of [
      ["sqlite", (tag) => sqliteTarget(tag)],
      ["postgres", (tag) => cluster.createDb(`b_${tag}`)],
      ["postgres_async_commit", (tag) => cluster.createDb(`ba_${tag}`, "synchronous_commit = off")],
    ]) {
      const one = await lifecycles(mk(`${label}_1`), 1, ONE);
      const eight = await lifecycles(mk(`${label}_8`), 8, EACH);
      figures[`(a) ${label}: lifecycles/s, 1 writer`] = one;
      figures[`(a) ${label}: lifecycles/s, 8 writer processes`] = eight;
      rows.push([label, one, eight]);
    }
    const [sq, pg, pga] = rows;
    figures["(a) ratio postgres / sqlite, 1 writer"] = pg[1] / sq[1];
    figures["(a) ratio postgres / sqlite, 8 writers"] = pg[2] / sq[2];
    figures["(a) ratio postgres(sync_commit=off) / sqlite, 1 writer"] = pga[1] / sq[1];
    figures["(a) ratio postgres(sync_commit=off) / sqlite, 8 writers"] = pga[2] / sq[2];
    figures["(a) 8 writers / 1 writer: sqlite"] = sq[2] / sq[1];
    figures["(a) 8 writers / 1 writer: postgres"] = pg[2] / pg[1];

    // (b) the bridge's cost per statement
    const url = cluster.createDb("b_bridge");
    const N = quick ? 2000 : 10000;
    const sync = new SyncPg(url);
    for (let i = 0; i < 200; i++) sync.query("SELECT 1 AS n");
    let t = performance.now();
    for (let i = 0; i < N; i++) sync.query("SELECT $1::int AS n", [i]);
    const syncUs = ((performance.now() - t) * 1000) / N;
    sync.close();
    const pgMod = createRequire(join(ROOT, "package.json"))("pg");
    const client = new pgMod.Client({ connectionString: url });
    await client.connect();
    for (let i = 0; i < 200; i++) await client.query("SELECT 1 AS n");
    t = performance.now();
    for (let i = 0; i < N; i++) await client.query({ name: "b", text: "SELECT $1::int AS n", values: [i] });
    const asyncUs = ((performance.now() - t) * 1000) / N;
    await client.end();
    figures["(b) SELECT $1 through the sync bridge, µs"] = syncUs;
    figures["(b) SELECT $1 on an async pg Client, µs"] = asyncUs;
    figures["(b) bridge overhead per statement, µs"] = syncUs - asyncUs;

    // (c) a fresh process opening the store
    const RUNS = quick ? 5 : 15;
    const sqDb = sqliteTarget("cli");
    const pgDb = cluster.createDb("b_cli");
    timeProcess([BIN, "plan", "list"], { env: { ...process.env, RATCHET_DB: pgDb } }); // migrate once
    timeProcess([BIN, "plan", "list"], { env: { ...process.env, RATCHET_DB: sqDb } });
    const sqMs = [];
    const pgMs = [];
    for (let i = 0; i < RUNS; i++) {
      sqMs.push(timeProcess([BIN, "plan", "list"], { env: { ...process.env, RATCHET_DB: sqDb } }));
      pgMs.push(timeProcess([BIN, "plan", "list"], { env: { ...process.env, RATCHET_DB: pgDb } }));
    }
    figures["(c) `ratchet plan list` median ms, sqlite"] = median(sqMs);
    figures["(c) `ratchet plan list` median ms, postgres"] = median(pgMs);
    figures["(c) ratio postgres / sqlite"] = median(pgMs) / median(sqMs);
    partD(figures, cluster, quick);
    await partEvents(figures, cluster, quick);
    await partE(figures, cluster, quick);
    report("scale", figures);
    console.log(
      `\n  load average at the end: ${fmt(Number(spawnSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).stdout.split(" ")[0]))}`,
    );
  } finally {
    cluster.stop();
  }
}
