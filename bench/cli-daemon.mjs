// bench/cli-daemon — one ledger write from a shell, one process per op (issue 19), and the same op
// through a resident server. Every figure is a median (p95 beside it) of runs interleaved round by
// round, so the machine's load falls on all of them alike; ratios are against the stand-in
// measured in the same run.
//  (s) the stand-in for the original's per-op chain: a bash script that starts the real python3
//      interpreter (not a version-manager shim), which opens the SQLite file (WAL), runs the same
//      update + event insert in one transaction, commits and prints a JSON line;
//  (i) `node bin/ratchet.js step start <id>` in-process (RATCHET_NO_DAEMON=1);
//  (n) the same through the workspace daemon, warm, with the Node client (`node bin/ratchet.js`);
//  (c) the same through the daemon, warm, with `bin/ratchet` (the native client, docs/daemon.md);
//  (f) the first op of a workspace: no daemon yet (it starts one and runs in-process);
//  (h) POST /api/flows/start-step and (m) MCP tools/call start_step against `ratchet serve`
//      (one warm HTTP connection, sequential), per op.
//  Also `node -e 0` for reference.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, fmt, median, percentile, ROOT, report, tempDir } from "./lib.mjs";

const { Ledger } = await import(join(ROOT, "dist", "ledger", "index.js"));
const { BlobStore, SqliteStore, initWorkspace, openSqlite } = await import(
  join(ROOT, "dist", "store", "index.js")
);

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = quick ? 10 : 30;
const COLD = quick ? 3 : 8;
const HTTP_OPS = quick ? 200 : 1000;
const NATIVE = join(ROOT, "bin", "ratchet");
const nativeBuilt = existsSync(join(ROOT, "dist", "native", "ratchet-client"));

/** The real python3 (a pyenv/asdf shim adds a whole interpreter start of its own). */
function realPython() {
  const which = spawnSync("bash", ["-c", "command -v python3"], { encoding: "utf8" }).stdout.trim();
  if (which && !/\/shims\//.test(which)) return realpathSync(which);
  const pyenv = spawnSync("pyenv", ["which", "python3"], { encoding: "utf8" });
  if (pyenv.status === 0 && pyenv.stdout.trim()) return pyenv.stdout.trim();
  return "/usr/bin/python3";
}
const PY = realPython();

// ── the workspace: one plan with a step per measured op ──
const dir = tempDir("clid");
const { workspace: ws } = initWorkspace(dir);
const store = SqliteStore.open(ws.dbPath, { create: true });
const ledger = new Ledger({ store, blobs: new BlobStore(ws.blobsDir) });
const stepsNeeded = ROUNDS * 4 + COLD + 8;
const plan = ledger.publish({
  goal: "cli daemon bench",
  steps: Array.from({ length: stepsNeeded }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
});
const httpPlans = Array.from({ length: Math.ceil((2 * HTTP_OPS + 40) / 200) }, (_, i) =>
  ledger.publish({
    goal: `http bench ${i}`,
    steps: Array.from({ length: 200 }, (_, j) => ({ title: `h${j}`, type: "THINKING" })),
  }),
);
store.close();
const ids = [...plan.step_ids];
const next = () => ids.shift();

// ── the stand-in: bash → python3 → sqlite ──
const sdir = tempDir("clid-orig");
const sdb = join(sdir, "orig.db");
const base = openSqlite(sdb, { create: true, migrations: [] });
base.exec(
  "CREATE TABLE steps (step_id TEXT PRIMARY KEY, status TEXT, updated_at TEXT); CREATE TABLE events (id INTEGER PRIMARY KEY, at TEXT, type TEXT, entity_id TEXT, payload TEXT)",
);
const ins = base.prepare("INSERT INTO steps VALUES (?, 'PENDING', '')");
for (let i = 0; i < ROUNDS + 5; i++) ins.run(`s-${i}`);
base.close();
writeFileSync(
  join(sdir, "start_step.py"),
  `import json, sqlite3, sys, datetime
db, step_id = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db, isolation_level=None, timeout=30)
con.execute("PRAGMA journal_mode=WAL")
now = datetime.datetime.now(datetime.timezone.utc).isoformat()
con.execute("BEGIN IMMEDIATE")
cur = con.execute("UPDATE steps SET status = 'IN_PROGRESS', updated_at = ? WHERE step_id = ? AND status = 'PENDING'", (now, step_id))
if cur.rowcount != 1:
    con.execute("ROLLBACK")
    print(json.dumps({"ok": False, "step_id": step_id}))
    sys.exit(4)
con.execute("INSERT INTO events (at, type, entity_id, payload) VALUES (?, 'step.in_progress', ?, ?)", (now, step_id, json.dumps({"to": "IN_PROGRESS"})))
con.execute("COMMIT")
print(json.dumps({"ok": True, "op": "start-step", "step_id": step_id, "status": "IN_PROGRESS"}))
`,
);
writeFileSync(
  join(sdir, "start_step.sh"),
  `#!/bin/bash\nexec "${PY}" "$(dirname "$0")/start_step.py" "$@"\n`,
);
let standInStep = 0;

function time(cmd, args, env = {}) {
  const t = performance.now();
  const r = spawnSync(cmd, args, { cwd: dir, encoding: "utf8", env: { ...process.env, ...env } });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${r.stderr}${r.stdout}`);
  return ms;
}
const standIn = () => time("bash", [join(sdir, "start_step.sh"), sdb, `s-${standInStep++}`]);
const inProcess = () => time(process.execPath, [BIN, "step", "start", next()], { RATCHET_NO_DAEMON: "1" });
const nodeClient = () => time(process.execPath, [BIN, "step", "start", next()]);
const nativeClient = () => time(NATIVE, ["step", "start", next()]);

function daemonPid() {
  const m = [...readFileSync(join(ws.dir, "daemon.log"), "utf8").matchAll(/pid (\d+) serving/g)].pop();
  return m ? Number(m[1]) : undefined;
}
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
async function waitUntil(cond, what) {
  const until = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const sockPath = join(ws.dir, "daemon.sock");
async function daemonUp() {
  await waitUntil(
    () =>
      existsSync(sockPath) &&
      existsSync(join(ws.dir, "daemon.log")) &&
      daemonPid() !== undefined &&
      alive(daemonPid()),
    "the daemon",
  );
}
async function stopDaemon() {
  const pid = daemonPid();
  if (pid !== undefined && alive(pid)) process.kill(pid, "SIGTERM");
  await waitUntil(() => !existsSync(sockPath) && (pid === undefined || !alive(pid)), "the daemon to stop");
}

// Warm-up: a daemon, Node's page cache, Python's.
standIn();
time(process.execPath, ["-e", "0"]);
inProcess();
nodeClient();
await daemonUp();
nodeClient();
if (nativeBuilt) nativeClient();

const t = { s: [], i: [], n: [], c: [], node: [] };
for (let r = 0; r < ROUNDS; r++) {
  t.s.push(standIn());
  t.node.push(time(process.execPath, ["-e", "0"]));
  t.i.push(inProcess());
  t.n.push(nodeClient());
  if (nativeBuilt) t.c.push(nativeClient());
}

// (f) cold: no daemon; the op starts one and runs in-process.
const cold = [];
for (let r = 0; r < COLD; r++) {
  await stopDaemon();
  cold.push(nativeBuilt ? nativeClient() : nodeClient());
  await daemonUp();
}
await stopDaemon();

// (h)/(m) HTTP and MCP against `ratchet serve` (its own process).
const token = "bench-token-0123456789abcdef";
const serve = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
  cwd: dir,
  env: { ...process.env, RATCHET_SERVER_TOKEN: token },
});
let serveOut = "";
serve.stdout.setEncoding("utf8").on("data", (c) => {
  serveOut += c;
});
serve.stderr.setEncoding("utf8").on("data", (c) => {
  serveOut += c;
});
await waitUntil(() => /http:\/\/[^\s"]+/.test(serveOut), "ratchet serve");
const url = /http:\/\/[^\s/"]+/.exec(serveOut)[0];
const httpIds = httpPlans.flatMap((p) => p.step_ids);
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
async function httpOp() {
  const id = httpIds.shift();
  const t0 = performance.now();
  const res = await fetch(`${url}/api/flows/start-step`, {
    method: "POST",
    headers,
    body: JSON.stringify({ step_id: id }),
  });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (!body.ok) throw new Error(`HTTP start-step: ${JSON.stringify(body)}`);
  return ms;
}
let rpc = 0;
async function mcpOp() {
  const id = httpIds.shift();
  const t0 = performance.now();
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { ...headers, accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++rpc,
      method: "tools/call",
      params: { name: "start_step", arguments: { step_id: id } },
    }),
  });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (!body.result || body.result.isError) throw new Error(`MCP start_step: ${JSON.stringify(body)}`);
  return ms;
}
for (let i = 0; i < 20; i++) {
  await httpOp();
  await mcpOp();
}
const h = [];
const m = [];
for (let i = 0; i < HTTP_OPS; i++) {
  h.push(await httpOp());
  m.push(await mcpOp());
}
serve.kill("SIGTERM");

const s50 = median(t.s);
const row = (label, v) => ({
  [`${label} median ms`]: median(v),
  [`${label} p95 ms`]: percentile(v, 95),
  [`${label} ÷ stand-in`]: median(v) / s50,
});
const figures = {
  "python3 used by the stand-in": PY,
  ...row("(s) stand-in bash→python3→sqlite", t.s),
  ...row("node -e 0", t.node),
  ...row("(i) CLI in-process", t.i),
  ...row("(n) CLI via daemon, node client", t.n),
  ...(nativeBuilt
    ? row("(c) CLI via daemon, native client", t.c)
    : { "(c) native client": "not built (no C compiler)" }),
  ...row("(f) first op, starting the daemon", cold),
  "(h) HTTP POST /api/flows/start-step p50 ms": median(h),
  "(h) HTTP p95 ms": percentile(h, 95),
  "(m) MCP tools/call start_step p50 ms": median(m),
  "(m) MCP p95 ms": percentile(m, 95),
  "target: shell op ≤ 0.2× stand-in": median(nativeBuilt ? t.c : t.n) / s50 <= 0.2 ? "met" : "MISSED",
  "target: MCP/HTTP ≤ 2 ms p50": Math.max(median(h), median(m)) <= 2 ? "met" : "MISSED",
};
report("cli-daemon", figures);
console.log(
  `\nsamples: ${ROUNDS} interleaved rounds, ${COLD} cold starts, ${HTTP_OPS} HTTP + ${HTTP_OPS} MCP ops; best shell ratio ${fmt(median(nativeBuilt ? t.c : t.n) / s50)}`,
);
