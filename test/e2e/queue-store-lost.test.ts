/**
 * A worker whose store session is lost for good, through the BUILT CLI on a real PostgreSQL server
 * (test/harness/pg.ts). The fault is real and comes from outside: the worker's store session is
 * ended by the server (`pg_terminate_backend`, what an administrator, a failover or a proxy does),
 * so its synchronous bridge is broken (`SyncPg.broken`) and every later store call refuses.
 *
 * - Before the claim (a plain workflow, and a `serial` one whose runs share a graphile queue): three
 *   queued runs, the workspace write lock held by another session so the worker's first claim
 *   waits on it; that waiting session is terminated. The worker exits 11
 *   (`store_lost`) naming the cause, having failed no run and spent no job attempt (every job is
 *   back in graphile with 0 attempts and no error, every run still queued); a second, healthy
 *   worker then executes each run exactly once.
 * - After the claim: a running run's worker loses its session; it exits 11, the run is never
 *   failed nor executed twice: another worker closes it `interrupted` (the lease / dead-owner
 *   sweep) and skips the job handed back.
 */
import { appendFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { WORKSPACE_WRITE_LOCK } from "../../src/store/postgres/open.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import { assertBuilt, parseMarker, type RunningCli, waitFor } from "../helpers/cli.js";
import { cliJson, pgRows, queueMachines } from "../helpers/queue-machine.js";

vi.setConfig({ testTimeout: 240_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const running: RunningCli[] = [];

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

// The `pipeline` fixture declares secret `api_token`: a worker without it fails the run before it
// starts ("no value for secret SECRET_API_TOKEN"), which is not what these tests are about.
const SECRETS = { SECRET_API_TOKEN: "tok-qlost-not-for-logs" };
const machine = queueMachines({
  prefix: "ratchet-qlost-",
  env: SECRETS,
  runTimeoutMs: 150_000,
  dirs,
  running,
});
const rows = pgRows;
const count = (url: string, sql: string) => rows<{ n: number }>(url, sql)[0]?.n ?? -1;

async function enqueue(m: ReturnType<typeof machine>, args: readonly string[]): Promise<string> {
  const r = await m.run(["run", ...args, "--queue", "--json"]);
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return cliJson<{ run_id: string }>(r).run_id;
}

const runEvents = (url: string) =>
  Object.fromEntries(
    rows<{ type: string; n: number }>(
      url,
      "SELECT type, COUNT(*)::int AS n FROM events WHERE entity_kind = 'run' GROUP BY type",
    ).map((r) => [r.type, r.n]),
  );

/** What a failed wait prints: the runs, graphile's jobs and queues as they are, the workers' logs. */
const diagnostics = (url: string, logs: Record<string, string>) => ({
  now: rows(url, "SELECT now()::text AS now")[0],
  runs: rows(url, "SELECT run_id, status, owner, error FROM workflow_runs ORDER BY run_id"),
  jobs: rows(
    url,
    "SELECT id, task_identifier, key, attempts, max_attempts, last_error, run_at::text, locked_at::text, locked_by FROM graphile_worker.jobs ORDER BY id",
  ),
  queues: rows(url, "SELECT queue_name, locked_at::text, locked_by FROM graphile_worker._private_job_queues"),
  ...logs,
});

/** Waits for a worker's exit and checks it is the documented one for a lost store session. */
async function expectStoreLostExit(w: RunningCli): Promise<string> {
  const r = await w.done;
  const out = r.stdout + r.stderr;
  expect(r.status, out).toBe(11);
  expect(out).toMatch(/its store session is lost, so it stopped taking jobs/);
  // The cause as the server gave it.
  expect(out).toMatch(/terminating connection due to administrator command/);
  return out;
}

describe.runIf(pgAvailable())("a worker whose store session is lost", () => {
  test.each([
    { kind: "plain", serial: false },
    { kind: "serial (one graphile queue)", serial: true },
  ])(
    "before the claim, $kind: the worker exits 11 naming the cause, fails no run, spends no attempt; a healthy worker runs each run once",
    async ({ serial }) => {
      const url = cluster.createDatabase();
      const enq = machine(url, ["pipeline"]);
      // serial: the runs share graphile queue `ratchet:pipeline`, whose lock the job handed back
      // must release with it (else the queue stays locked by a dead worker and nothing runs).
      if (serial) appendFileSync(join(enq.wf("pipeline"), "workflow.yaml"), "serial: true\n");
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await enqueue(enq, [enq.wf("pipeline"), "--group", "small"]));
      const holder = PgStore.open(url);
      let held = true;
      try {
        holder.pg.exec(`BEGIN; SELECT pg_advisory_xact_lock(${WORKSPACE_WRITE_LOCK})`);
        const a = machine(url).start(["worker", "--concurrency", "2", "--json"]);
        // The worker's claim waits for the held lock: that waiting backend is its store session.
        let pid: number | undefined;
        await waitFor(
          () => {
            pid = rows<{ pid: number }>(
              url,
              "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted LIMIT 1",
            )[0]?.pid;
            return pid !== undefined;
          },
          "the worker's claim to wait for the held lock",
          90_000,
          100,
        );
        expect(
          rows<{ t: boolean }>(url, "SELECT pg_terminate_backend($1::int) AS t", [String(pid)])[0]?.t,
        ).toBe(true);
        const out = await expectStoreLostExit(a);
        expect(out).toMatch(/handed back untouched/);
        holder.pg.exec("COMMIT");
        held = false;
      } finally {
        if (held) holder.pg.exec("ROLLBACK");
        holder.close();
      }
      // Nothing was failed or started; every run keeps exactly one job with no attempt spent.
      expect(rows(url, "SELECT status, COUNT(*)::int AS n FROM workflow_runs GROUP BY status")).toEqual([
        { status: "queued", n: 3 },
      ]);
      expect(runEvents(url)).toEqual({ "run.queued": 3 });
      const jobs = rows<{ key: string; attempts: number; last_error: string | null }>(
        url,
        "SELECT key, attempts, last_error FROM graphile_worker.jobs ORDER BY key",
      );
      expect(
        jobs.map((j) => j.key),
        JSON.stringify(jobs),
      ).toEqual([...ids].sort());
      expect(
        jobs.every((j) => j.attempts === 0 && j.last_error === null),
        JSON.stringify(jobs),
      ).toBe(true);
      expect(rows(url, "SELECT queue_name, locked_by FROM graphile_worker._private_job_queues")).toEqual(
        serial ? [{ queue_name: "ratchet:pipeline", locked_by: null }] : [],
      );

      // A long-lived worker: the handed-back jobs are due 1–2 s after they were handed back.
      const b = machine(url).start(["worker", "--json"]);
      await waitFor(
        () => count(url, "SELECT COUNT(*)::int AS n FROM workflow_runs WHERE status = 'passed'") === 3,
        "the healthy worker to run the three runs",
        120_000,
        250,
      ).catch((e) => {
        console.log(JSON.stringify(diagnostics(url, { b: b.stderrSoFar().slice(-3000) })));
        throw e;
      });
      b.child.kill("SIGTERM");
      const r = await b.done;
      expect(r.status, r.stderr).toBe(0);
      const summary = parseMarker(r.stdout) as { executed: Record<string, number>; handedBack: number };
      expect(summary.executed).toEqual({ passed: 3 });
      expect(summary.handedBack).toBe(0);
      expect(rows(url, "SELECT status, COUNT(*)::int AS n FROM workflow_runs GROUP BY status")).toEqual([
        { status: "passed", n: 3 },
      ]);
      expect(runEvents(url)).toEqual({
        "run.queued": 3,
        "run.started": 3,
        "run.step_finished": 6,
        "run.finished": 3,
      });
      expect(count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs")).toBe(0);
    },
  );

  test("after the claim: the worker exits 11; its run is never failed nor executed twice, another worker closes it interrupted", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    const id = await enqueue(enq, [enq.wf("slow"), "--var", "sleep=60"]);
    const a = machine(url).start(["worker", "--json", "--lease-seconds", "10"]);
    await waitFor(
      () => rows<{ status: string }>(url, "SELECT status FROM workflow_runs")[0]?.status === "running",
      "the run to be claimed",
      90_000,
      100,
    );
    // The worker's store session: the only `ratchet` session of another process (graphile's pool
    // has no application_name; this check's own session is excluded).
    const killed = rows<{ n: number }>(
      url,
      "SELECT COUNT(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ratchet' AND pid <> pg_backend_pid()",
    )[0]?.n;
    expect(killed).toBe(1);
    const aOut = await expectStoreLostExit(a);
    expect(rows<{ status: string }>(url, "SELECT status FROM workflow_runs")[0]?.status).toBe("running");
    // Another worker's sweep closes it (its owner is gone; on another host, once the lease runs out).
    const b = machine(url).start(["worker", "--json"]);
    await waitFor(
      () =>
        rows<{ status: string }>(url, "SELECT status FROM workflow_runs")[0]?.status !== "running" &&
        count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs") === 0,
      "the other worker to close the run and take the job handed back",
      90_000,
      250,
    ).catch((e) => {
      console.log(JSON.stringify(diagnostics(url, { b: b.stderrSoFar().slice(-3000), a: aOut })));
      throw e;
    });
    b.child.kill("SIGTERM");
    const rb = await b.done;
    expect(rb.status, rb.stderr).toBe(0);
    const run = rows<{ run_id: string; status: string }>(url, "SELECT run_id, status FROM workflow_runs");
    expect(run).toEqual([{ run_id: id, status: "interrupted" }]);
    const events = runEvents(url);
    expect(events["run.started"]).toBe(1);
    expect(events["run.queued"]).toBe(1);
    // No job left behind with an error or an attempt count run out.
    expect(count(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs")).toBe(0);
  });
});
