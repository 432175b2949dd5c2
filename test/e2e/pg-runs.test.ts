/**
 * Workflow runs on PostgreSQL through the BUILT CLI: two "machines" (separate folders, each with its
 * own copy of the workflow and its learned scripts, no shared folder) and one real server from
 * test/harness/pg.ts. A learned run passes with zero tokens on one machine, the other lists and
 * shows it; runs started at once on both are each recorded once; a run whose process is killed (-9) mid-step is marked interrupted once, its open ledger
 * steps failed, never left running.
 */
import { cpSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  type CliResult,
  makeTempDir,
  ROOT,
  ratchet,
  startRatchet,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const FIXTURES = join(ROOT, "test", "fixtures", "workflows");
const SECRET_ENV = { SECRET_API_TOKEN: "tok-pg-runs-not-for-logs" };

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A "machine": its own folder holding its own copy of the fixture workflows; every command talks to `url`. */
function machine(url: string) {
  const dir = makeTempDir("ratchet-pg-runs-");
  dirs.push(dir);
  for (const name of ["pipeline", "slow"])
    cpSync(join(FIXTURES, name), join(dir, "workflows", name), { recursive: true });
  const env = { RATCHET_DB: url, ...SECRET_ENV };
  return {
    dir,
    wf: (name: string) => join(dir, "workflows", name, "workflow.yaml"),
    run: (args: readonly string[]) => ratchet(args, { cwd: dir, env, timeoutMs: 120_000 }),
    start: (args: readonly string[]) => startRatchet(args, { cwd: dir, env, timeoutMs: 120_000 }),
  };
}

function json<T>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

function rows<R>(url: string, sql: string, params: string[] = []): R[] {
  const s = PgStore.open(url);
  try {
    return s.pg.query<R>(sql, params).rows;
  } finally {
    s.close();
  }
}

interface RunJson {
  run_id: string;
  status: string;
  plan_id: string;
  steps: { step_id: string; outcome: string; fast_path: boolean; tokens: number }[];
}

describe.runIf(pgAvailable())("ratchet run on PostgreSQL", () => {
  test("a learned run on machine A: passed, zero tokens; machine B lists and shows it; the ledger plan completed", async () => {
    const url = cluster.createDatabase();
    const a = machine(url);
    const b = machine(url);
    const r = await a.run(["run", a.wf("pipeline"), "--group", "small", "--json"]);
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = json<RunJson>(r);
    expect(run.status).toBe("passed");
    expect(run.steps.map((s) => [s.step_id, s.outcome, s.fast_path, s.tokens])).toEqual([
      ["fetch", "passed", true, 0],
      ["report", "passed", true, 0],
    ]);
    // Nothing but the run's outputs on A's disk: no SQLite file was created.
    expect(existsSync(join(a.dir, ".ratchet", "ratchet.db"))).toBe(false);

    const list = await b.run(["runs", "list", "--json"]);
    expect(list.status, list.stderr).toBe(0);
    expect(json<{ run_id: string; status: string }[]>(list).map((x) => [x.run_id, x.status])).toEqual([
      [run.run_id, "passed"],
    ]);
    const show = await b.run(["runs", "show", run.run_id, "--json"]);
    expect(show.status, show.stderr).toBe(0);
    const shown = json<RunJson & { tokens: number; group_name: string }>(show);
    expect(shown).toMatchObject({ run_id: run.run_id, status: "passed", tokens: 0, group_name: "small" });
    expect(shown.steps.map((s) => [s.step_id, s.outcome, s.fast_path])).toEqual([
      ["fetch", "passed", true],
      ["report", "passed", true],
    ]);
    const plan = await b.run(["plan", "show", run.plan_id, "--json"]);
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('"COMPLETED"');
    const types = rows<{ type: string }>(
      url,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = $1 ORDER BY id",
      [run.run_id],
    ).map((e) => e.type);
    expect(types).toEqual(["run.started", "run.step_finished", "run.step_finished", "run.finished"]);
    // Unknown run: not found (3), on either machine; a finished run cannot be cancelled (4).
    expect((await b.run(["runs", "show", "run-nope"])).status).toBe(3);
    expect((await b.run(["runs", "cancel", run.run_id])).status).toBe(4);
  });

  test("runs started at once on two machines: each recorded once, all passed, event ids dense", async () => {
    const url = cluster.createDatabase();
    const a = machine(url);
    const b = machine(url);
    const done = await Promise.all(
      [a, b, a, b].map((m) => m.start(["run", m.wf("pipeline"), "--group", "small", "--json"]).done),
    );
    for (const r of done) expect(r.status, r.stderr).toBe(0);
    const ids = done.map((r) => json<RunJson>(r).run_id);
    expect(new Set(ids).size).toBe(4);
    const runs = rows<{ run_id: string; status: string }>(url, "SELECT run_id, status FROM workflow_runs");
    expect(runs.map((r) => r.run_id).sort()).toEqual([...ids].sort());
    expect(runs.every((r) => r.status === "passed")).toBe(true);
    const steps = rows<{ n: number }>(
      url,
      "SELECT COUNT(*)::int AS n FROM workflow_step_runs WHERE outcome = 'passed' AND fast_path = 1 AND tokens = 0",
    );
    expect(steps[0]?.n).toBe(8);
    const ev = rows<{ id: number }>(url, "SELECT id FROM events ORDER BY id").map((e) => e.id);
    expect(ev).toEqual(ev.map((_, i) => i + 1));
    const started = rows<{ n: number }>(
      url,
      "SELECT COUNT(*)::int AS n FROM events WHERE type = 'run.started'",
    );
    expect(started[0]?.n).toBe(4);
  });

  test("kill -9 of the process mid-step: the run is marked interrupted exactly once, its ledger steps failed", async () => {
    const url = cluster.createDatabase();
    const a = machine(url);
    const b = machine(url);
    const running = a.start(["run", a.wf("slow"), "--var", "sleep=120", "--json"]);
    const exec = join(a.dir, ".ratchet", "runs");
    await waitFor(
      () =>
        existsSync(exec) &&
        readdirSync(exec).some((d) => existsSync(join(exec, d, "sleeper", "started.txt"))),
      "the sleeper to start",
    );
    const [live] = rows<{ run_id: string; status: string }>(url, "SELECT run_id, status FROM workflow_runs");
    expect(live?.status).toBe("running");
    running.child.kill("SIGKILL");
    await running.done.catch(() => undefined);
    // Two readers find the dead owner at once; the run is closed once (one run.interrupted event).
    const [l1, l2] = await Promise.all([
      b.run(["runs", "list", "--json"]),
      a.run(["runs", "list", "--json"]),
    ]);
    expect(l1.status, l1.stderr).toBe(0);
    expect(l2.status, l2.stderr).toBe(0);
    const show = json<RunJson>(await b.run(["runs", "show", live!.run_id, "--json"]));
    expect(show.status).toBe("interrupted");
    expect(show.steps.map((s) => [s.step_id, s.outcome])).toEqual([["sleeper", "interrupted"]]);
    const events = rows<{ type: string }>(
      url,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = $1 AND type = 'run.interrupted'",
      [live!.run_id],
    );
    expect(events).toHaveLength(1);
    const open = rows<{ n: number }>(
      url,
      "SELECT COUNT(*)::int AS n FROM steps WHERE plan_id = $1 AND role = 'regular' AND status IN ('PENDING', 'IN_PROGRESS')",
      [show.plan_id],
    );
    expect(open[0]?.n).toBe(0);
  });
});
