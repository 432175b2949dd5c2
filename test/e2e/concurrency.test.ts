/**
 * Many `ratchet` processes on ONE ledger at once. WAL + `BEGIN IMMEDIATE` + the roll-up inside the
 * write transaction must give: no SQLITE_BUSY, every op's expected outcome, exact counts — and, when
 * two agents complete the last two steps of a registered-project plan at the same instant, exactly
 * one reviewer hand-off.
 */
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  type CliResult,
  DAEMON_ON,
  eventsByType,
  type Marker,
  makeWorkspace,
  mapLimit,
  query,
  snapshot,
  startRatchet,
  stepsByStatus,
  type TestWorkspace,
  withDb,
} from "../helpers/cli.js";
import { stopDaemon } from "../helpers/daemon.js";

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 60_000 });

const WORKERS = 8;
const OPS_PER_WORKER = 200;
const PRIVATE_PLANS = 6; // per worker
const NEW_PLANS = 10; // published by each worker during the run
const CONTESTED_STEPS = 4;
const RACES = 100;

/** Signs that concurrency went wrong (lock errors, internal errors). */
const TROUBLE = /SQLITE_BUSY|database is locked|internal error|SqliteError/i;

const workspaces: TestWorkspace[] = [];
beforeAll(() => {
  assertBuilt();
});
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** Runs a batch (`step apply -`) and returns its per-line markers and summary. */
async function applyBatch(
  ws: TestWorkspace,
  ops: readonly object[],
): Promise<{ r: CliResult; out: Marker[] }> {
  const r = await ws.run(["step", "apply", "-"], { input: ops.map((o) => JSON.stringify(o)).join("\n") });
  return { r, out: r.lines.map((l) => JSON.parse(l) as Marker) };
}

/** One op of a worker's batch and what must come of it. */
interface PlannedOp {
  op: Record<string, unknown>;
  /** 0, a refusal status, or "contested" (0 for exactly one worker, 4 for the others). */
  expect: number | "contested";
  /** Events the op writes when it succeeds. */
  events: number;
}

const th = (title: string, type = "THINKING") => ({ title, type });

describe("concurrency", () => {
  test(`${WORKERS} processes × ${OPS_PER_WORKER} mixed ops on one ledger: expected outcomes, exact counts, no SQLITE_BUSY`, async () => {
    const ws = await makeWorkspace("ratchet-e2e-conc-");
    workspaces.push(ws);
    // Metrics name a project (the original's rule); this one has no repo, so no plan joins it.
    expect((await ws.run(["project", "add", "conc"])).status).toBe(0);

    // ── setup: shared plans (each worker owns two steps of each), a contested plan, private plans ──
    const publishes: object[] = [];
    for (let s = 0; s < 2; s++)
      publishes.push({
        op: "publish-plan",
        goal: `shared plan ${s}`,
        steps: Array.from({ length: WORKERS * 2 }, (_, i) => th(`shared ${s} step ${i}`)),
      });
    publishes.push({
      op: "publish-plan",
      goal: "contested plan",
      steps: Array.from({ length: CONTESTED_STEPS }, (_, i) => th(`contested ${i}`)),
    });
    for (let w = 0; w < WORKERS; w++)
      for (let p = 0; p < PRIVATE_PLANS; p++)
        publishes.push({
          op: "publish-plan",
          goal: `private w${w} p${p}`,
          steps: [th("a"), th("b", "CODE"), th("c", "ANALYSIS"), th("d", "TEST"), th("e", "COMMAND")],
        });
    const setup = await applyBatch(ws, publishes);
    expect(setup.r.status, setup.r.stderr).toBe(0);
    const planIds = setup.out.slice(0, publishes.length).map((m) => m.plan_id as string);
    const shared = planIds.slice(0, 2);
    const contested = planIds[2] as string;
    const privatePlan = (w: number, p: number) => planIds[3 + w * PRIVATE_PLANS + p] as string;
    const letter = (i: number) => String.fromCharCode(65 + i);
    const before = snapshot(ws);

    // ── each worker's 200 ops: interleaved streams, each stream in order ──
    const batches: PlannedOp[][] = [];
    let fillerPerWorker = 0;
    for (let w = 0; w < WORKERS; w++) {
      const streams: PlannedOp[][] = [];
      for (let p = 0; p < PRIVATE_PLANS; p++) {
        const id = (l: string) => `${privatePlan(w, p)}-${l}`;
        const ok = (op: Record<string, unknown>, events = 1): PlannedOp => ({ op, expect: 0, events });
        streams.push([
          ok({ op: "start-step", step_id: id("A"), agent_input: `w${w}` }),
          ok({ op: "append-log", step_id: id("A"), text: `worker ${w} plan ${p}` }),
          ok({ op: "complete-step", step_id: id("A"), summary: "a done" }),
          ok({ op: "start-step", step_id: id("B") }),
          ok({ op: "record-metric", name: "coverage", value: w * 10 + p, step_id: id("B"), project: "conc" }),
          ok({ op: "complete-step", step_id: id("B"), log_context: "b output" }),
          ok({ op: "start-step", step_id: id("C") }),
          ok({ op: "heartbeat", step_id: id("C"), lease_seconds: 600 }),
          ok({ op: "fail-step", step_id: id("C"), reason: "wrong data" }),
          ok({ op: "deviate", parent_step_id: id("C"), justification: "retry", sub_steps: [th("retry c")] }),
          ok({ op: "start-step", step_id: id("C.1") }),
          ok({ op: "complete-step", step_id: id("C.1") }),
          {
            op: { op: "deviate", parent_step_id: id("A"), justification: "redo", sub_steps: [th("x")] },
            expect: 4,
            events: 0,
          },
          { op: { op: "complete-step", step_id: id("E") }, expect: 5, events: 0 },
          ok({ op: "record-skill", plan_id: privatePlan(w, p), name: "tdd", source: "explicit-mention" }),
          ok({ op: "start-step", step_id: id("D") }),
          ok({ op: "complete-step", step_id: id("D") }),
          // The last step: started, completed, a metric from stdout, then the roll-up closes the
          // plan (review in_progress + completed, plan completed).
          ok(
            {
              op: "run-step",
              step_id: id("E"),
              type: "COMMAND",
              command: `echo worker ${w}; echo metric name=run_ok value=1`,
              metrics_from_stdout: true,
            },
            2 + 1 + 3,
          ),
        ]);
      }
      const sharedOps: PlannedOp[] = [];
      for (const s of shared) {
        const [s1, s2] = [`${s}-${letter(2 * w)}`, `${s}-${letter(2 * w + 1)}`];
        sharedOps.push(
          { op: { op: "start-step", step_id: s1 }, expect: 0, events: 1 },
          { op: { op: "append-log", step_id: s1, text: `w${w}` }, expect: 0, events: 1 },
          { op: { op: "complete-step", step_id: s1 }, expect: 0, events: 1 },
          { op: { op: "start-step", step_id: s2 }, expect: 0, events: 1 },
          { op: { op: "complete-step", step_id: s2 }, expect: 0, events: 1 },
        );
      }
      streams.push(sharedOps);
      streams.push(
        Array.from({ length: CONTESTED_STEPS }, (_, i) => ({
          op: { op: "start-step", step_id: `${contested}-${letter(i)}` },
          expect: "contested" as const,
          events: 1,
        })),
      );
      streams.push([
        { op: { op: "start-step", step_id: `ghost-w${w}` }, expect: 3, events: 0 },
        { op: { op: "append-log", step_id: `ghost-w${w}`, text: "t" }, expect: 3, events: 0 },
      ]);
      streams.push(
        Array.from({ length: NEW_PLANS }, (_, i) => ({
          op: { op: "publish-plan", goal: `w${w} new plan ${i}`, steps: [th("x"), th("y", "CODE")] },
          expect: 0,
          events: 1,
        })),
      );
      // Line 1 is a deterministic refusal (PENDING → COMPLETED), so every worker exits 4.
      const first: PlannedOp = {
        op: { op: "complete-step", step_id: `${privatePlan(w, 0)}-A` },
        expect: 4,
        events: 0,
      };
      fillerPerWorker = OPS_PER_WORKER - 1 - streams.reduce((n, s) => n + s.length, 0);
      streams.push(
        Array.from({ length: fillerPerWorker }, (_, i) => ({
          op: { op: "record-metric", name: `w${w}.free`, value: i, unit: "n", project: "conc" },
          expect: 0,
          events: 1,
        })),
      );
      // Round-robin merge, keeping each stream's order.
      const merged: PlannedOp[] = [first];
      for (let round = 0; merged.length < OPS_PER_WORKER; round++)
        for (const s of streams) if (round < s.length) merged.push(s[round] as PlannedOp);
      expect(merged).toHaveLength(OPS_PER_WORKER);
      batches.push(merged);
    }

    // ── all workers at once: start every process, then release their stdin together ──
    const running = batches.map((ops) =>
      startRatchet(["step", "apply", "-"], {
        cwd: ws.dir,
        holdStdin: true,
        input: ops.map((o) => JSON.stringify(o.op)).join("\n"),
        timeoutMs: 120_000,
      }),
    );
    for (const r of running) r.release();
    const results = await Promise.all(running.map((r) => r.done));

    // ── every line as expected ──
    const contestedWins = new Map<string, number>();
    let expectedEvents = 0;
    results.forEach((r, w) => {
      expect(r.stderr, `worker ${w} stderr`).not.toMatch(TROUBLE);
      expect(r.status, `worker ${w}: ${r.stderr}`).toBe(4);
      const out = r.lines.map((l) => JSON.parse(l) as Marker);
      expect(out).toHaveLength(OPS_PER_WORKER + 1);
      const ops = batches[w] as PlannedOp[];
      let failed = 0;
      ops.forEach((planned, i) => {
        const m = out[i] as Marker;
        const where = `worker ${w} line ${i + 1} ${JSON.stringify(planned.op)} → ${JSON.stringify(m)}`;
        expect(m.line, where).toBe(i + 1);
        expect(m.op, where).toBe(planned.op.op);
        expect(m.code, where).not.toBe("internal");
        if (planned.expect === "contested") {
          if (m.ok === true) {
            contestedWins.set(
              String(planned.op.step_id),
              (contestedWins.get(String(planned.op.step_id)) ?? 0) + 1,
            );
            expectedEvents += planned.events;
          } else {
            failed++;
            expect(m, where).toMatchObject({
              ok: false,
              exit_status: 4,
              accepted: false,
              code: "illegal_transition",
            });
          }
        } else if (planned.expect === 0) {
          expect(m.ok, where).toBe(true);
          if (planned.op.op === "run-step") expect(m.exit_code, where).toBe(0);
          expectedEvents += planned.events;
        } else {
          failed++;
          expect(m, where).toMatchObject({ ok: false, exit_status: planned.expect });
        }
      });
      expect(out[OPS_PER_WORKER]).toMatchObject({
        ok: false,
        op: "apply",
        applied: OPS_PER_WORKER - failed,
        failed,
      });
    });
    // Each contested step was won by exactly one worker.
    expect([...contestedWins.entries()].sort()).toEqual(
      Array.from({ length: CONTESTED_STEPS }, (_, i) => [`${contested}-${letter(i)}`, 1]),
    );
    // The two shared plans closed once each (review in_progress + completed, plan completed).
    expectedEvents += 2 * 3;

    // ── exact counts in the store ──
    const after = snapshot(ws);
    const privateCount = WORKERS * PRIVATE_PLANS;
    expect(after.counts.events - before.counts.events).toBe(expectedEvents);
    expect(after.counts).toEqual({
      plans: before.counts.plans + WORKERS * NEW_PLANS,
      steps: before.counts.steps + WORKERS * NEW_PLANS * 3 + privateCount, // + each C.1
      // A log, B log_context, C's [FAILED] line, E kickoff + run; shared logs; a [REVIEW SKIPPED]
      // line per closed plan
      step_logs: privateCount * 5 + WORKERS * 2 + privateCount + 2,
      deviations: privateCount,
      skills: privateCount,
      metrics: privateCount * 2 + WORKERS * fillerPerWorker, // B's metric + run_ok; the free metrics
      events: before.counts.events + expectedEvents,
    });
    expect(stepsByStatus(ws)).toEqual({
      PENDING: WORKERS * NEW_PLANS * 3 + 1, // new plans, the contested plan's review
      IN_PROGRESS: CONTESTED_STEPS,
      COMPLETED: privateCount * 6 + 2 * (WORKERS * 2 + 1), // A B C.1 D E REVIEW; shared steps + reviews
      FAILED: privateCount, // each C, recovered by C.1
    });
    const plans = query<{ status: string; n: number }>(
      ws,
      "SELECT status, COUNT(*) AS n FROM plans GROUP BY status ORDER BY status",
    );
    expect(plans).toEqual([
      { status: "COMPLETED", n: privateCount + 2 },
      { status: "IN_PROGRESS", n: WORKERS * NEW_PLANS + 1 },
    ]);
    expect(eventsByType(ws)).toMatchObject({
      "plan.published": 3 + privateCount + WORKERS * NEW_PLANS,
      "plan.completed": privateCount + 2,
      "plan.deviated": privateCount,
      "step.failed": privateCount,
    });
    expect(query(ws, "SELECT COUNT(*) AS n FROM metrics WHERE name = 'run_ok'")).toEqual([
      { n: privateCount },
    ]);
    // Event ids are dense: every id handed out belongs to a committed event (no half-written op).
    const ids = query<{ id: number }>(ws, "SELECT id FROM events ORDER BY id").map((r) => r.id);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
  });

  // With the workspace daemon on, the pairs race through one resident process (the first ones
  // also race to start it: the workspace lock lets one serve, the others run in-process).
  test.each([
    ["in-process", {}],
    ["through the daemon", DAEMON_ON],
  ] as const)(
    `two agents complete the last two steps at the same instant, ${RACES} times, %s: exactly one hand-off each`,
    async (mode, env) => {
      const ws = await makeWorkspace("ratchet-e2e-race-");
      workspaces.push(ws);
      const add = await ws.run(["project", "add", "race"]);
      expect(add.status).toBe(0);
      const pub = await applyBatch(
        ws,
        Array.from({ length: RACES }, (_, i) => ({
          op: "publish-plan",
          goal: `race ${i}`,
          project: "race",
          steps: [th("left"), th("right")],
        })),
      );
      expect(pub.r.status, pub.r.stderr).toBe(0);
      const plans = pub.out.slice(0, RACES).map((m) => m.plan_id as string);
      expect(new Set(plans).size).toBe(RACES);
      const started = await applyBatch(
        ws,
        plans.flatMap((p) => [
          { op: "start-step", step_id: `${p}-A` },
          { op: "start-step", step_id: `${p}-B` },
        ]),
      );
      expect(started.r.status, started.r.stderr).toBe(0);

      // Four races at a time (8 processes on 2 cores); in each, both processes start, then both get
      // their input at the same moment.
      const outcomes = await mapLimit(plans, 4, async (planId) => {
        const pair = ["A", "B"].map((l) =>
          startRatchet(["step", "complete", "-"], {
            cwd: ws.dir,
            env,
            holdStdin: true,
            input: JSON.stringify({ step_id: `${planId}-${l}`, summary: `${l} done` }),
          }),
        );
        for (const p of pair) p.release();
        return { planId, results: await Promise.all(pair.map((p) => p.done)) };
      });

      for (const { planId, results } of outcomes) {
        for (const r of results) {
          expect(r.status, `${planId}: ${r.stderr}`).toBe(0);
          expect(r.stderr).not.toMatch(TROUBLE);
          expect(r.marker).toMatchObject({ ok: true, op: "complete-step", status: "COMPLETED" });
        }
        // Exactly one of the two saw the hand-off (the one that completed last).
        const handoffs = results.filter((r) => r.marker?.needs_agent_review === true);
        expect(handoffs, planId).toHaveLength(1);
        expect(handoffs[0]?.marker).toMatchObject({
          project: "race",
          review_status: "NEEDS_REVIEW",
          review_child_step_id: `${planId}-REVIEW.1`,
        });
      }

      const perPlan = query<{ plan_id: string; n: number }>(
        ws,
        "SELECT plan_id, COUNT(*) AS n FROM events WHERE type = 'plan.needs_review' GROUP BY plan_id",
      );
      expect(perPlan).toHaveLength(RACES);
      expect(perPlan.every((r) => r.n === 1)).toBe(true);
      const children = query<{ step_id: string; plan_id: string; status: string }>(
        ws,
        "SELECT step_id, plan_id, status FROM steps WHERE role = 'review_child' ORDER BY plan_id",
      );
      expect(children).toEqual(
        [...plans].sort().map((p) => ({ step_id: `${p}-REVIEW.1`, plan_id: p, status: "PENDING" })),
      );
      expect(
        query(ws, "SELECT status, revision_count, COUNT(*) AS n FROM plans GROUP BY status, revision_count"),
      ).toEqual([{ status: "IN_PROGRESS", revision_count: 1, n: RACES }]);
      expect(stepsByStatus(ws)).toEqual({ COMPLETED: 2 * RACES, NEEDS_REVIEW: RACES, PENDING: RACES });
      // The daemon variant really went through it: all but the first few commands.
      if (mode === "through the daemon") expect(await stopDaemon(ws)).toBeGreaterThan(RACES);
    },
  );
});
