/**
 * The queue's other jobs and limits through the BUILT CLI (issue 17): one real PostgreSQL server
 * (test/harness/pg.ts), an enqueuing folder and worker folders that share no folder with it.
 *
 * - `concurrency: 2`: 6 queued runs on two `ratchet worker --once --concurrency 3` processes never
 *   have more than 2 running at once (from the run rows' start/finish times), all 6 pass, each
 *   once; jobs at the limit are put back for later, not lost, not doubled.
 * - Refusals of the field: 0, 101, a string, `serial: true` with `concurrency: 3`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  makeTempDir,
  mapLimit,
  parseMarker,
  ROOT,
  type RunningCli,
  ratchet,
  waitFor,
} from "../helpers/cli.js";
import { cliJson, pgRows, queueMachines } from "../helpers/queue-machine.js";
import {
  CALC_BUGGY,
  CALC_FIXED_LINE,
  calcSpec,
  fixTurns,
  GIT_IDENTITY,
  makeRepo,
} from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 300_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const running: RunningCli[] = [];
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(async () => {
  for (const r of running) r.child.kill("SIGKILL");
  for (const c of closers) await c();
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const machine = queueMachines({
  prefix: "ratchet-qjobs-",
  env: GIT_IDENTITY,
  runTimeoutMs: 250_000,
  dirs,
  running,
});
const rows = pgRows;
const json = cliJson;

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

  test("a runner task queued on one machine runs on a worker: events, result and patch blob in the database, exactly once", async () => {
    const url = cluster.createDatabase();
    const repo = makeRepo();
    closers.push(() => repo.remove());
    const spec = join(repo.root, "task.json");
    writeFileSync(spec, JSON.stringify(calcSpec(repo)));
    const model = await startScriptedModel({ script: { turns: fixTurns() } });
    closers.push(() => model.close());
    const enq = machine(url);
    const q = await enq.run(["runner", "run", spec, "--queue", "--json"]);
    expect(q.status, q.stderr).toBe(0);
    const queued = json<{ status: string; task_id: string; queue_id: string; job_id: number }>(q);
    expect(queued).toMatchObject({ status: "queued", task_id: "fix-calc" });
    // Queued, not run: no model request, no output yet.
    expect(model.requests()).toHaveLength(0);
    expect(existsSync(repo.out)).toBe(false);
    const w = machine(url, [], modelEnv(model.url));
    const once = await w.run(["worker", "--once", "--json"]);
    expect(once.status, once.stderr).toBe(0);
    expect(parseMarker(once.stdout)).toMatchObject({ tasks: { passed: 1 } });
    const types = taskEvents(url, "fix-calc").map((e) => e.type);
    expect(types[0]).toBe("runner.job_queued");
    expect(types[1]).toBe("runner.job_claimed");
    expect(types).toContain("runner.task_started");
    expect(types).toContain("runner.task_finished");
    expect(types.at(-1)).toBe("runner.job_result");
    const result = taskEvents(url, "fix-calc").at(-1)?.payload as Record<string, unknown>;
    expect(result).toMatchObject({
      queue_id: queued.queue_id,
      status: "passed",
      changed_files: ["calc.sh"],
      dod_passed: true,
    });
    // The patch is a blob in the shared database, with the fix in it; the source repo is untouched.
    const blob = rows<{ bytes: Buffer }>(url, "SELECT bytes FROM blobs WHERE hash = $1", [
      String(result.patch_blob),
    ]);
    expect(blob).toHaveLength(1);
    expect(Buffer.from(blob[0]?.bytes ?? []).toString("utf8")).toContain(CALC_FIXED_LINE);
    expect(readFileSync(join(repo.repo, "calc.sh"), "utf8")).toBe(CALC_BUGGY);
    const requests = model.requests().length;
    expect(requests).toBeGreaterThan(0);
    // A determined caller adds the same job again (another key): the task is not run a second time.
    rows(url, "SELECT graphile_worker.add_job('ratchet_runner', $1::json)", [
      JSON.stringify({
        task_id: "fix-calc",
        queue_id: queued.queue_id,
        spec: JSON.parse(readFileSync(spec, "utf8")),
      }),
    ]);
    const again = await w.run(["worker", "--once", "--json"]);
    expect(again.status, again.stderr).toBe(0);
    expect(parseMarker(again.stdout)).toMatchObject({ skipped: 1, tasks: {} });
    expect(model.requests()).toHaveLength(requests);
    expect(taskEvents(url, "fix-calc").filter((e) => e.type === "runner.job_result")).toHaveLength(1);
  });

  test("a runner task whose repo the worker cannot reach fails naming repo; bad flags and no queue are refused", async () => {
    const url = cluster.createDatabase();
    const repo = makeRepo();
    closers.push(() => repo.remove());
    const spec = join(repo.root, "task.json");
    writeFileSync(spec, JSON.stringify(calcSpec(repo)));
    const model = await startScriptedModel({ script: { turns: fixTurns() } });
    closers.push(() => model.close());
    const enq = machine(url);
    // Refusals before anything is recorded.
    const noQueue = await enq.run(["runner", "run", spec, "--queue", "--json"], { RATCHET_QUEUE: undefined });
    expect(noQueue.status).toBe(2);
    expect(noQueue.stderr).toContain("queue");
    // A SQLite workspace: exit 2 naming the store.
    const sqliteDir = makeTempDir("ratchet-qjobs-sqlite-");
    dirs.push(sqliteDir);
    expect((await ratchet(["init"], { cwd: sqliteDir })).status).toBe(0);
    const noPg = await ratchet(["runner", "run", spec, "--queue", "--json"], {
      cwd: sqliteDir,
      env: { RATCHET_QUEUE: "1" },
    });
    expect(noPg.status, noPg.stderr).toBe(2);
    expect(noPg.stderr).toContain("PostgreSQL");
    const badName = await enq.run(["runner", "run", spec, "--queue", "--queue-name", "Bad Name"]);
    expect(badName.status).toBe(2);
    expect(badName.stderr).toContain("--queue-name");
    const nameOnly = await enq.run(["runner", "run", spec, "--queue-name", "gpu"]);
    expect(nameOnly.status).toBe(2);
    expect(nameOnly.stderr).toContain("--queue");
    expect(rows(url, "SELECT 1 FROM events WHERE entity_kind = 'runner_task'")).toHaveLength(0);
    // Queued, then the repository is gone from where the spec says (the worker's machine lacks it).
    const q = await enq.run(["runner", "run", spec, "--queue", "--json"]);
    expect(q.status, q.stderr).toBe(0);
    renameSync(repo.repo, `${repo.repo}-elsewhere`);
    const w = machine(url, [], modelEnv(model.url));
    const once = await w.run(["worker", "--once", "--json"]);
    expect(once.status, once.stderr).toBe(0);
    expect(parseMarker(once.stdout)).toMatchObject({ tasks: { error: 1 } });
    const result = taskEvents(url, "fix-calc").at(-1);
    expect(result?.type).toBe("runner.job_result");
    expect(result?.payload).toMatchObject({ status: "error", field: "repo" });
    expect(String(result?.payload.error)).toMatch(/^repo: /);
    expect(model.requests()).toHaveLength(0);
  });

  test("a worker killed mid-task leaves the task interrupted, never run again", async () => {
    const url = cluster.createDatabase();
    const repo = makeRepo();
    closers.push(() => repo.remove());
    const spec = join(repo.root, "task.json");
    writeFileSync(spec, JSON.stringify(calcSpec(repo)));
    // The first reply never comes in time: the worker is mid-task when it is killed.
    const model = await startScriptedModel({
      script: { turns: [{ delay_ms: 120_000, text: "late" }, ...fixTurns()] },
    });
    closers.push(() => model.close());
    const enq = machine(url);
    const q = await enq.run(["runner", "run", spec, "--queue", "--json"]);
    expect(q.status, q.stderr).toBe(0);
    const w1 = machine(url, [], modelEnv(model.url));
    const dying = w1.start(["worker", "--json"]);
    await waitFor(() => model.requests().length === 1, "the worker's first model request", 60_000);
    dying.child.kill("SIGKILL");
    await dying.done;
    expect(taskEvents(url, "fix-calc").map((e) => e.type)).toContain("runner.job_claimed");
    // graphile would hand the job out again once its lock expires: expire it now.
    rows(url, "UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL");
    const w2 = machine(url, [], modelEnv(model.url));
    const once = await w2.run(["worker", "--once", "--json"]);
    expect(once.status, once.stderr).toBe(0);
    const evs = taskEvents(url, "fix-calc").map((e) => e.type);
    expect(evs.filter((t) => t === "runner.job_interrupted")).toHaveLength(1);
    expect(evs).not.toContain("runner.job_result");
    expect(evs.filter((t) => t === "runner.job_claimed")).toHaveLength(1);
    expect(model.requests()).toHaveLength(1);
  });

  test("a thread started with --queue runs on a worker; an approval decided later enqueues the continuation; the call runs once", async () => {
    const url = cluster.createDatabase();
    const model = await startScriptedModel({
      script: {
        turns: [
          { tool_calls: [{ id: "p1", name: "append", arguments: { line: "approved later" } }] },
          { text: "Appended." },
        ],
      },
    });
    closers.push(() => model.close());
    const shared = makeTempDir("ratchet-qjobs-out-");
    dirs.push(shared);
    const appendFile = join(shared, "appended.txt");
    const config = JSON.stringify({
      customTools: {
        append: {
          command: process.execPath,
          args: [join(ROOT, "test/fixtures/threads/append-tool.mjs"), appendFile],
          description: "Appends a line.",
          input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
        },
      },
      threads: { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    });
    const withConfig = (m: ReturnType<typeof machine>) => {
      mkdirSync(join(m.dir, ".ratchet"), { recursive: true });
      writeFileSync(join(m.dir, ".ratchet", "config.json"), config);
      return m;
    };
    const a = withConfig(machine(url));
    const w = withConfig(machine(url, [], modelEnv(model.url)));
    const lines = () =>
      existsSync(appendFile) ? readFileSync(appendFile, "utf8").split("\n").filter(Boolean) : [];
    const q = await a.run(["thread", "start", "append a line", "--queue", "--json"]);
    expect(q.status, q.stderr).toBe(0);
    const queued = json<{ status: string; turn_id: string; turn: string }>(q);
    expect(queued).toMatchObject({ status: "queued", turn: "start" });
    expect(model.requests()).toHaveLength(0);
    const first = await w.run(["worker", "--once", "--json"]);
    expect(first.status, first.stderr).toBe(0);
    expect(parseMarker(first.stdout)).toMatchObject({ turns: { waiting: 1 } });
    const started = turnEvents(url, queued.turn_id).at(-1);
    expect(started?.type).toBe("thread.turn_result");
    const threadId = String(started?.payload.thread_id);
    expect(
      rows<{ state: string; driver: string | null }>(
        url,
        "SELECT state, driver FROM threads WHERE thread_id = $1",
        [threadId],
      ),
    ).toEqual([{ state: "waiting", driver: null }]);
    expect(lines()).toEqual([]);
    // Refused before anything is queued: a resume of a thread that does not exist; --queue-name alone.
    const unknown = await a.run(["thread", "resume", "thr-nope", "--queue", "--json"]);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain("thr-nope");
    const nameOnly = await a.run(["thread", "resume", threadId, "--queue-name", "gpu"]);
    expect(nameOnly.status).toBe(2);
    // The approval, decided on the other machine later, enqueues the continuation.
    const approve = await a.run(["thread", "approve", threadId, "--queue", "--json"]);
    expect(approve.status, approve.stderr).toBe(0);
    const resumed = json<{
      status: string;
      turn_id: string;
      turn: string;
      thread_id: string;
      call_id: string;
    }>(approve);
    expect(resumed).toMatchObject({ status: "queued", turn: "resume", thread_id: threadId, call_id: "p1" });
    expect(lines()).toEqual([]);
    const second = await w.run(["worker", "--once", "--json"]);
    expect(second.status, second.stderr).toBe(0);
    expect(parseMarker(second.stdout)).toMatchObject({ turns: { completed: 1 } });
    expect(lines()).toEqual(["approved later"]);
    expect(
      rows<{ state: string }>(url, "SELECT state FROM threads WHERE thread_id = $1", [threadId]),
    ).toEqual([{ state: "done" }]);
    // A determined caller replays the resume job: not driven again, the call does not run twice.
    rows(url, "SELECT graphile_worker.add_job('ratchet_thread', $1::json)", [
      JSON.stringify({ turn_id: resumed.turn_id, op: "resume", thread_id: threadId }),
    ]);
    const replay = await w.run(["worker", "--once", "--json"]);
    expect(replay.status, replay.stderr).toBe(0);
    expect(parseMarker(replay.stdout)).toMatchObject({ skipped: 1, turns: {} });
    expect(lines()).toEqual(["approved later"]);
    // And a new resume of a finished thread is refused at enqueue, naming it.
    const done = await a.run(["thread", "resume", threadId, "--queue"]);
    expect(done.status).not.toBe(0);
    expect(done.stderr).toContain(threadId);
  });
});

function turnEvents(url: string, turnId: string): { type: string; payload: Record<string, unknown> }[] {
  return rows<{ type: string; payload: string }>(
    url,
    "SELECT type, payload FROM events WHERE entity_kind = 'thread_turn' AND entity_id = $1 ORDER BY id",
    [turnId],
  ).map((e) => ({
    type: e.type,
    payload: typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload,
  }));
}

function modelEnv(url: string): Record<string, string> {
  return {
    RATCHET_MODEL: "openai-compatible:scripted",
    OPENAI_BASE_URL: url,
    OPENAI_API_KEY: "sk-test-0000000000",
  };
}

function taskEvents(url: string, taskId: string): { type: string; payload: Record<string, unknown> }[] {
  return rows<{ type: string; payload: string }>(
    url,
    "SELECT type, payload FROM events WHERE entity_kind = 'runner_task' AND entity_id = $1 ORDER BY id",
    [taskId],
  ).map((e) => ({
    type: e.type,
    payload: typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload,
  }));
}
