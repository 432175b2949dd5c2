/**
 * The queue through the BUILT CLI (issue 17): one real PostgreSQL server (test/harness/pg.ts), an
 * enqueuing folder that holds the workflows, and worker folders that share no folder with it (no
 * copy of the workflow: they run the bundle stored in the database). No model is configured
 * anywhere, so a model request could not even be made: every step must run its learned script.
 *
 * - 50 queued learned runs on two `ratchet worker` processes: each executed exactly once (run
 *   rows, step rows, events counted), by both workers, zero tokens.
 * - The workspace write lock held by another session until a claim's wait is cut by the worker's
 *   statement_timeout (a loaded database): the runs stay queued, are taken again, each passes once.
 *   (The CI flake: such a cut used to leave the worker's session in an aborted transaction, so it
 *   failed every job it took and graphile gave up on them — runs queued forever.)
 * - `kill -9` of a worker mid-run: the run ends interrupted (found by the other worker), and the
 *   job handed out again does not execute it a second time.
 * - A stalled worker (SIGSTOP) whose lease expires: another process marks the run interrupted by
 *   lease; the woken worker does not overwrite that ending.
 * - A scheduled workflow fires on its schedule: the slot clock is moved back in graphile's
 *   `known_crontabs` (five minutes pass with no worker up), two workers backfill at once, the slot's
 *   run is recorded once with trigger=schedule and passes.
 * - Refusals: no PostgreSQL store, no queue, bad flags, a bad schedule; a cancelled queued run is
 *   never executed.
 */
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { WORKSPACE_WRITE_LOCK } from "../../src/store/postgres/open.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  makeTempDir,
  mapLimit,
  parseMarker,
  type RunningCli,
  ratchet,
  waitFor,
} from "../helpers/cli.js";
import { cliJson, pgRows, queueMachines } from "../helpers/queue-machine.js";

const TEST_TIMEOUT_MS = 300_000;
vi.setConfig({ testTimeout: TEST_TIMEOUT_MS, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const running: RunningCli[] = [];
const SECRETS = { SECRET_API_TOKEN: "tok-queue-not-for-logs" };

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(() => {
  for (const r of running) r.child.kill("SIGKILL");
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const machine = queueMachines({
  prefix: "ratchet-queue-",
  env: SECRETS,
  runTimeoutMs: 150_000,
  dirs,
  running,
});
const rows = pgRows;
const json = cliJson;
const count = (url: string, sql: string, params: string[] = []) =>
  rows<{ n: number }>(url, sql, params)[0]?.n ?? -1;

async function enqueue(m: ReturnType<typeof machine>, args: readonly string[]): Promise<string> {
  const r = await m.run(["run", ...args, "--queue", "--json"]);
  expect(r.status, r.stderr + r.stdout).toBe(0);
  const q = json<{ run_id: string; status: string; bundle_hash: string }>(r);
  expect(q.status).toBe("queued");
  return q.run_id;
}

async function stopWorker(w: RunningCli): Promise<{ executed: Record<string, number>; skipped: number }> {
  w.child.kill("SIGTERM");
  const r = await w.done;
  expect(r.status, r.stderr).toBe(0);
  const m = parseMarker(r.stdout) as { executed: Record<string, number>; skipped: number } | undefined;
  expect(m, r.stdout + r.stderr).toBeDefined();
  return m as { executed: Record<string, number>; skipped: number };
}

/**
 * Waits until no run of the database is `queued` or `running`. On a timeout the error carries what
 * explains it: progress over time, the unfinished runs with their leases, graphile's job rows, and
 * each worker's exit and log tail (timestamped relative to the start of the wait).
 */
async function waitForRuns(
  url: string,
  workers: Record<string, RunningCli>,
  timeoutMs: number,
): Promise<void> {
  const t0 = Date.now();
  const logs: Record<string, string[]> = {};
  for (const [name, w] of Object.entries(workers)) {
    const lines: string[] = [];
    logs[name] = lines;
    let partial = "";
    w.child.stderr?.on("data", (c: string | Buffer) => {
      const parts = (partial + String(c)).split("\n");
      partial = parts.pop() ?? "";
      for (const l of parts) lines.push(`+${((Date.now() - t0) / 1000).toFixed(1)}s ${l}`);
    });
  }
  const progress: string[] = [];
  let last = "";
  try {
    await waitFor(
      () => {
        const by = rows<{ status: string; n: number }>(
          url,
          "SELECT status, COUNT(*)::int AS n FROM workflow_runs GROUP BY status ORDER BY status",
        );
        const line = by.map((r) => `${r.status}=${r.n}`).join(" ");
        if (line !== last) progress.push(`+${((Date.now() - t0) / 1000).toFixed(1)}s ${line}`);
        last = line;
        return by.every((r) => r.status !== "queued" && r.status !== "running");
      },
      "all runs to finish",
      timeoutMs,
      250,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${JSON.stringify(dump(), null, 1)}`);
  }
  function dump() {
    return {
      progress,
      unfinished: rows(
        url,
        "SELECT run_id, status, owner, started_at, heartbeat_at, lease_expires_at - (extract(epoch FROM now()) * 1000)::bigint AS lease_left_ms FROM workflow_runs WHERE status IN ('queued', 'running') ORDER BY run_id",
      ),
      jobs: rows(
        url,
        "SELECT id, task_identifier, key, queue_name, attempts, max_attempts, run_at, locked_at, locked_by, last_error, now() AS db_now FROM graphile_worker.jobs ORDER BY id",
      ),
      database: rows(
        url,
        "SELECT xact_commit, xact_rollback, (SELECT wal_sync FROM pg_stat_wal) AS wal_sync, (SELECT wal_records FROM pg_stat_wal) AS wal_records FROM pg_stat_database WHERE datname = current_database()",
      ),
      runTimes: rows(
        url,
        "SELECT run_id, owner, started_at, finished_at FROM workflow_runs ORDER BY started_at",
      ),
      workers: Object.fromEntries(
        Object.entries(workers).map(([name, w]) => [
          name,
          {
            exit: w.child.exitCode,
            signal: w.child.signalCode,
            stdout: w.stdoutSoFar().slice(-2000),
            stderr: (logs[name] ?? []).slice(-60),
          },
        ]),
      ),
    };
  }
}

describe.runIf(pgAvailable())("ratchet worker and the queue on PostgreSQL", () => {
  test("50 queued learned runs on two workers in separate folders: each executed exactly once, zero tokens", async () => {
    // The wait for the runs ends before the test's own timeout, so a slow drain prints its dump.
    const deadline = Date.now() + TEST_TIMEOUT_MS - 30_000;
    const url = cluster.createDatabase();
    const enq = machine(url, ["pipeline"]);
    const w1 = machine(url);
    const w2 = machine(url);
    // The first enqueue installs graphile-worker's schema; the rest go 6 at a time.
    const ids = [await enqueue(enq, [enq.wf("pipeline"), "--group", "small"])];
    ids.push(
      ...(await mapLimit(Array.from({ length: 49 }), 6, () =>
        enqueue(enq, [enq.wf("pipeline"), "--group", "small"]),
      )),
    );
    expect(new Set(ids).size).toBe(50);
    expect(count(url, "SELECT COUNT(*)::int AS n FROM workflow_runs WHERE status = 'queued'")).toBe(50);
    // Queued runs are listed with their status before any worker runs.
    const listed = await enq.run(["runs", "list", "--status", "queued", "--limit", "100", "--json"]);
    expect(json<unknown[]>(listed)).toHaveLength(50);

    const a = w1.start(["worker", "--concurrency", "2", "--json"]);
    const b = w2.start(["worker", "--concurrency", "2", "--json"]);
    await waitForRuns(url, { w1: a, w2: b }, Math.max(60_000, deadline - Date.now()));
    const [sa, sb] = [await stopWorker(a), await stopWorker(b)];
    const why = JSON.stringify({
      sa,
      sb,
      errors: rows(
        url,
        "SELECT step_id, outcome, error FROM workflow_step_runs WHERE outcome <> 'passed' LIMIT 2",
      ),
    });
    expect((sa.executed.passed ?? 0) + (sb.executed.passed ?? 0), why).toBe(50);
    expect(sa.skipped + sb.skipped).toBe(0);

    const byStatus = rows<{ status: string; n: number }>(
      url,
      "SELECT status, COUNT(*)::int AS n FROM workflow_runs GROUP BY status",
    );
    expect(byStatus).toEqual([{ status: "passed", n: 50 }]);
    // Both workers executed runs (two owners), each run's steps once, by the saved scripts, 0 tokens.
    expect(count(url, "SELECT COUNT(DISTINCT owner)::int AS n FROM workflow_runs")).toBe(2);
    expect(count(url, "SELECT COUNT(*)::int AS n FROM workflow_step_runs")).toBe(100);
    expect(
      count(
        url,
        "SELECT COUNT(*)::int AS n FROM workflow_step_runs WHERE outcome = 'passed' AND fast_path = 1 AND tokens = 0",
      ),
    ).toBe(100);
    const events = Object.fromEntries(
      rows<{ type: string; n: number }>(
        url,
        "SELECT type, COUNT(*)::int AS n FROM events WHERE entity_kind = 'run' GROUP BY type",
      ).map((r) => [r.type, r.n]),
    );
    expect(events).toEqual({
      "run.queued": 50,
      "run.started": 50,
      "run.step_finished": 100,
      "run.finished": 50,
    });
    // Each run's ledger plan completed; no job is left in graphile-worker's table.
    expect(
      count(
        url,
        "SELECT COUNT(*)::int AS n FROM plans WHERE status = 'COMPLETED' AND plan_id IN (SELECT plan_id FROM workflow_runs)",
      ),
    ).toBe(50);
    expect(count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs")).toBe(0);
    // The workers ran the bundle from their own cache: neither has a copy of the workflow folder.
    for (const w of [w1, w2]) {
      expect(existsSync(join(w.dir, "workflows"))).toBe(false);
      expect(
        readdirSync(join(w.dir, ".ratchet-worker", "bundles")).filter((f) => !f.startsWith(".")),
      ).toHaveLength(1);
    }
    const show = json<{ status: string; steps: { fast_path: boolean }[] }>(
      await w2.run(["runs", "show", ids[7] as string, "--json"]),
    );
    expect(show.status).toBe("passed");
  });

  test("the store busy before the claim (the write lock held past statement_timeout): the runs stay queued, are taken again, and each passes once", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["pipeline"]);
    const w = machine(url);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await enqueue(enq, [enq.wf("pipeline"), "--group", "small"]));
    // Another writer holds the workspace write lock (a stalled process on a loaded machine): every
    // claim waits for it until the worker's statement_timeout (30 s) cuts the wait.
    const holder = PgStore.open(url);
    let held = true;
    try {
      holder.pg.exec(`BEGIN; SELECT pg_advisory_xact_lock(${WORKSPACE_WRITE_LOCK})`);
      const a = w.start(["worker", "--concurrency", "2", "--json"]);
      // The first claim waiting for the lock (its statement's start), then until that wait is cut.
      const waiting = () =>
        rows<{ started: string }>(
          url,
          "SELECT a.query_start::text AS started FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND NOT l.granted ORDER BY a.query_start",
        ).map((r) => r.started);
      let first: string | undefined;
      await waitFor(
        () => {
          first = waiting()[0];
          return first !== undefined;
        },
        "a claim to wait for the held lock",
        90_000,
        200,
      );
      await waitFor(
        () => !waiting().includes(first as string),
        "statement_timeout to cut that wait",
        90_000,
        200,
      );
      holder.pg.exec("COMMIT");
      held = false;
      await waitForRuns(url, { worker: a }, 120_000);
      const summary = (await stopWorker(a)) as {
        executed: Record<string, number>;
        skipped: number;
        retried: number;
      };
      expect(summary.retried).toBeGreaterThanOrEqual(1);
      expect(summary.executed).toEqual({ passed: 3 });
      expect(summary.skipped).toBe(0);
    } finally {
      if (held) holder.pg.exec("ROLLBACK");
      holder.close();
    }
    expect(rows(url, "SELECT status, COUNT(*)::int AS n FROM workflow_runs GROUP BY status")).toEqual([
      { status: "passed", n: 3 },
    ]);
    const events = Object.fromEntries(
      rows<{ type: string; n: number }>(
        url,
        "SELECT type, COUNT(*)::int AS n FROM events WHERE entity_kind = 'run' GROUP BY type",
      ).map((r) => [r.type, r.n]),
    );
    expect(events).toEqual({ "run.queued": 3, "run.started": 3, "run.step_finished": 6, "run.finished": 3 });
    expect(count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs")).toBe(0);
  });

  test("kill -9 of a worker mid-run: the run ends interrupted once; the job handed out again does not run it twice", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    const wa = machine(url);
    const wb = machine(url);
    const runId = await enqueue(enq, [enq.wf("slow"), "--var", "sleep=120"]);
    const a = wa.start(["worker"]);
    await waitFor(
      () =>
        count(
          url,
          "SELECT COUNT(*)::int AS n FROM workflow_step_runs s JOIN workflow_runs r USING (run_id) WHERE r.run_id = $1 AND r.status = 'running' AND s.started_at IS NOT NULL",
          [runId],
        ) === 1,
      "the worker to start the sleeper",
      60_000,
    );
    a.child.kill("SIGKILL");
    await a.done.catch(() => undefined);
    // The other worker (another folder) finds the dead owner and closes the run.
    const b = wb.start(["worker", "--json"]);
    await waitFor(
      () =>
        rows<{ status: string }>(url, "SELECT status FROM workflow_runs WHERE run_id = $1", [runId])[0]
          ?.status === "interrupted",
      "the run to be marked interrupted",
      60_000,
      200,
    );
    // graphile-worker still holds the dead worker's job locked; hand it out again, as a retry would.
    rows(url, "UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL, run_at = now()");
    await waitFor(
      () => count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs") === 0,
      "the re-handed job to complete",
      60_000,
      200,
    );
    const summary = await stopWorker(b);
    expect(summary.skipped).toBe(1);
    expect(summary.executed).toEqual({});
    const types = rows<{ type: string }>(
      url,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = $1 ORDER BY id",
      [runId],
    ).map((e) => e.type);
    expect(types).toEqual(["run.queued", "run.started", "run.interrupted"]);
    const show = json<{ status: string; plan_id: string; steps: { step_id: string; outcome: string }[] }>(
      await enq.run(["runs", "show", runId, "--json"]),
    );
    expect(show.status).toBe("interrupted");
    expect(show.steps.map((s) => [s.step_id, s.outcome])).toEqual([["sleeper", "interrupted"]]);
    expect(
      count(
        url,
        "SELECT COUNT(*)::int AS n FROM steps WHERE plan_id = $1 AND role = 'regular' AND status IN ('PENDING', 'IN_PROGRESS')",
        [show.plan_id],
      ),
    ).toBe(0);
  });

  test("a stalled worker whose lease expires: another process marks the run interrupted by lease; the woken worker keeps that ending", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    const wa = machine(url);
    const runId = await enqueue(enq, [enq.wf("slow"), "--var", "sleep=30"]);
    const a = wa.start(["worker", "--lease-seconds", "2", "--json"]);
    await waitFor(
      () =>
        count(
          url,
          "SELECT COUNT(*)::int AS n FROM workflow_step_runs WHERE run_id = $1 AND started_at IS NOT NULL",
          [runId],
        ) === 1,
      "the worker to start the sleeper",
      60_000,
    );
    // The worker process is alive (its pid exists) but makes no progress: only the lease can tell.
    a.child.kill("SIGSTOP");
    await waitFor(
      async () => {
        await enq.run(["runs", "list", "--json"]);
        return (
          rows<{ status: string }>(url, "SELECT status FROM workflow_runs WHERE run_id = $1", [runId])[0]
            ?.status === "interrupted"
        );
      },
      "the lease to expire and a reader to mark the run",
      60_000,
      500,
    );
    const [row] = rows<{ error: string }>(url, "SELECT error FROM workflow_runs WHERE run_id = $1", [runId]);
    expect(row?.error).toContain("lease");
    a.child.kill("SIGCONT");
    // Its next heartbeat finds the lease gone: it aborts the run and leaves the first ending alone.
    await waitFor(
      () => count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs") === 0,
      "the woken worker to give the job up",
      60_000,
      200,
    );
    await stopWorker(a);
    const types = rows<{ type: string }>(
      url,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = $1 ORDER BY id",
      [runId],
    ).map((e) => e.type);
    expect(types).toEqual(["run.queued", "run.started", "run.interrupted"]);
    expect(
      rows<{ status: string }>(url, "SELECT status FROM workflow_runs WHERE run_id = $1", [runId])[0]?.status,
    ).toBe("interrupted");
  });

  test("SIGTERM lets the running run finish; a second SIGTERM interrupts it", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    const w = machine(url);
    const started = (id: string) =>
      count(
        url,
        "SELECT COUNT(*)::int AS n FROM workflow_step_runs WHERE run_id = $1 AND started_at IS NOT NULL",
        [id],
      ) === 1;
    const first = await enqueue(enq, [enq.wf("slow"), "--var", "sleep=3"]);
    const a = w.start(["worker", "--json"]);
    await waitFor(() => started(first), "the first run to start", 60_000);
    a.child.kill("SIGTERM");
    const ra = await a.done;
    expect(ra.status, ra.stderr).toBe(0);
    expect(parseMarker(ra.stdout)).toMatchObject({ executed: { passed: 1 } });
    const second = await enqueue(enq, [enq.wf("slow"), "--var", "sleep=120"]);
    const b = w.start(["worker", "--json"]);
    await waitFor(() => started(second), "the second run to start", 60_000);
    b.child.kill("SIGTERM");
    await waitFor(() => b.stderrSoFar().includes("taking no more jobs"), "the first signal to be taken");
    b.child.kill("SIGTERM");
    const rb = await b.done;
    expect(rb.status, rb.stderr).toBe(0);
    const status = (id: string) =>
      rows<{ status: string }>(url, "SELECT status FROM workflow_runs WHERE run_id = $1", [id])[0]?.status;
    expect([status(first), status(second)]).toEqual(["passed", "interrupted"]);
  });

  test("enqueueOrStart (the server's and the webhook's entry): queued with a queue, the caller's own start without", async () => {
    const url = cluster.createDatabase();
    const { enqueueOrStart } = await import("../../src/queue/index.js");
    const { DbBlobStore } = await import("../../src/store/index.js");
    const { loadWorkflow } = await import("../../src/workflow/index.js");
    const enq = machine(url, ["slow"]);
    const store = PgStore.open(url);
    try {
      const ctx = {
        store,
        blobs: new DbBlobStore(store),
        workspace: {
          root: enq.dir,
          dir: join(enq.dir, ".ratchet"),
          dbPath: url,
          blobsDir: "",
          storeUrl: url,
        },
      };
      const wf = loadWorkflow(join(enq.wf("slow"), "workflow.yaml"));
      let local = 0;
      const start = async () => {
        local++;
        return { run_id: "local", plan_id: "pl", workflow_id: wf.id };
      };
      const q = await enqueueOrStart(ctx, { workflow: wf, trigger: "webhook" }, start, {
        RATCHET_QUEUE: "1",
      });
      expect(q).toMatchObject({ queued: true, status: "queued", workflow_id: "slow" });
      const off = await enqueueOrStart(ctx, { workflow: wf }, start, { RATCHET_QUEUE: "0" });
      expect(off).toEqual({ queued: false, run_id: "local", plan_id: "pl", workflow_id: wf.id });
      expect(local).toBe(1);
      const row = store.pg.query<{ status: string; trigger: string }>(
        "SELECT status, trigger FROM workflow_runs WHERE run_id = $1",
        [q.run_id],
      ).rows[0];
      expect(row).toEqual({ status: "queued", trigger: "webhook" });
      // The job and the row committed together: one job keyed by the run id.
      expect(
        store.pg
          .query<{ key: string }>("SELECT key FROM graphile_worker._private_jobs")
          .rows.map((r) => r.key),
      ).toEqual([q.run_id]);
      // A refused request writes nothing: no row, no job, no blob.
      const blobs = store.pg.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM blobs").rows[0]?.n;
      await expect(
        enqueueOrStart(ctx, { workflow: wf, only: ["nope"] }, start, { RATCHET_QUEUE: "1" }),
      ).rejects.toThrow(/nope/);
      expect(store.pg.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM workflow_runs").rows[0]?.n).toBe(
        1,
      );
      expect(store.pg.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM blobs").rows[0]?.n).toBe(blobs);
    } finally {
      store.close();
    }
  });

  test("a scheduled workflow fires on its schedule: one run per slot with trigger=schedule, across two workers", async () => {
    const url = cluster.createDatabase();
    const scheduled = () => {
      const m = machine(url, ["slow"]);
      writeFileSync(
        join(m.wf("slow"), "workflow.yaml"),
        `id: tick\nschedule: "* * * * *"\nvariables:\n  sleep:\n    default: "0"\nsteps:\n  - id: sleeper\n    description: Marks that it started, then writes its output\n    agent_configs:\n      declared_execution_mode: learn_code\n`,
      );
      return m;
    };
    const m1 = scheduled();
    const m2 = scheduled();
    // First start: the schedule becomes known to graphile-worker (no slot has passed yet).
    const first = await m1.run(["worker", "--once", "--workflows", join(m1.dir, "workflows"), "--json"]);
    expect(first.status, first.stderr).toBe(0);
    expect(count(url, "SELECT COUNT(*)::int AS n FROM workflow_runs")).toBe(0);
    expect(
      rows<{ identifier: string }>(url, "SELECT identifier FROM graphile_worker._private_known_crontabs").map(
        (r) => r.identifier,
      ),
    ).toEqual(["ratchet:schedule:tick"]);
    // The test clock: five minutes pass with no worker up. Two workers then start at once and fire
    // the slots of the last minute they missed (--backfill 60): graphile adds each slot's job once.
    rows(
      url,
      "UPDATE graphile_worker._private_known_crontabs SET known_since = now() - interval '5 minutes', last_execution = now() - interval '5 minutes'",
    );
    const [r1, r2] = await Promise.all(
      [m1, m2].map((m) =>
        m.run(["worker", "--once", "--workflows", join(m.dir, "workflows"), "--backfill", "60", "--json"]),
      ),
    );
    expect(r1?.status, r1?.stderr).toBe(0);
    expect(r2?.status, r2?.stderr).toBe(0);
    const runs = rows<{ run_id: string; status: string; trigger: string; workflow_id: string }>(
      url,
      "SELECT run_id, status, trigger, workflow_id FROM workflow_runs ORDER BY run_id",
    );
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.length).toBeLessThanOrEqual(2); // a minute boundary may pass between the two starts
    for (const r of runs)
      expect(r).toMatchObject({ status: "passed", trigger: "schedule", workflow_id: "tick" });
    // One run per slot: the run id carries the slot's time, and no slot has two.
    const slots = runs.map((r) => r.run_id.slice(0, "run-YYYYMMDDHHMMSS".length));
    expect(new Set(slots).size).toBe(runs.length);
    expect(slots.every((s) => s.endsWith("00"))).toBe(true); // slots fall on the minute
  });

  test("refusals: no PostgreSQL store, no queue, bad flags, a bad schedule; a cancelled queued run is never executed", async () => {
    const url = cluster.createDatabase();
    const m = machine(url, ["slow"]);
    // A SQLite workspace: exit 2 naming the store; nothing is created.
    const sqliteDir = makeTempDir("ratchet-queue-sqlite-");
    dirs.push(sqliteDir);
    const init = await ratchet(["init"], { cwd: sqliteDir });
    expect(init.status).toBe(0);
    for (const args of [
      ["worker", "--once"],
      ["run", join(m.wf("slow")), "--queue"],
    ]) {
      const r = await ratchet(args, { cwd: sqliteDir, env: { RATCHET_QUEUE: "1" } });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain("PostgreSQL");
      expect(r.stderr).toMatch(/store/);
    }
    // PostgreSQL without a queue: exit 2 naming queue; nothing recorded.
    const noQueue = await m.run(["run", m.wf("slow"), "--queue"], { RATCHET_QUEUE: undefined });
    expect(noQueue.status).toBe(2);
    expect(noQueue.stderr).toContain('"queue"');
    expect((await m.run(["worker", "--once"], { RATCHET_QUEUE: "0" })).status).toBe(2);
    expect((await m.run(["worker", "--once"], { RATCHET_QUEUE: "yes" })).status).toBe(2);
    for (const bad of [
      ["--concurrency", "0"],
      ["--concurrency", "x"],
      ["--queue", "Bad Name"],
      ["--lease-seconds", "0"],
    ]) {
      const r = await m.run(["worker", "--once", ...bad]);
      expect(r.status, `${bad.join(" ")}: ${r.stderr}`).toBe(2);
    }
    expect((await m.run(["run", m.wf("slow"), "--wait"])).status).toBe(2);
    expect((await m.run(["run", m.wf("slow"), "--queue", "--only", "nope"])).status).not.toBe(0);
    expect(count(url, "SELECT COUNT(*)::int AS n FROM workflow_runs")).toBe(0);
    // A bad schedule: exit 2 naming schedule.
    writeFileSync(
      join(m.wf("slow"), "workflow.yaml"),
      `id: slow\nschedule: "61 * * * *"\nsteps:\n  - id: sleeper\n    description: x\n    agent_configs:\n      declared_execution_mode: learn_code\n`,
    );
    const badSchedule = await m.run(["worker", "--once", "--workflows", join(m.dir, "workflows")]);
    expect(badSchedule.status).toBe(2);
    expect(badSchedule.stderr).toContain("schedule");
    writeFileSync(
      join(m.wf("slow"), "workflow.yaml"),
      `id: slow\nvariables:\n  sleep:\n    default: "0"\nsteps:\n  - id: sleeper\n    description: x\n    agent_configs:\n      declared_execution_mode: learn_code\n`,
    );
    // A queued run cancelled before any worker claims it: the worker's job skips it.
    const runId = await enqueue(m, [m.wf("slow")]);
    const cancel = await m.run(["runs", "cancel", runId, "--json"]);
    expect(cancel.status, cancel.stderr).toBe(0);
    const w = machine(url);
    const once = await w.run(["worker", "--once", "--json"]);
    expect(once.status, once.stderr).toBe(0);
    expect(parseMarker(once.stdout)).toMatchObject({ skipped: 1, executed: {} });
    const types = rows<{ type: string }>(
      url,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = $1 ORDER BY id",
      [runId],
    ).map((e) => e.type);
    expect(types).toEqual(["run.queued", "run.cancelled"]);
    // serial: true — the workflow's runs share one graphile queue (one at a time across workers).
    writeFileSync(
      join(m.wf("slow"), "workflow.yaml"),
      `id: slow\nserial: true\nvariables:\n  sleep:\n    default: "0"\nsteps:\n  - id: sleeper\n    description: x\n    agent_configs:\n      declared_execution_mode: learn_code\n`,
    );
    await enqueue(m, [m.wf("slow")]);
    await enqueue(m, [m.wf("slow")]);
    expect(
      rows<{ queue_name: string; n: number }>(
        url,
        "SELECT q.queue_name, COUNT(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_job_queues q ON q.id = j.job_queue_id GROUP BY q.queue_name",
      ),
    ).toEqual([{ queue_name: "ratchet:slow", n: 2 }]);
    const serial = await w.run(["worker", "--once", "--concurrency", "2", "--json"]);
    expect(serial.status, serial.stderr).toBe(0);
    expect(parseMarker(serial.stdout)).toMatchObject({ executed: { passed: 2 } });
    // --wait: a worker finishes the run; the enqueuer exits with its ending.
    const waiting = m.run(["run", m.wf("slow"), "--queue", "--wait", "--json"]);
    await waitFor(
      () => count(url, "SELECT COUNT(*)::int AS n FROM workflow_runs WHERE status = 'queued'") === 1,
      "the waited run to be queued",
      60_000,
    );
    const drained = await w.run(["worker", "--once"]);
    expect(drained.status, drained.stderr).toBe(0);
    const waited = await waiting;
    expect(waited.status, waited.stderr).toBe(0);
    expect(json<{ status: string }>(waited).status).toBe("passed");
  });
});
