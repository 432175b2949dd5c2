/**
 * The ledger's concurrency and crash guarantees on PostgreSQL: real `bin/ratchet.js` processes
 * with `RATCHET_DB=postgres://…`, each in its own temp folder (no shared filesystem: they stand in
 * for machines), one real server (test/harness/pg.ts). The SQLite twins are concurrency.test.ts
 * and crash.test.ts.
 *
 * What must hold: 8 writers at once get every expected outcome with exact counts and dense event
 * ids; two agents completing the last two steps at the same instant produce exactly one review
 * hand-off; a writer killed with SIGKILL in the middle of its writes leaves only whole
 * transactions, and the next writer is not blocked by the dead one's lock.
 */
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  type CliResult,
  type Marker,
  makeTempDir,
  mapLimit,
  ratchet,
  startRatchet,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 300_000, hookTimeout: 120_000 });

const WORKERS = 8;
const RACES = 40;
const TROUBLE = /internal error|PgError|deadlock|could not serialize|timeout/i;

let cluster: PgCluster;
const dirs: string[] = [];

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
  console.log(`pg harness: initdb + start ${cluster.startSeconds.toFixed(2)} s`);
});
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A "machine": its own empty folder; every command there talks to `url`. */
function machine(url: string) {
  const dir = makeTempDir("ratchet-pg-machine-");
  dirs.push(dir);
  const env = { RATCHET_DB: url };
  return {
    dir,
    run: (args: readonly string[], input?: string) =>
      ratchet(args, { cwd: dir, env, ...(input !== undefined ? { input } : {}), timeoutMs: 120_000 }),
    start: (args: readonly string[], input: string) =>
      startRatchet(args, { cwd: dir, env, input, holdStdin: true, timeoutMs: 240_000 }),
  };
}

/** Runs `fn` on a session of the store (the test's own reads; a real connection, no mock). */
function withStore<T>(url: string, fn: (s: PgStore) => T): T {
  const s = PgStore.open(url);
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

const rows = <R>(url: string, sql: string, params: (string | number)[] = []) =>
  withStore(url, (s) => s.pg.query<R>(sql, params).rows);

const markers = (r: CliResult) => r.lines.map((l) => JSON.parse(l) as Marker);
const th = (title: string, type = "THINKING") => ({ title, type });
const jsonl = (ops: readonly object[]) => ops.map((o) => JSON.stringify(o)).join("\n");

describe.runIf(pgAvailable())("ledger on PostgreSQL, many processes", () => {
  test(`${WORKERS} writer processes on separate machines: expected outcomes, exact counts, dense ids`, async () => {
    const url = cluster.createDatabase();
    const setupBox = machine(url);
    expect((await setupBox.run(["project", "add", "conc"])).status).toBe(0);
    const PRIVATE = 3;
    const publishes = [
      { op: "publish-plan", goal: "shared", steps: Array.from({ length: WORKERS }, (_, i) => th(`s${i}`)) },
      { op: "publish-plan", goal: "contested", steps: [th("c0"), th("c1")] },
      ...Array.from({ length: WORKERS * PRIVATE }, (_, i) => ({
        op: "publish-plan",
        goal: `private ${i}`,
        steps: [th("a"), th("b", "CODE"), th("c")],
      })),
    ];
    const setup = await setupBox.run(["step", "apply", "-"], jsonl(publishes));
    expect(setup.status, setup.stderr).toBe(0);
    const ids = markers(setup)
      .slice(0, publishes.length)
      .map((m) => m.plan_id as string);
    const [shared, contested] = ids as [string, string];
    const letter = (i: number) => String.fromCharCode(65 + i);
    const eventsBefore = withStore(url, (s) => s.lastEventId());

    const batches = Array.from({ length: WORKERS }, (_, w) => {
      const ops: { op: Record<string, unknown>; expect: number | "contested" }[] = [];
      for (let p = 0; p < PRIVATE; p++) {
        const plan = ids[2 + w * PRIVATE + p] as string;
        for (const l of ["A", "B", "C"]) {
          ops.push({ op: { op: "start-step", step_id: `${plan}-${l}` }, expect: 0 });
          ops.push({ op: { op: "append-log", step_id: `${plan}-${l}`, text: `w${w} ${l}` }, expect: 0 });
          ops.push({ op: { op: "complete-step", step_id: `${plan}-${l}` }, expect: 0 });
        }
        ops.push({
          op: { op: "record-metric", name: "m", value: w, plan_id: plan, project: "conc" },
          expect: 0,
        });
      }
      ops.push({ op: { op: "start-step", step_id: `${shared}-${letter(w)}` }, expect: 0 });
      ops.push({ op: { op: "complete-step", step_id: `${shared}-${letter(w)}` }, expect: 0 });
      for (let c = 0; c < 2; c++)
        ops.push({ op: { op: "start-step", step_id: `${contested}-${letter(c)}` }, expect: "contested" });
      ops.push({ op: { op: "start-step", step_id: `ghost-${w}` }, expect: 3 });
      for (let i = 0; i < 5; i++)
        ops.push({ op: { op: "publish-plan", goal: `w${w} new ${i}`, steps: [th("x")] }, expect: 0 });
      return ops;
    });

    const running = batches.map((ops) =>
      machine(url).start(["step", "apply", "-"], jsonl(ops.map((o) => o.op))),
    );
    for (const r of running) r.release();
    const results = await Promise.all(running.map((r) => r.done));

    const wins = new Map<string, number>();
    results.forEach((r, w) => {
      expect(r.stderr, `worker ${w}`).not.toMatch(TROUBLE);
      const out = markers(r);
      const ops = batches[w] ?? [];
      expect(out).toHaveLength(ops.length + 1);
      ops.forEach((planned, i) => {
        const m = out[i] as Marker;
        const where = `worker ${w} line ${i + 1} ${JSON.stringify(planned.op)} → ${JSON.stringify(m)}`;
        expect(m.code, where).not.toBe("internal");
        if (planned.expect === "contested") {
          if (m.ok === true)
            wins.set(String(planned.op.step_id), (wins.get(String(planned.op.step_id)) ?? 0) + 1);
          else expect(m, where).toMatchObject({ ok: false, exit_status: 4, code: "illegal_transition" });
        } else if (planned.expect === 0) expect(m.ok, where).toBe(true);
        else expect(m, where).toMatchObject({ ok: false, exit_status: planned.expect });
      });
    });
    expect([...wins.entries()].sort()).toEqual([
      [`${contested}-A`, 1],
      [`${contested}-B`, 1],
    ]);

    // Exact counts: every op's rows, nothing more.
    const count = (t: string) => rows<{ n: number }>(url, `SELECT COUNT(*) AS n FROM ${t}`)[0]?.n;
    expect(count("plans")).toBe(publishes.length + WORKERS * 5);
    expect(count("metrics")).toBe(WORKERS * PRIVATE);
    expect(
      rows<{ status: string; n: number }>(
        url,
        "SELECT status, COUNT(*) AS n FROM plans GROUP BY status ORDER BY status",
      ),
    ).toEqual([
      { status: "COMPLETED", n: WORKERS * PRIVATE + 1 },
      { status: "IN_PROGRESS", n: 1 + WORKERS * 5 },
    ]);
    // Each private plan and the shared plan closed exactly once.
    expect(
      rows<{ n: number }>(url, "SELECT COUNT(*) AS n FROM events WHERE type = 'plan.completed'"),
    ).toEqual([{ n: WORKERS * PRIVATE + 1 }]);
    // Event ids are dense from 1 and every event written after the setup belongs to this run.
    const evIds = rows<{ id: number }>(url, "SELECT id FROM events ORDER BY id").map((r) => r.id);
    expect(evIds).toEqual(Array.from({ length: evIds.length }, (_, i) => i + 1));
    expect(evIds.length).toBeGreaterThan(eventsBefore);
    expect(withStore(url, (s) => s.integrityCheck())).toBe("ok");
  });

  test(`two agents on two machines complete the last two steps at the same instant, ${RACES} times: exactly one hand-off each`, async () => {
    const url = cluster.createDatabase();
    const box = machine(url);
    expect((await box.run(["project", "add", "race"])).status).toBe(0);
    const pub = await box.run(
      ["step", "apply", "-"],
      jsonl(
        Array.from({ length: RACES }, (_, i) => ({
          op: "publish-plan",
          goal: `race ${i}`,
          project: "race",
          steps: [th("l"), th("r")],
        })),
      ),
    );
    expect(pub.status, pub.stderr).toBe(0);
    const plans = markers(pub)
      .slice(0, RACES)
      .map((m) => m.plan_id as string);
    const started = await box.run(
      ["step", "apply", "-"],
      jsonl(
        plans.flatMap((p) => [
          { op: "start-step", step_id: `${p}-A` },
          { op: "start-step", step_id: `${p}-B` },
        ]),
      ),
    );
    expect(started.status, started.stderr).toBe(0);
    const [left, right] = [machine(url), machine(url)];

    const outcomes = await mapLimit(plans, 4, async (planId) => {
      const pair = [
        left.start(["step", "complete", "-"], JSON.stringify({ step_id: `${planId}-A` })),
        right.start(["step", "complete", "-"], JSON.stringify({ step_id: `${planId}-B` })),
      ];
      for (const p of pair) p.release();
      return { planId, results: await Promise.all(pair.map((p) => p.done)) };
    });
    for (const { planId, results } of outcomes) {
      for (const r of results) {
        expect(r.status, `${planId}: ${r.stderr}`).toBe(0);
        expect(r.stderr).not.toMatch(TROUBLE);
      }
      const handoffs = results.filter((r) => r.marker?.needs_agent_review === true);
      expect(handoffs, planId).toHaveLength(1);
      expect(handoffs[0]?.marker).toMatchObject({
        review_status: "NEEDS_REVIEW",
        review_child_step_id: `${planId}-REVIEW.1`,
      });
    }
    const perPlan = rows<{ plan_id: string; n: number }>(
      url,
      "SELECT plan_id, COUNT(*) AS n FROM events WHERE type = 'plan.needs_review' GROUP BY plan_id",
    );
    expect(perPlan).toHaveLength(RACES);
    expect(perPlan.every((r) => r.n === 1)).toBe(true);
    expect(
      rows(url, "SELECT COUNT(*) AS n FROM steps WHERE role = 'review_child' AND status = 'PENDING'"),
    ).toEqual([{ n: RACES }]);
    expect(
      rows(url, "SELECT status, revision_count, COUNT(*) AS n FROM plans GROUP BY status, revision_count"),
    ).toEqual([{ status: "IN_PROGRESS", revision_count: 1, n: RACES }]);
  });

  test("kill -9 mid-write: only whole transactions remain, the lock dies with the writer, the next writer goes on", async () => {
    const url = cluster.createDatabase();
    const box = machine(url);
    const N = 400;
    const victim = box.start(
      ["step", "apply", "-"],
      jsonl(
        Array.from({ length: N }, (_, i) => ({
          op: "publish-plan",
          goal: `victim ${i}`,
          steps: [th("a"), th("b"), th("c")],
        })),
      ),
    );
    victim.release();
    // Let it commit some plans, then kill it while it is writing the rest.
    await waitFor(
      () => victim.stdoutSoFar().split("\n").length > 20,
      "the victim to publish a few plans",
      120_000,
      5,
    );
    victim.child.kill("SIGKILL");
    const dead = await victim.done;
    expect(dead.signal).toBe("SIGKILL");
    const printed = dead.lines.length;
    expect(printed).toBeLessThan(N);

    // Another machine writes at once: the dead session's transaction and lock are gone.
    const next = await machine(url).run(
      ["plan", "publish", "-"],
      JSON.stringify({ goal: "after", steps: [th("x")] }),
    );
    expect(next.status, next.stderr).toBe(0);

    const plansRows = rows<{ plan_id: string; goal: string; n: number }>(
      url,
      "SELECT p.plan_id, p.goal, (SELECT COUNT(*) FROM steps s WHERE s.plan_id = p.plan_id) AS n FROM plans p",
    );
    const victims = plansRows.filter((p) => p.goal.startsWith("victim "));
    // Every plan the victim reported is there; at most the one in flight more; each one whole.
    expect(victims.length).toBeGreaterThanOrEqual(printed);
    expect(victims.length).toBeLessThanOrEqual(printed + 1);
    for (const p of victims) expect(p.n, p.plan_id).toBe(4); // three steps and the review step
    const published = rows<{ entity_id: string }>(
      url,
      "SELECT entity_id FROM events WHERE type = 'plan.published'",
    ).map((r) => r.entity_id);
    expect(published.sort()).toEqual(plansRows.map((p) => p.plan_id).sort());
    const evIds = rows<{ id: number }>(url, "SELECT id FROM events ORDER BY id").map((r) => r.id);
    expect(evIds).toEqual(Array.from({ length: evIds.length }, (_, i) => i + 1));
    // No session of the dead process is left holding anything.
    expect(rows(url, "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory'")).toEqual([{ n: 0 }]);
    expect(withStore(url, (s) => s.integrityCheck())).toBe("ok");
  });

  test("kill -9 of step run: the step keeps its lease, a sweep from another machine fails it after expiry", async () => {
    const url = cluster.createDatabase();
    const box = machine(url);
    const pub = await box.run(
      ["plan", "publish", "-"],
      JSON.stringify({ goal: "crash", steps: [th("long", "COMMAND")] }),
    );
    const stepId = String((pub.marker?.step_ids as string[] | undefined)?.[0]);
    const run = box.start(
      ["step", "run", "-"],
      JSON.stringify({ step_id: stepId, type: "COMMAND", command: "sleep 30", lease_seconds: 1 }),
    );
    run.release();
    const stepRow = () =>
      rows<{ status: string; lease_expires_at: number | null; lease_holder: string | null }>(
        url,
        "SELECT status, lease_expires_at, lease_holder FROM steps WHERE step_id = $1",
        [stepId],
      )[0];
    await waitFor(() => stepRow()?.status === "IN_PROGRESS", "the step to start", 60_000);
    run.child.kill("SIGKILL");
    await run.done;
    const crashed = stepRow();
    expect(crashed?.lease_holder).toMatch(new RegExp(`^${run.child.pid}@`));
    await waitFor(() => Date.now() > (crashed?.lease_expires_at ?? 0) + 500, "the lease to expire", 10_000);
    const sweep = await machine(url).run(["plan", "sweep"]);
    expect(sweep.status, sweep.stderr).toBe(0);
    expect(stepRow()).toMatchObject({ status: "FAILED", lease_holder: null, lease_expires_at: null });
    expect(rows(url, "SELECT status FROM plans")).toEqual([{ status: "FAILED" }]);
  });
});

describe.runIf(pgAvailable())("choosing PostgreSQL", () => {
  test("store.url in .ratchet/config.json selects it; a bad store.url is refused naming the field", async () => {
    const url = cluster.createDatabase();
    const dir = makeTempDir("ratchet-pg-config-");
    dirs.push(dir);
    expect((await ratchet(["init"], { cwd: dir })).status).toBe(0);
    writeFileSync(`${dir}/.ratchet/config.json`, JSON.stringify({ store: { url } }));
    const pub = await ratchet(["plan", "publish", "-"], {
      cwd: dir,
      input: JSON.stringify({ goal: "via config", steps: [th("x")] }),
    });
    expect(pub.status, pub.stderr).toBe(0);
    expect(rows(url, "SELECT goal FROM plans")).toEqual([{ goal: "via config" }]);
    const list = await ratchet(["plan", "list", "--json"], { cwd: dir });
    expect(list.stdout).toContain("via config");

    writeFileSync(`${dir}/.ratchet/config.json`, JSON.stringify({ store: { url: "mysql://x" } }));
    const bad = await ratchet(["plan", "list"], { cwd: dir });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/store\.url: must be a postgres:\/\/ or postgresql:\/\/ URL/);
  });

  test("the commands that once needed SQLite run on PostgreSQL and leave no stray SQLite file", async () => {
    const url = cluster.createDatabase();
    const box = machine(url);
    for (const args of [
      ["thread", "list", "--json"],
      ["metric", "list", "--json"],
    ]) {
      const r = await box.run(args);
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stderr).not.toContain("needs the SQLite store");
    }
    // No SQLite file named after the URL, nothing in the folder but what the ledger makes.
    expect(readdirSync(box.dir).filter((n) => n !== ".ratchet")).toEqual([]);
    expect(readdirSync(join(box.dir, ".ratchet")).filter((n) => n.endsWith(".db"))).toEqual([]);
  });

  test("events --follow on one machine sees what another machine writes, resuming after --since", async () => {
    const url = cluster.createDatabase();
    const [watcher, writer] = [machine(url), machine(url)];
    const first = await writer.run(
      ["plan", "publish", "-"],
      JSON.stringify({ goal: "before", steps: [th("x")] }),
    );
    expect(first.status, first.stderr).toBe(0);
    const since = withStore(url, (s) => s.lastEventId());
    const follow = startRatchet(
      ["events", "--follow", "--json", "--since", String(since), "--timeout", "20"],
      {
        cwd: watcher.dir,
        env: { RATCHET_DB: url },
        timeoutMs: 60_000,
      },
    );
    await waitFor(
      () =>
        withStore(
          url,
          (s) =>
            s.pg.query(
              "SELECT 1 FROM pg_stat_activity WHERE application_name = 'ratchet' AND pid <> pg_backend_pid()",
            ).rowCount > 0,
        ),
      "the follower to connect",
      30_000,
    );
    const second = await writer.run(
      ["plan", "publish", "-"],
      JSON.stringify({ goal: "after", steps: [th("y")] }),
    );
    const planId = String(second.marker?.plan_id);
    await waitFor(
      () => follow.stdoutSoFar().includes(planId),
      "the follower to print the new plan's event",
      30_000,
    );
    follow.child.kill("SIGTERM");
    const r = await follow.done;
    const events = r.lines.map((l) => JSON.parse(l) as { id: number; type: string; entity_id: string });
    expect(events.every((e) => e.id > since)).toBe(true);
    expect(events.map((e) => [e.type, e.entity_id])).toEqual([["plan.published", planId]]);
  });

  test("six processes open a fresh database at the same moment: all succeed, each migration recorded once", async () => {
    const url = cluster.createDatabase();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        machine(url).run(["plan", "publish", "-"], JSON.stringify({ goal: `first ${i}`, steps: [th("x")] })),
      ),
    );
    for (const r of results) expect(r.status, r.stderr).toBe(0);
    // Every migration recorded exactly once, in order.
    expect(rows(url, "SELECT id, name FROM schema_migrations ORDER BY id")).toEqual(
      PG_MIGRATIONS.map((m) => ({ id: m.id, name: m.name })),
    );
    expect(rows(url, "SELECT COUNT(*) AS n FROM plans")).toEqual([{ n: 6 }]);
  });

  test("an unreachable server: exit 3, the URL printed without its password", async () => {
    const box = machine(`postgres://postgres:hunter2@127.0.0.1:${cluster.port}/missing_db`);
    const r = await box.run(["plan", "list"]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/cannot connect to PostgreSQL at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/);
    expect(r.stderr).not.toContain("hunter2");
  });
});
