// bench/server — `ratchet serve`.
//  (a) Live events: a writer in another process records metrics through the ledger as fast as it
//      can (each metric's value is its write time in epoch ms); 10 SSE clients follow /events.
//      Figures: events/s delivered to all 10 clients ÷ the writer's own rate with nobody listening
//      (baseline, same run), and end-to-end latency (commit → frame parsed by a client) p50/p99.
//  (b) List endpoints on a store of 100,000 steps ÷ the same on a store of 1,000 steps (median of
//      sequential requests on a warm server): the plans list (first page and a page deep in the
//      cursor chain), one plan of 100 steps, the runs list and the metrics list.
//  (c) The dashboard in Chromium (playwright-core + Debian's /usr/bin/chromium, as the browser
//      tests launch it), on a store of 100,000 plans ÷ the same on 1,000 plans (same run, pages
//      alternating between the two servers): first render (a fresh page → the plan list drawn),
//      the plan list page (a hash change → 50 rows drawn), a search typed in the box (the server's
//      LIKE search → rows drawn); and SSE-to-DOM latency for a step change (another process commits
//      `step start` → the plan view shows the step IN_PROGRESS; median over N), ÷ the SSE frame
//      latency of (a) (commit → frame parsed by a Node client), the baseline.
//      Skipped when /usr/bin/chromium is missing.
//  (d) One write op through the resident server (issue 19): `step start` as POST
//      /api/flows/start-step (Node's fetch, keep-alive; and node:http with a keep-alive agent) and
//      as MCP tools/call start_step (the MCP SDK client over streamable HTTP, one connected client
//      reused for every call as an agent does; the same SDK client given a node:http fetch; and
//      the JSON-RPC request written by hand over node:http), against `ratchet serve` in its own
//      process, warm, one op at a time; p50/p95 over N ops each, interleaved op by op with the
//      baseline: the same flow (applyOp "start-step") called in-process on the same workspace (the
//      order of the ops rotates by one each round).
//      Then CPU per op of each route, client and server, in alternating blocks. BENCH_BEFORE_ROOT=
//      <checkout with a built dist/> adds the same routes served by that checkout, interleaved too
//      (the before/after of docs/performance.md "bench/server").
// BENCH_ONLY=events,lists,dashboard,ops picks parts.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { fmt, median, percentile, ROOT, report, tempDir } from "./lib.mjs";

const { startServer } = await import(join(ROOT, "dist", "server", "index.js"));
const { initWorkspace, SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));

const quick = process.env.BENCH_QUICK === "1";
const CLIENTS = 10;
const EVENTS = quick ? 1000 : 5000;
const REQUESTS = quick ? 50 : 200;
const PACED = quick ? 200 : 1000;

function workspace(prefix) {
  const dir = tempDir(prefix);
  const { workspace: ws } = initWorkspace(dir);
  SqliteStore.open(ws.dbPath, { create: true }).close();
  return { dir, ws };
}

// The writer: another process, as a `ratchet` CLI or a workflow run would be.
const WRITER = `
const { SqliteStore, BlobStore } = await import(${JSON.stringify(join(ROOT, "dist", "store", "index.js"))});
const { Ledger } = await import(${JSON.stringify(join(ROOT, "dist", "ledger", "index.js"))});
const [db, blobs, n, gapMs] = process.argv.slice(1);
const pause = new Int32Array(new SharedArrayBuffer(4));
const store = SqliteStore.open(db);
const ledger = new Ledger({ store, blobs: new BlobStore(blobs) });
const t = performance.now();
const start = performance.timeOrigin + t;
for (let i = 0; i < Number(n); i++) {
  // Metrics of the CLI need a project now; the bench's are project-less, as run-step's are.
  store.tx(() =>
    ledger.recordMetricInTx({ name: "bench", value: performance.timeOrigin + performance.now() }, { requireProject: false }),
  );
  if (Number(gapMs) > 0) Atomics.wait(pause, 0, 0, Number(gapMs));
}
process.stdout.write(JSON.stringify({ ms: performance.now() - t, start }));
store.close();
`;

function runWriter(ws, n, gapMs = 0) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [
      "--input-type=module",
      "-e",
      WRITER,
      ws.dbPath,
      ws.blobsDir,
      String(n),
      String(gapMs),
    ]);
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(err))));
  });
}

// The 10 SSE clients: one other process, so parsing frames does not compete with the server.
const CLIENTS_SCRIPT = `
const [url, n, expected] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
const lat = [];
let last = 0;
let done = 0;
async function client() {
  const res = await fetch(url + "/events");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let count = 0;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) return;
    const frames = (buf + value).split("\\n\\n");
    buf = frames.pop();
    for (const f of frames) {
      const line = f.split("\\n").find((l) => l.startsWith("data: "));
      if (!line) continue;
      const now = performance.timeOrigin + performance.now();
      lat.push(now - JSON.parse(line.slice(6)).payload.value);
      last = Math.max(last, now);
      if (++count === expected) {
        if (++done === n) {
          process.stdout.write(JSON.stringify({ lat, last }), () => process.exit(0));
        }
        return;
      }
    }
  }
}
for (let i = 0; i < n; i++) void client();
setTimeout(() => process.stdout.write("ready\\n"), 300);
`;

function startClients(url, expected) {
  const child = spawn(process.execPath, [
    "--input-type=module",
    "-e",
    CLIENTS_SCRIPT,
    url,
    String(CLIENTS),
    String(expected),
  ]);
  let out = "";
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  const ready = new Promise((resolve) => {
    child.stdout.on("data", (c) => {
      out += c;
      if (out.startsWith("ready\n")) resolve();
    });
  });
  const result = new Promise((resolve, reject) => {
    const watchdog = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`SSE clients did not receive all ${EVENTS} events within 120 s: ${err}`));
    }, 120_000);
    child.on("close", (code) => {
      clearTimeout(watchdog);
      code === 0
        ? resolve(JSON.parse(out.slice("ready\n".length)))
        : reject(new Error(`clients exited ${code}: ${err}`));
    });
  });
  return { ready, result };
}

async function liveEvents() {
  // Baseline: the writer alone.
  const base = workspace("sse-base");
  const alone = await runWriter(base.ws, EVENTS);
  rmSync(base.dir, { recursive: true, force: true });

  const { dir, ws } = workspace("sse");
  const server = await startServer({ workspace: ws, port: 0, token: "bench-token-0123456789abcdef" });
  const clients = startClients(server.url, EVENTS);
  await clients.ready;
  const wrote = await runWriter(ws, EVENTS);
  const { lat, last } = await clients.result;
  // Paced: one event every 5 ms (~200/s, a busy agent fleet), where latency is not queueing.
  const pacedClients = startClients(server.url, PACED);
  await pacedClients.ready;
  await runWriter(ws, PACED, 5);
  const paced = (await pacedClients.result).lat;
  await server.close();
  rmSync(dir, { recursive: true, force: true });
  const writeStart = wrote.start;
  const delivered = EVENTS / ((last - writeStart) / 1000);
  const writerRate = EVENTS / (alone.ms / 1000);
  return {
    "events written (one writer process)": EVENTS,
    "SSE clients (one other process)": CLIENTS,
    "writer alone, events/s (baseline)": writerRate,
    "writer while serving, events/s": EVENTS / (wrote.ms / 1000),
    "delivered to all 10 clients, events/s": delivered,
    "delivered ÷ writer alone": delivered / writerRate,
    "end-to-end latency at full speed p50 (ms)": percentile(lat, 50),
    "end-to-end latency at full speed p99 (ms)": percentile(lat, 99),
    "end-to-end latency paced ~200 events/s p50 (ms)": percentile(paced, 50),
    "end-to-end latency paced ~200 events/s p99 (ms)": percentile(paced, 99),
  };
}

/** A store with `plans` plans of 100 steps, a run and 100 metrics per plan, one event per step. */
function seed(ws, plans) {
  const store = SqliteStore.open(ws.dbPath);
  const db = store.db;
  const insPlan = db.prepare(
    "INSERT INTO plans (plan_id, goal, kind, status, max_revisions, created_at, updated_at) VALUES (?, ?, 'plan', ?, 5, ?, ?)",
  );
  const insStep = db.prepare(
    "INSERT INTO steps (step_id, plan_id, parent_step_id, seq, role, depth, title, type, status, created_at, updated_at, started_at, finished_at, duration_ms) VALUES (?, ?, NULL, ?, 'regular', 0, ?, 'CODE', 'COMPLETED', ?, ?, ?, ?, 1000)",
  );
  const insRun = db.prepare(
    "INSERT INTO workflow_runs (run_id, workflow_id, workflow_path, plan_id, trigger, status, owner, started_at, finished_at) VALUES (?, 'wf', '/nowhere/workflow.yaml', ?, 'manual', 'passed', '1@bench', ?, ?)",
  );
  const insMetric = db.prepare(
    "INSERT INTO metrics (name, value, plan_id, created_at) VALUES ('m', ?, ?, ?)",
  );
  const insEvent = db.prepare(
    "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES (?, 'step', ?, ?, 'step.completed', '{}')",
  );
  const t0 = Date.parse("2026-01-01T00:00:00Z");
  db.transaction(() => {
    for (let p = 0; p < plans; p++) {
      const at = new Date(t0 + p * 60_000).toISOString();
      const id = `plan-${String(p).padStart(6, "0")}`;
      insPlan.run(id, `goal ${p}`, "COMPLETED", at, at);
      insRun.run(`run-${String(p).padStart(14, "0")}-000000`, id, at, at);
      for (let s = 1; s <= 100; s++) {
        const sid = `${id}-S${s}`;
        insStep.run(sid, id, s, `step ${s}`, at, at, at, at);
        insMetric.run(s, id, at);
        insEvent.run(at, sid, id);
      }
    }
  })();
  store.close();
}

async function timeOne(url) {
  const t = performance.now();
  const r = await fetch(url);
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return performance.now() - t;
}

async function openStore(plans) {
  const { dir, ws } = workspace(`list-${plans}`);
  seed(ws, plans);
  const server = await startServer({ workspace: ws, port: 0, token: "bench-token-0123456789abcdef" });
  // A cursor in the middle of the chain: the page after the middle plan.
  const mid = `plan-${String(Math.floor(plans / 2)).padStart(6, "0")}`;
  const midAt = new Date(Date.parse("2026-01-01T00:00:00Z") + Math.floor(plans / 2) * 60_000).toISOString();
  const cursor = Buffer.from(JSON.stringify([midAt, mid])).toString("base64url");
  const paths = {
    "plans list, first page": "/api/plans?limit=50",
    "plans list, the page after the middle plan (cursor)": `/api/plans?limit=50&cursor=${cursor}`,
    "one plan (100 steps, tree order)": `/api/plans/${mid}`,
    "runs list, first page": "/api/runs?limit=50",
    "metrics list, first page": "/api/metrics?limit=50",
  };
  return { dir, server, paths };
}

/** Both stores served at once; requests alternate between them so machine noise hits both alike. */
async function lists() {
  const small = await openStore(10);
  const large = await openStore(1000);
  const out = {};
  for (const k of Object.keys(small.paths)) {
    const a = [];
    const b = [];
    for (let i = 0; i < 20; i++) {
      await timeOne(`${small.server.url}${small.paths[k]}`);
      await timeOne(`${large.server.url}${large.paths[k]}`);
    }
    for (let i = 0; i < REQUESTS; i++) {
      a.push(await timeOne(`${small.server.url}${small.paths[k]}`));
      b.push(await timeOne(`${large.server.url}${large.paths[k]}`));
    }
    out[k] = [median(a), median(b)];
  }
  for (const s of [small, large]) {
    await s.server.close();
    rmSync(s.dir, { recursive: true, force: true });
  }
  return out;
}

// (d) one write op through HTTP and MCP against `ratchet serve`, ÷ the same flow in-process.
// The served process's stderr (its request log, one line per request) goes to a file, read at the
// end: an agent does not read the server's log, and a pipe to this process would wake the client
// once more per op. BENCH_SERVE_LOG=pipe reads it through a pipe instead, as the first pass did.
async function serveAt(root, dir, token, name) {
  const nodeArgs = process.env.BENCH_SERVE_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const piped = process.env.BENCH_SERVE_LOG === "pipe";
  const logFile = join(dir, `serve-${name}.log`);
  const logFd = piped ? undefined : openSync(logFile, "w");
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(root, "bin", "ratchet.js"), "serve", "--port", "0"],
    {
      cwd: dir,
      env: { ...process.env, RATCHET_SERVER_TOKEN: token, RATCHET_NO_DAEMON: "1" },
      stdio: ["ignore", "pipe", piped ? "pipe" : logFd],
    },
  );
  if (logFd !== undefined) closeSync(logFd);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c) => (out += c));
  child.stderr?.setEncoding("utf8").on("data", (c) => (out += c));
  const log = () => (piped ? out : readFileSync(logFile, "utf8"));
  const t = Date.now();
  while (!/http:\/\/[^\s/"]+/.test(out)) {
    if (Date.now() - t > 30_000 || child.exitCode !== null) throw new Error(`ratchet serve: ${out}${log()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  // The request log (one line per request, with the time spent inside the app).
  const inApp = (path) =>
    [...log().matchAll(new RegExp(`POST ${path} 200 ([0-9.]+)ms`, "g"))].map((m) => Number(m[1]));
  return { child, url: /http:\/\/[^\s/"]+/.exec(out)[0], inApp };
}

async function ops() {
  const { Ledger, applyOp } = await import(join(ROOT, "dist", "ledger", "index.js"));
  const { BlobStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const N = quick ? 200 : 600;
  const WARM = 30;
  const roots = [["after", ROOT]];
  if (process.env.BENCH_BEFORE_ROOT) roots.push(["before", process.env.BENCH_BEFORE_ROOT]);
  const { dir, ws } = workspace("server-ops");
  const store = SqliteStore.open(ws.dbPath);
  const ledger = new Ledger({ store, blobs: new BlobStore(ws.blobsDir) });
  const need = (N + WARM) * (1 + 5 * roots.length) + (quick ? 100 : 300) * 5 * roots.length;
  const ids = [];
  for (let i = 0; ids.length < need; i++)
    ids.push(
      ...ledger.publish({
        goal: `ops bench ${i}`,
        steps: Array.from({ length: 200 }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
      }).step_ids,
    );
  const token = "bench-token-0123456789abcdef";
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  // The same POST through node:http with a keep-alive agent (one socket): the client's own cost
  // is smaller than fetch's, so this is closer to what the server takes.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (url, body, extra = {}) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: "POST",
          agent,
          headers: { ...headers, ...extra, "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  // A FetchLike over node:http and its own keep-alive agent (one socket), for the MCP SDK client's
  // transport (its `fetch` option): the same SDK client, without undici's fetch in the client.
  const mcpAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const nodeFetch = (url, init = {}) =>
    new Promise((resolve, reject) => {
      const h = new Headers(init.headers);
      const body = init.body ?? null;
      if (body !== null) h.set("content-length", String(Buffer.byteLength(body)));
      const req = httpRequest(
        String(url),
        { method: init.method ?? "GET", agent: mcpAgent, headers: Object.fromEntries(h) },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            const out = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              for (const one of [v].flat()) if (one !== undefined) out.append(k, one);
            const status = res.statusCode ?? 0;
            const empty = status === 204 || status === 304;
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: out }));
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body ?? undefined);
    });
  const servers = [];
  for (const [name, root] of roots) {
    const s = await serveAt(root, dir, token, name);
    const client = new Client({ name: "bench", version: "0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
        requestInit: { headers: { authorization: headers.authorization } },
      }),
    );
    const nodeClient = new Client({ name: "bench-node-http", version: "0" });
    await nodeClient.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
        requestInit: { headers: { authorization: headers.authorization } },
        fetch: nodeFetch,
      }),
    );
    servers.push({ name, ...s, client, nodeClient, h: [], m: [], r: [], n: [], j: [] });
  }
  const inproc = async () => {
    const t0 = performance.now();
    const r = await applyOp(ledger, "start-step", { step_id: ids.shift() }, { cwd: dir });
    const ms = performance.now() - t0;
    if (!r.ok) throw new Error(`in-process start-step: ${JSON.stringify(r)}`);
    return ms;
  };
  const http = async (s) => {
    const t0 = performance.now();
    const res = await fetch(`${s.url}/api/flows/start-step`, {
      method: "POST",
      headers,
      body: JSON.stringify({ step_id: ids.shift() }),
    });
    const body = await res.json();
    const ms = performance.now() - t0;
    if (!body.ok) throw new Error(`HTTP start-step (${s.name}): ${JSON.stringify(body)}`);
    return ms;
  };
  const raw = async (s) => {
    const body = JSON.stringify({ step_id: ids.shift() });
    const t0 = performance.now();
    const text = await post(`${s.url}/api/flows/start-step`, body);
    const ms = performance.now() - t0;
    if (!JSON.parse(text).ok) throw new Error(`node:http start-step (${s.name}): ${text}`);
    return ms;
  };
  const mcp = async (s, client = s.client) => {
    const t0 = performance.now();
    const r = await client.callTool({ name: "start_step", arguments: { step_id: ids.shift() } });
    const ms = performance.now() - t0;
    if (r.isError) throw new Error(`MCP start_step (${s.name}): ${JSON.stringify(r)}`);
    return ms;
  };
  // The JSON-RPC request the SDK client sends, written by hand over node:http (no client library):
  // what is left is the server and the socket.
  let rpcId = 1_000_000;
  const rpc = async (s) => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: rpcId++,
      method: "tools/call",
      params: { name: "start_step", arguments: { step_id: ids.shift() } },
    });
    const t0 = performance.now();
    const text = await post(`${s.url}/mcp`, body, {
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": s.client.transport?.protocolVersion ?? "2025-06-18",
    });
    const ms = performance.now() - t0;
    const reply = JSON.parse(text);
    if (reply.error || reply.result?.isError) throw new Error(`JSON-RPC start_step (${s.name}): ${text}`);
    return ms;
  };
  // Every op of every route (and the baseline) in one rotation, shifted by one each round: each
  // write wakes the event hub of both servers (they watch the same database), so whichever op comes
  // first after a write would otherwise always meet a busy server.
  const base = [];
  const cells = [
    [base, inproc],
    ...servers.flatMap((s) => [
      [s.h, () => http(s)],
      [s.r, () => raw(s)],
      [s.m, () => mcp(s)],
      [s.n, () => mcp(s, s.nodeClient)],
      [s.j, () => rpc(s)],
    ]),
  ];
  for (let i = 0; i < N + WARM; i++)
    for (let k = 0; k < cells.length; k++) {
      const [into, f] = cells[(i + k) % cells.length];
      const ms = await f();
      if (i >= WARM) into.push(ms);
    }
  // CPU per op, each route in blocks of CPU_BLOCK ops (rounds alternate the routes and servers, so
  // load falls on all alike): the client's from process.cpuUsage, the server's from its
  // /proc/<pid>/stat (utime + stime, in clock ticks of 10 ms, summed over all its ops of a route).
  const CPU_OPS = quick ? 100 : 300;
  const CPU_BLOCK = 20;
  const ticks = (pid) => {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(f[11]) + Number(f[12]);
  };
  const routes = {
    http: (s) => http(s),
    raw: (s) => raw(s),
    mcp: (s) => mcp(s),
    mcpNode: (s) => mcp(s, s.nodeClient),
    rpc: (s) => rpc(s),
  };
  for (const s of servers)
    s.cpu = Object.fromEntries(Object.keys(routes).map((k) => [k, { client: 0, server: 0, ops: 0 }]));
  const canTick = existsSync(`/proc/${process.pid}/stat`);
  for (let done = 0; done < CPU_OPS; done += CPU_BLOCK)
    for (const s of servers)
      for (const [k, f] of Object.entries(routes)) {
        const t0 = canTick ? ticks(s.child.pid) : 0;
        const c0 = process.cpuUsage();
        for (let i = 0; i < CPU_BLOCK; i++) await f(s);
        const c = process.cpuUsage(c0);
        const cell = s.cpu[k];
        cell.client += (c.user + c.system) / 1000;
        cell.server += canTick ? (ticks(s.child.pid) - t0) * 10 : Number.NaN;
        cell.ops += CPU_BLOCK;
      }
  const out = {
    "ops: in-process applyOp start-step p50 (ms)": median(base),
    "ops: in-process p95 (ms)": percentile(base, 95),
  };
  for (const s of servers) {
    const tag = s.name === "after" ? "" : ` [${s.name}: ${process.env.BENCH_BEFORE_ROOT}]`;
    out[`ops: HTTP POST /api/flows/start-step p50 (ms)${tag}`] = median(s.h);
    out[`ops: HTTP p95 (ms)${tag}`] = percentile(s.h, 95);
    out[`ops: HTTP p50 ÷ in-process${tag}`] = median(s.h) / median(base);
    out[`ops: HTTP via node:http keep-alive agent p50 (ms)${tag}`] = median(s.r);
    out[`ops: HTTP via node:http p95 (ms)${tag}`] = percentile(s.r, 95);
    out[`ops: MCP tools/call start_step p50 (ms)${tag}`] = median(s.m);
    out[`ops: MCP p95 (ms)${tag}`] = percentile(s.m, 95);
    out[`ops: MCP, SDK client over node:http keep-alive p50 (ms)${tag}`] = median(s.n);
    out[`ops: MCP, SDK client over node:http p95 (ms)${tag}`] = percentile(s.n, 95);
    out[`ops: MCP, JSON-RPC by hand over node:http p50 (ms)${tag}`] = median(s.j);
    const appH = s.inApp("/api/flows/start-step").slice(2 * WARM);
    // Each client's initialize (200; its notification answers 202), then three MCP routes per op.
    const appM = s.inApp("/mcp").slice(3 * WARM + 2);
    out[`ops: HTTP inside the server's app p50 (ms)${tag}`] = median(appH);
    out[`ops: MCP inside the server's app p50 (ms)${tag}`] = median(appM);
    out[`ops: MCP p50 ÷ in-process${tag}`] = median(s.m) / median(base);
    const names = {
      http: "HTTP fetch",
      raw: "HTTP node:http",
      mcp: "MCP SDK client",
      mcpNode: "MCP SDK client over node:http",
      rpc: "MCP JSON-RPC by hand",
    };
    for (const [k, name] of Object.entries(names)) {
      const cell = s.cpu[k];
      out[`ops: CPU per op, ${name}: client / server (ms)${tag}`] =
        `${fmt(cell.client / cell.ops, 3)} / ${fmt(cell.server / cell.ops, 3)}`;
    }
    await s.client.close();
    await s.nodeClient.close();
    s.child.kill("SIGTERM");
    await new Promise((r) => (s.child.exitCode !== null ? r() : s.child.once("exit", r)));
  }
  agent.destroy();
  mcpAgent.destroy();
  const after = servers[0];
  const verdict = (a, b) => (Math.max(a, b) <= 2 ? "met" : "MISSED");
  out["target: HTTP and MCP ≤ 2 ms p50 (fetch; the SDK client as it comes)"] = verdict(
    median(after.h),
    median(after.m),
  );
  out["target: HTTP and MCP ≤ 2 ms p50 (node:http; the SDK client over it)"] = verdict(
    median(after.r),
    median(after.n),
  );
  out[`ops: samples`] = `${N} per route, after ${WARM} warm-up ops; CPU over ${CPU_OPS} more per route`;
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

const only = process.env.BENCH_ONLY?.split(",");
const figures = {};
let frameP50;
if (!only || only.includes("events")) {
  const live = await liveEvents();
  Object.assign(figures, live);
  frameP50 = live["end-to-end latency paced ~200 events/s p50 (ms)"];
}
if (!only || only.includes("lists")) {
  const listed = await lists();
  for (const [k, [small, large]] of Object.entries(listed)) {
    figures[`${k}: 1,000 steps p50 (ms)`] = small;
    figures[`${k}: 100,000 steps p50 (ms)`] = large;
    figures[`${k}: 100k ÷ 1k`] = large / small;
  }
}
if (!only || only.includes("dashboard")) {
  const { dashboard } = await import("./server-dashboard.mjs");
  Object.assign(figures, await dashboard({ quick, workspace, frameP50, startServer }));
}
if (!only || only.includes("ops")) Object.assign(figures, await ops());
report(only ? `server-${only.join("-")}` : "server", figures);
console.log(`\n  (${fmt(REQUESTS, 0)} sequential requests per endpoint; the machine may be shared)`);
