/**
 * The queue's other jobs and limits through the BUILT CLI (issue 17): one real PostgreSQL server
 * (test/harness/pg.ts), an enqueuing folder and worker folders that share no folder with it.
 *
 * - `concurrency: 2`: 6 queued runs on two `ratchet worker --once --concurrency 3` processes never
 *   have more than 2 running at once (from the run rows' start/finish times), all 6 pass, each
 *   once; jobs at the limit are put back for later, not lost, not doubled.
 * - Refusals of the field: 0, 101, a string, `serial: true` with `concurrency: 3`.
 */
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  type CliResult,
  makeTempDir,
  mapLimit,
  parseMarker,
  ROOT,
  ratchet,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 300_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const FIXTURES = join(ROOT, "test", "fixtures", "workflows");

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function machine(url: string, workflows: readonly string[] = [], extraEnv: Record<string, string> = {}) {
  const dir = makeTempDir("ratchet-qjobs-");
  dirs.push(dir);
  for (const name of workflows)
    cpSync(join(FIXTURES, name), join(dir, "workflows", name), { recursive: true });
  const env = { RATCHET_DB: url, RATCHET_QUEUE: "1", RATCHET_MODEL: undefined, ...extraEnv };
  return {
    dir,
    wf: (name: string) => join(dir, "workflows", name),
    run: (args: readonly string[], more: Record<string, string | undefined> = {}) =>
      ratchet(args, { cwd: dir, env: { ...env, ...more }, timeoutMs: 250_000 }),
  };
}

function rows<R>(url: string, sql: string, params: string[] = []): R[] {
  const s = PgStore.open(url);
  try {
    return s.pg.query<R>(sql, params).rows;
  } finally {
    s.close();
  }
}

function json<T>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

const slowYaml = (extra: string) =>
  `id: slow\n${extra}variables:\n  sleep:\n    default: "0"\nsteps:\n  - id: sleeper\n    description: x\n    agent_configs:\n      declared_execution_mode: learn_code\n`;

/** Most intervals open at once (an interval ends at its finish; a start at the same instant counts after). */
function maxOverlap(spans: { start: number; end: number }[]): number {
  const points = spans.flatMap((s) => [
    { t: s.start, d: 1 },
    { t: s.end, d: -1 },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let max = 0;
  for (const p of points) {
    cur += p.d;
    max = Math.max(max, cur);
  }
  return max;
}

describe.runIf(pgAvailable())("queue jobs and limits on PostgreSQL", () => {
  test("concurrency: 2 — 6 runs on two workers of concurrency 3 never have more than 2 running; all pass once", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    writeFileSync(join(enq.wf("slow"), "workflow.yaml"), slowYaml("concurrency: 2\n"));
    const first = await enq.run(["run", enq.wf("slow"), "--var", "sleep=2", "--queue", "--json"]);
    expect(first.status, first.stderr).toBe(0);
    const ids = [json<{ run_id: string }>(first).run_id];
    ids.push(
      ...(await mapLimit(Array.from({ length: 5 }), 3, async () => {
        const r = await enq.run(["run", enq.wf("slow"), "--var", "sleep=2", "--queue", "--json"]);
        expect(r.status, r.stderr).toBe(0);
        return json<{ run_id: string }>(r).run_id;
      })),
    );
    expect(new Set(ids).size).toBe(6);
    // Not a graphile queue (that would be 1 at a time): the claim enforces 2.
    expect(
      rows<{ n: number }>(
        url,
        "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs WHERE job_queue_id IS NULL",
      )[0]?.n,
    ).toBe(6);
    const w1 = machine(url);
    const w2 = machine(url);
    const [a, b] = await Promise.all([
      w1.run(["worker", "--once", "--concurrency", "3", "--json"]),
      w2.run(["worker", "--once", "--concurrency", "3", "--json"]),
    ]);
    expect(a.status, a.stderr).toBe(0);
    expect(b.status, b.stderr).toBe(0);
    const sa = parseMarker(a.stdout) as { executed: Record<string, number>; deferred: number };
    const sb = parseMarker(b.stdout) as { executed: Record<string, number>; deferred: number };
    expect((sa.executed.passed ?? 0) + (sb.executed.passed ?? 0)).toBe(6);
    // Six jobs on six slots with a limit of 2: some had to wait.
    expect(sa.deferred + sb.deferred).toBeGreaterThan(0);
    const runs = rows<{ run_id: string; status: string; started_at: string; finished_at: string }>(
      url,
      "SELECT run_id, status, started_at, finished_at FROM workflow_runs ORDER BY run_id",
    );
    expect(runs.map((r) => r.status)).toEqual(Array(6).fill("passed"));
    expect(runs.map((r) => r.run_id).sort()).toEqual([...ids].sort());
    const spans = runs.map((r) => ({ start: Date.parse(r.started_at), end: Date.parse(r.finished_at) }));
    expect(spans.every((s) => Number.isFinite(s.start) && Number.isFinite(s.end) && s.end >= s.start)).toBe(
      true,
    );
    expect(maxOverlap(spans)).toBe(2);
    // Each run started once: one run.started event, one step row, no job left.
    const started = rows<{ n: number }>(
      url,
      "SELECT COUNT(*)::int AS n FROM events WHERE entity_kind = 'run' AND type = 'run.started'",
    )[0]?.n;
    expect(started).toBe(6);
    expect(
      rows<{ n: number }>(url, "SELECT COUNT(*)::int AS n FROM graphile_worker._private_jobs")[0]?.n,
    ).toBe(0);
  });

  test("concurrency is validated: 0, 101, a string, and serial with another number are refused naming it", async () => {
    const url = cluster.createDatabase();
    const enq = machine(url, ["slow"]);
    for (const extra of [
      "concurrency: 0\n",
      "concurrency: 101\n",
      "concurrency: lots\n",
      "serial: true\nconcurrency: 3\n",
    ]) {
      writeFileSync(join(enq.wf("slow"), "workflow.yaml"), slowYaml(extra));
      const r = await enq.run(["run", enq.wf("slow"), "--queue", "--json"]);
      expect(r.status, extra).not.toBe(0);
      expect(r.stdout + r.stderr, extra).toContain("concurrency");
    }
    // Nothing was recorded.
    expect(rows<{ n: number }>(url, "SELECT COUNT(*)::int AS n FROM workflow_runs")[0]?.n).toBe(0);
    // concurrency: 1 is serial: one graphile queue.
    writeFileSync(join(enq.wf("slow"), "workflow.yaml"), slowYaml("concurrency: 1\n"));
    const one = await enq.run(["run", enq.wf("slow"), "--queue", "--json"]);
    expect(one.status, one.stderr).toBe(0);
    expect(
      rows<{ queue_name: string }>(
        url,
        "SELECT q.queue_name FROM graphile_worker._private_jobs j JOIN graphile_worker._private_job_queues q ON q.id = j.job_queue_id",
      ),
    ).toEqual([{ queue_name: "ratchet:slow" }]);
  });
});
