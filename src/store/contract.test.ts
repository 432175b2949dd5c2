/**
 * The `Store` contract, one suite run against every implementation: SQLite (a temp file) and
 * PostgreSQL (a real server from test/harness/pg.ts, a fresh database per test). Every method:
 * inserts, reads, patches, queries, ordering, limits, keyset paging, transactions (rollback on
 * throw, nested calls joining the outer one, writes refused outside one), dense event ids in commit
 * order. Then the runs area (`RunStore`) the same way on both.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../test/harness/pg.js";
import { MOVE_STEP_COLUMNS } from "./columns.js";
import { PG_MIGRATIONS } from "./postgres/migrations.js";
import { WORKSPACE_WRITE_LOCK } from "./postgres/open.js";
import { PgStore } from "./postgres/pg-store.js";
import { RunStatus, type RunStore } from "./runs.js";
import { blobsOf, runStoreOf } from "./select.js";
import { SqliteStore } from "./sqlite/sqlite-store.js";
import type { PlanRow, StepRow, Store } from "./types.js";

let cluster: PgCluster | undefined;
let sharedUrl: string | undefined;
const LEDGER_TABLES = [
  "projects",
  "plans",
  "steps",
  "step_logs",
  "deviations",
  "skills",
  "metrics",
  "events",
  "workflow_step_runs",
  "workflow_runs",
  "blobs",
  "prov_node_cache, prov_headline_responses, prov_headlines, prov_influence, prov_read_hits, prov_trigger_log, prov_reference_checks, prov_reference_links, prov_change_reasons, prov_references, prov_utterances, prov_node_events, prov_node_snapshots, prov_analysis_runs",
];
const dirs: string[] = [];

beforeAll(async () => {
  if (pgAvailable()) cluster = await startPgCluster();
}, 120_000);
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Impl {
  name: string;
  open(): Store;
}

const IMPLS: Impl[] = [
  {
    name: "sqlite",
    open() {
      const dir = mkdtempSync(join(tmpdir(), "ratchet-contract-"));
      dirs.push(dir);
      return SqliteStore.open(join(dir, "ratchet.db"), { create: true });
    },
  },
  {
    name: "postgres",
    open() {
      if (!cluster) throw new Error("PostgreSQL is not installed: run `bash scripts/ensure-system-deps.sh`");
      // One database for the suite, emptied for each test (CREATE DATABASE costs ~0.3 s with fsync on).
      sharedUrl ??= cluster.createDatabase();
      const s = PgStore.open(sharedUrl);
      s.pg.exec(`TRUNCATE ${LEDGER_TABLES.join(", ")}`);
      return s;
    },
  },
];

const T0 = "2026-12-01T10:00:00.000Z";

function plan(id: string, over: Partial<PlanRow> = {}): PlanRow {
  return {
    plan_id: id,
    goal: `goal of ${id}`,
    kind: "plan",
    project: null,
    project_source: null,
    status: "IN_PROGRESS",
    revision_count: 0,
    max_revisions: 3,
    source_cwd: "/tmp",
    created_at: T0,
    updated_at: T0,
    finished_at: null,
    ...over,
  };
}

function step(planId: string, letter: string, over: Partial<StepRow> = {}): StepRow {
  return {
    step_id: `${planId}-${letter}`,
    plan_id: planId,
    parent_step_id: null,
    seq: 1,
    role: "regular",
    depth: 0,
    title: `step ${letter}`,
    description: null,
    type: "THINKING",
    status: "PENDING",
    summary: null,
    agent_input: null,
    agent_output: null,
    failure_reason: null,
    exit_code: null,
    tokens: 0,
    duration_ms: null,
    lease_holder: null,
    lease_expires_at: null,
    heartbeat_at: null,
    started_at: null,
    finished_at: null,
    created_at: T0,
    updated_at: T0,
    ...over,
  };
}

const withStore = (impl: Impl, fn: (s: Store) => void) => () => {
  const s = impl.open();
  try {
    fn(s);
  } finally {
    s.close();
  }
};

describe.each(IMPLS)("Store contract: $name", (impl) => {
  const it = impl.name === "postgres" ? test.runIf(pgAvailable()) : test;

  it(
    "plans: insert, get with every column, patch, unknown id",
    withStore(impl, (s) => {
      s.tx(() => s.insertPlan(plan("p1", { user_query: "do it", extensions: '{"a":1}' })));
      expect(s.getPlan("p1")).toMatchObject({
        ...plan("p1"),
        user_query: "do it",
        abandon_reason: null,
        review_state: null,
        review_skip_reason: null,
        extensions: '{"a":1}',
      });
      s.tx(() => s.updatePlan("p1", { status: "COMPLETED", revision_count: 2, finished_at: T0 }));
      const p = s.getPlan("p1");
      expect(p).toMatchObject({
        status: "COMPLETED",
        revision_count: 2,
        finished_at: T0,
        goal: "goal of p1",
      });
      expect(p?.updated_at).not.toBe(T0); // stamped by the store
      s.tx(() => s.updatePlan("p1", { updated_at: "2030-01-01T00:00:00.000Z" }));
      expect(s.getPlan("p1")?.updated_at).toBe("2030-01-01T00:00:00.000Z");
      expect(s.getPlan("nope")).toBeUndefined();
      expect(() => s.tx(() => s.updatePlan("nope", { status: "FAILED" }))).toThrow(/changed 0 rows/);
      // A duplicate id is refused and nothing changes.
      expect(() => s.tx(() => s.insertPlan(plan("p1", { goal: "other" })))).toThrow();
      expect(s.getPlan("p1")?.goal).toBe("goal of p1");
    }),
  );

  it(
    "listPlans: newest first, filters, limit, keyset paging with ties on created_at (byte order)",
    withStore(impl, (s) => {
      s.tx(() => {
        // Ties on created_at; ids whose byte order differs from a linguistic order (case, '-', '_').
        const ids = ["b-2", "B_1", "a", "a-b", "Z", "b_1", "ab"];
        ids.forEach((id, i) => {
          s.insertPlan(
            plan(id, {
              created_at: i < 4 ? T0 : "2026-12-01T11:00:00.000Z",
              status: i % 2 ? "COMPLETED" : "IN_PROGRESS",
              kind: i === 0 ? "workflow_run" : "plan",
            }),
          );
        });
      });
      const all = s.listPlans({}).map((p) => p.plan_id);
      // created_at DESC, then plan_id DESC in byte order ('Z' < 'a' < 'b'; '-' < '_').
      expect(all).toEqual(["b_1", "ab", "Z", "b-2", "a-b", "a", "B_1"]);
      expect(s.listPlans({ limit: 2 }).map((p) => p.plan_id)).toEqual(["b_1", "ab"]);
      expect(s.listPlans({ status: "COMPLETED" }).map((p) => p.plan_id)).toEqual(["b_1", "a-b", "B_1"]);
      expect(s.listPlans({ kind: "workflow_run" }).map((p) => p.plan_id)).toEqual(["b-2"]);
      // Page through with the keyset: every plan exactly once, in order.
      const paged: string[] = [];
      let before: { created_at: string; plan_id: string } | undefined;
      for (;;) {
        const page = s.listPlans({ limit: 3, ...(before ? { before } : {}) });
        if (page.length === 0) break;
        paged.push(...page.map((p) => p.plan_id));
        const last = page[page.length - 1] as PlanRow;
        before = { created_at: last.created_at, plan_id: last.plan_id };
      }
      expect(paged).toEqual(all);
    }),
  );

  it(
    "steps: insert, get, patch (numbers, nulls, epoch ms), tree reads, open counts",
    withStore(impl, (s) => {
      const lease = 1_764_000_000_123; // epoch ms: beyond 32 bits
      s.tx(() => {
        s.insertPlan(plan("p"));
        s.insertStep(step("p", "A"));
        s.insertStep(step("p", "B", { seq: 2, type: "CODE" }));
        s.insertStep(step("p", "A.1", { parent_step_id: "p-A", depth: 1 }));
        s.insertStep(step("p", "A.2", { parent_step_id: "p-A", depth: 1, seq: 2 }));
        s.insertStep(step("p", "REVIEW", { seq: 3, role: "review", type: "REVIEW" }));
      });
      expect(s.getStep("p-A")).toEqual(step("p", "A"));
      // Exactly the StepRow fields, in their order (SQLite's migration 13 `reserve` is never read).
      expect(Object.keys(s.getStep("p-A") ?? {})).toEqual(Object.keys(step("p", "A")));
      expect(Object.keys(s.stepsOfPlan("p")[0] ?? {})).toEqual(Object.keys(step("p", "A")));
      s.tx(() =>
        s.updateStep("p-B", {
          status: "IN_PROGRESS",
          lease_holder: "1@host",
          lease_expires_at: lease,
          tokens: 42,
          duration_ms: 12_345_678_901,
          exit_code: 0,
        }),
      );
      expect(s.getStep("p-B")).toMatchObject({
        status: "IN_PROGRESS",
        lease_holder: "1@host",
        lease_expires_at: lease,
        tokens: 42,
        duration_ms: 12_345_678_901,
        exit_code: 0,
      });
      s.tx(() => s.updateStep("p-B", { exit_code: null }));
      expect(s.getStep("p-B")?.exit_code).toBeNull();
      expect(s.stepsOfPlan("p").map((x) => x.step_id)).toEqual(["p-A", "p-B", "p-REVIEW", "p-A.1", "p-A.2"]);
      expect(s.childrenOf("p-A").map((x) => x.step_id)).toEqual(["p-A.1", "p-A.2"]);
      expect(s.childrenOf("p-B")).toEqual([]);
      expect(s.countOpenSteps("p")).toBe(4); // the review step does not count
      s.tx(() => s.updateStep("p-A.1", { status: "COMPLETED" }));
      expect(s.countOpenSteps("p")).toBe(3);
      // The roll-up's cheap reads agree with the full ones.
      expect(s.hasOpenSteps("p")).toBe(true);
      expect(s.hasOpenSteps("no-such-plan")).toBe(false);
      expect(s.stepStatus("p-A.1")).toBe("COMPLETED");
      expect(s.stepStatus("ghost")).toBeUndefined();
      expect(s.planStatus("p")).toBe(s.getPlan("p")?.status);
      expect(s.planStatus("ghost")).toBeUndefined();
      expect(s.getStep("ghost")).toBeUndefined();
      // stepForMove: in one statement, what the separate reads give (the roll-up's "others open"
      // is hasOpenSteps with the step itself taken as closed).
      const open = (id: string) =>
        s
          .stepsOfPlan("p")
          .some(
            (x) =>
              x.role === "regular" &&
              x.step_id !== id &&
              ["PENDING", "IN_PROGRESS", "NEEDS_REVIEW"].includes(x.status),
          );
      for (const id of ["p-A", "p-B", "p-A.1", "p-A.2", "p-REVIEW"]) {
        const m = s.stepForMove(id, true);
        // The columns a move checks, each as getStep reads it (types, NULLs), and no other.
        const full = s.getStep(id) as StepRow;
        const narrow = Object.fromEntries(MOVE_STEP_COLUMNS.map((c) => [c, full[c]]));
        expect(m?.step).toStrictEqual(narrow);
        expect(Object.keys(m?.step ?? {})).toEqual([...MOVE_STEP_COLUMNS]);
        expect(m).toMatchObject({ planStatus: s.planStatus("p"), reviewStatus: s.stepStatus("p-REVIEW") });
        expect(m?.othersOpen).toBe(open(id));
        expect(s.stepForMove(id, false)).toEqual({
          step: narrow,
          planStatus: s.planStatus("p"),
          othersOpen: false,
          reviewStatus: undefined,
        });
      }
      expect(s.stepForMove("ghost", true)).toBeUndefined();
      // stepStatesOfPlan: stepsOfPlan's rows, in its order, narrowed to the roll-up's four columns.
      const states = (id: string) =>
        s.stepsOfPlan(id).map((x) => ({
          step_id: x.step_id,
          parent_step_id: x.parent_step_id,
          role: x.role,
          status: x.status,
        }));
      expect(s.stepStatesOfPlan("p")).toStrictEqual(states("p"));
      expect(s.stepStatesOfPlan("p").length).toBeGreaterThan(3);
      expect(s.stepStatesOfPlan("ghost")).toEqual([]);
      // The last open regular step: the plan has open work, but none besides it.
      s.tx(() => {
        for (const x of s.stepsOfPlan("p"))
          if (x.role === "regular" && x.step_id !== "p-B") s.updateStep(x.step_id, { status: "COMPLETED" });
      });
      expect(s.hasOpenSteps("p")).toBe(true);
      expect(s.stepForMove("p-B", true)?.othersOpen).toBe(false);
      expect(s.stepForMove("p-A", true)?.othersOpen).toBe(true);
      s.tx(() => s.updatePlan("p", { status: "FAILED" }));
      expect(s.stepForMove("p-B", true)?.planStatus).toBe("FAILED");
      // A step of an unknown plan is refused (foreign key), like SQLite's foreign_keys = ON.
      expect(() => s.tx(() => s.insertStep(step("ghost", "A")))).toThrow();
    }),
  );

  it(
    "leases: expired ones found per plan and across open plans only; releaseLeases clears and counts",
    withStore(impl, (s) => {
      s.tx(() => {
        s.insertPlan(plan("open"));
        s.insertPlan(plan("done", { status: "COMPLETED" }));
        s.insertStep(step("open", "A", { status: "IN_PROGRESS", lease_holder: "x", lease_expires_at: 1000 }));
        s.insertStep(
          step("open", "B", { seq: 2, status: "IN_PROGRESS", lease_holder: "y", lease_expires_at: 500 }),
        );
        s.insertStep(
          step("open", "C", { seq: 3, status: "IN_PROGRESS", lease_holder: "z", lease_expires_at: 9000 }),
        );
        s.insertStep(step("open", "D", { seq: 4, status: "COMPLETED", lease_expires_at: 10 }));
        s.insertStep(step("done", "A", { status: "IN_PROGRESS", lease_holder: "w", lease_expires_at: 10 }));
      });
      expect(s.expiredLeases(2000).map((x) => x.step_id)).toEqual(["open-B", "open-A"]);
      expect(s.expiredLeases(2000, "done").map((x) => x.step_id)).toEqual(["done-A"]);
      expect(s.expiredLeases(100)).toEqual([]);
      expect(s.tx(() => s.releaseLeases("open"))).toBe(4);
      expect(s.getStep("open-A")).toMatchObject({ lease_holder: null, lease_expires_at: null });
      expect(s.expiredLeases(1e15)).toEqual([]);
      expect(s.tx(() => s.releaseLeases("open"))).toBe(0);
    }),
  );

  it(
    "logs, deviations, skills, metrics: ids increase from 1, reads per step/plan in id order",
    withStore(impl, (s) => {
      s.tx(() => {
        s.insertPlan(plan("p"));
        s.insertPlan(plan("q"));
        s.insertStep(step("p", "A"));
        s.insertStep(step("q", "A"));
      });
      const ids = s.tx(() => [
        s.insertLog({
          step_id: "p-A",
          plan_id: "p",
          at: T0,
          kind: "log",
          text: "one",
          bytes: 3,
          truncated: 0,
          blob: null,
        }),
        s.insertLog({
          step_id: "q-A",
          plan_id: "q",
          at: T0,
          kind: "log",
          text: "x",
          bytes: 1,
          truncated: 0,
          blob: null,
        }),
        s.insertLog({
          step_id: "p-A",
          plan_id: "p",
          at: T0,
          kind: "run",
          text: "two ✓",
          bytes: 7,
          truncated: 1,
          blob: "ab".repeat(32),
        }),
      ]);
      expect(ids).toEqual([1, 2, 3]);
      expect(s.logsOfStep("p-A").map((l) => [l.id, l.text, l.truncated, l.blob])).toEqual([
        [1, "one", 0, null],
        [3, "two ✓", 1, "ab".repeat(32)],
      ]);
      expect(s.logsOfPlan("q").map((l) => l.id)).toEqual([2]);

      const dev = {
        plan_id: "p",
        kind: "sub_steps",
        parent_step_id: "p-A",
        justification: "why",
        sub_step_ids: '["p-A.1"]',
        old_max: null,
        new_max: null,
        created_at: T0,
      };
      expect(
        s.tx(() => [
          s.insertDeviation(dev),
          s.insertDeviation({ ...dev, kind: "budget", old_max: 3, new_max: 5 }),
        ]),
      ).toEqual([1, 2]);
      expect(s.deviationsOfPlan("p")).toEqual([
        { id: 1, ...dev },
        { id: 2, ...dev, kind: "budget", old_max: 3, new_max: 5 },
      ]);
      expect(s.deviationsOfPlan("q")).toEqual([]);

      const sk = {
        plan_id: "p",
        step_id: null,
        name: "tdd",
        source: "explicit-mention",
        reason: null,
        created_at: T0,
      };
      expect(s.tx(() => s.insertSkill(sk))).toBe(1);
      expect(s.skillsOfPlan("p")).toEqual([{ id: 1, ...sk }]);

      const m = {
        name: "coverage",
        value: 87.5,
        unit: "%",
        project: "x",
        plan_id: "p",
        step_id: "p-A",
        created_at: T0,
      };
      expect(s.tx(() => [s.insertMetric(m), s.insertMetric({ ...m, value: 3, source: "run-step" })])).toEqual(
        [1, 2],
      );
      expect(s.metricsOfPlan("p")).toEqual([
        { id: 1, ...m, source: null },
        { id: 2, ...m, value: 3, source: "run-step" },
      ]);
    }),
  );

  it(
    "projects: add, get, by repo, list sorted; a repo belongs to one project",
    withStore(impl, (s) => {
      s.tx(() => {
        s.addProject({ name: "zeta", repo_path: "/r/z", created_at: T0 });
        s.addProject({ name: "alpha", repo_path: null, created_at: T0 });
        s.addProject({ name: "Beta", repo_path: null, created_at: T0 });
      });
      expect(s.getProject("zeta")).toEqual({ name: "zeta", repo_path: "/r/z", created_at: T0 });
      expect(s.getProject("nope")).toBeUndefined();
      expect(s.projectForRepo("/r/z")?.name).toBe("zeta");
      expect(s.projectForRepo("/r/none")).toBeUndefined();
      expect(s.listProjects().map((p) => p.name)).toEqual(["Beta", "alpha", "zeta"]);
      expect(() => s.tx(() => s.addProject({ name: "other", repo_path: "/r/z", created_at: T0 }))).toThrow();
    }),
  );

  it(
    "events: dense increasing ids, filters, since, limit, lastEventId; payload round-trips",
    withStore(impl, (s) => {
      expect(s.lastEventId()).toBe(0);
      expect(s.listEvents({})).toEqual([]);
      const ids = s.tx(() => [
        s.appendEvent({
          entityKind: "plan",
          entityId: "p",
          planId: "p",
          type: "plan.published",
          payload: { n: 1, s: "é" },
        }),
        s.appendEvent({ entityKind: "step", entityId: "p-A", planId: "p", type: "step.in_progress" }),
        s.appendEvent({ entityKind: "project", entityId: "x", type: "project.added" }),
      ]);
      expect(ids).toEqual([1, 2, 3]);
      expect(
        s.tx(() =>
          s.appendEvent({ entityKind: "step", entityId: "p-A", planId: "p", type: "step.completed" }),
        ),
      ).toBe(4);
      expect(s.lastEventId()).toBe(4);
      const all = s.listEvents({});
      expect(all.map((e) => e.id)).toEqual([1, 2, 3, 4]);
      expect(all[0]).toMatchObject({
        entity_kind: "plan",
        entity_id: "p",
        plan_id: "p",
        type: "plan.published",
      });
      expect(JSON.parse(all[0]?.payload ?? "")).toEqual({ n: 1, s: "é" });
      expect(all[2]?.plan_id).toBeNull();
      expect(all[1]?.payload).toBe("{}");
      expect(s.listEvents({ since: 2 }).map((e) => e.id)).toEqual([3, 4]);
      expect(s.listEvents({ planId: "p" }).map((e) => e.id)).toEqual([1, 2, 4]);
      expect(s.listEvents({ entityKind: "step", entityId: "p-A" }).map((e) => e.id)).toEqual([2, 4]);
      expect(s.listEvents({ since: 0, limit: 2 }).map((e) => e.id)).toEqual([1, 2]);
      expect(s.listEvents({ since: 4 })).toEqual([]);
    }),
  );

  it(
    "events by plan: interleaved plans, plan-less events, since and limit inside and across runs, entity filters",
    withStore(impl, (s) => {
      // Runs of consecutive events of one plan (SQLite indexes only each run's first event): a long
      // run, single events alternating between plans, a plan-less event splitting a run.
      const pattern = ["a", "a", "a", "b", "a", "b", "a", null, "a", "a", "c", "c", "b", "b", "a", "c", "a"];
      s.tx(() => {
        for (const [i, p] of pattern.entries())
          s.appendEvent({
            entityKind: i % 3 === 0 ? "plan" : "step",
            entityId: p ? `${p}-${i % 2}` : "x",
            planId: p ?? undefined,
            type: `t${i}`,
          });
      });
      const all = s.listEvents({});
      expect(all.map((e) => e.id)).toEqual(pattern.map((_, i) => i + 1));
      for (const p of ["a", "b", "c", "ghost"]) {
        const want = all.filter((e) => e.plan_id === p);
        expect(s.listEvents({ planId: p })).toEqual(want);
        for (let since = 0; since <= pattern.length; since++) {
          const after = want.filter((e) => e.id > since);
          expect(s.listEvents({ planId: p, since })).toEqual(after);
          expect(s.listEvents({ planId: p, since, limit: 2 })).toEqual(after.slice(0, 2));
          expect(s.listEvents({ planId: p, since, entityKind: "step", entityId: `${p}-1` })).toEqual(
            after.filter((e) => e.entity_kind === "step" && e.entity_id === `${p}-1`),
          );
        }
      }
      // Events after the first read continue the same runs.
      s.tx(() => s.appendEvent({ entityKind: "step", entityId: "a-1", planId: "a", type: "late" }));
      expect(s.listEvents({ planId: "a", since: 17 }).map((e) => e.type)).toEqual(["late"]);
      expect(Object.keys(all[0] ?? {})).toEqual([
        "id",
        "at",
        "entity_kind",
        "entity_id",
        "plan_id",
        "type",
        "payload",
      ]);
    }),
  );

  it(
    "tx: a throw rolls back every write of the transaction, events included, and ids do not skip",
    withStore(impl, (s) => {
      s.tx(() => s.insertPlan(plan("keep")));
      expect(() =>
        s.tx(() => {
          s.insertPlan(plan("gone"));
          s.insertStep(step("gone", "A"));
          s.appendEvent({ entityKind: "plan", entityId: "gone", type: "plan.published" });
          s.updatePlan("keep", { status: "FAILED" });
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(s.getPlan("gone")).toBeUndefined();
      expect(s.getStep("gone-A")).toBeUndefined();
      expect(s.getPlan("keep")?.status).toBe("IN_PROGRESS");
      expect(s.lastEventId()).toBe(0);
      // A failing statement (duplicate key) also rolls back what came before it.
      expect(() =>
        s.tx(() => {
          s.appendEvent({ entityKind: "plan", entityId: "keep", type: "x" });
          s.insertPlan(plan("keep"));
        }),
      ).toThrow();
      expect(s.lastEventId()).toBe(0);
      expect(s.tx(() => s.appendEvent({ entityKind: "plan", entityId: "keep", type: "y" }))).toBe(1);
      // The store is usable after each failure.
      expect(s.integrityCheck()).toBe("ok");
    }),
  );

  it(
    "tx: nested calls join the outer transaction (an inner throw caught inside keeps the outer going; an outer throw undoes the inner writes)",
    withStore(impl, (s) => {
      const r = s.tx(() => {
        s.insertPlan(plan("outer"));
        const inner = s.tx(() => {
          s.insertPlan(plan("inner"));
          return s.appendEvent({ entityKind: "plan", entityId: "inner", type: "t" });
        });
        return inner + 100;
      });
      expect(r).toBe(101);
      expect(s.getPlan("inner")).toBeDefined();
      expect(() =>
        s.tx(() => {
          s.tx(() => s.insertPlan(plan("inner2")));
          throw new Error("outer fails");
        }),
      ).toThrow("outer fails");
      expect(s.getPlan("inner2")).toBeUndefined();
    }),
  );

  it(
    "writes outside a transaction are refused and write nothing",
    withStore(impl, (s) => {
      expect(() => s.insertPlan(plan("p"))).toThrow(/inside a store transaction/);
      expect(() => s.appendEvent({ entityKind: "x", entityId: "y", type: "z" })).toThrow(
        /inside a store transaction/,
      );
      expect(() => s.addProject({ name: "n", repo_path: null, created_at: T0 })).toThrow(
        /inside a store transaction/,
      );
      expect(s.getPlan("p")).toBeUndefined();
      expect(s.lastEventId()).toBe(0);
      expect(s.listProjects()).toEqual([]);
    }),
  );

  it("two connections: a write transaction waits for the other's commit and sees it (no lost update)", () => {
    // Two sessions on one store. The second's transaction starts while the first is inside its
    // own (SQLite: BEGIN IMMEDIATE waits; PostgreSQL: the advisory lock waits) — here the first
    // commits before the second begins, since one thread cannot interleave blocking calls; the
    // multi-process race lives in test/e2e/pg-concurrency.test.ts.
    const a = impl.open();
    try {
      a.tx(() => a.insertPlan(plan("p")));
      for (let i = 0; i < 5; i++)
        a.tx(() => a.updatePlan("p", { revision_count: (a.getPlan("p")?.revision_count ?? 0) + 1 }));
      expect(a.getPlan("p")?.revision_count).toBe(5);
      expect(a.integrityCheck()).toBe("ok");
    } finally {
      a.close();
    }
  });
});

/** A run store with a clock that ticks 1 s per call from T0 (so every stamp is distinct and ordered). */
function runsOf(s: Store): RunStore {
  let t = Date.parse(T0);
  return runStoreOf(s, () => {
    t += 1000;
    return new Date(t).toISOString();
  });
}

const STEPS = [
  // Insertion order differs from every alphabetical order: stepRuns must keep it.
  { step_id: "zeta", ledger_step_id: "P-A", mode: "learn_code" },
  { step_id: "alpha", ledger_step_id: "P-B", mode: "learn_code" },
  { step_id: "Mid", ledger_step_id: null, mode: "direct" },
];

function newRun(
  runs: RunStore,
  runId: string,
  over: {
    workflow_id?: string;
    group_name?: string | null;
    plan_id?: string | null;
    started_at?: string;
  } = {},
) {
  return runs.startRun(
    {
      run_id: runId,
      workflow_id: over.workflow_id ?? "wf",
      workflow_path: `/repo/${over.workflow_id ?? "wf"}/workflow.yaml`,
      plan_id: over.plan_id === undefined ? `plan-${runId}` : over.plan_id,
      trigger: "manual",
      group_name: over.group_name ?? null,
      owner: "123@host",
      ...(over.started_at ? { started_at: over.started_at } : {}),
    },
    STEPS,
  );
}

describe.each(IMPLS)("RunStore contract: $name", (impl) => {
  const it = impl.name === "postgres" ? test.runIf(pgAvailable()) : test;

  it(
    "startRun: the run row and one pending row per step, in insertion order, with run.started in the same transaction",
    withStore(impl, (s) => {
      const runs = runsOf(s);
      const before = s.lastEventId();
      const row = newRun(runs, "r1", { group_name: "g1" });
      expect(runs.getRun("r1")).toEqual(row);
      expect(row).toEqual({
        run_id: "r1",
        workflow_id: "wf",
        workflow_path: "/repo/wf/workflow.yaml",
        plan_id: "plan-r1",
        trigger: "manual",
        group_name: "g1",
        status: "running",
        owner: "123@host",
        started_at: "2026-12-01T10:00:01.000Z",
        finished_at: null,
        error: null,
      });
      const steps = runs.stepRuns("r1");
      expect(steps.map((x) => x.step_id)).toEqual(["zeta", "alpha", "Mid"]);
      expect(steps[0]).toEqual({
        run_id: "r1",
        step_id: "zeta",
        ledger_step_id: "P-A",
        mode: "learn_code",
        fast_path: 0,
        outcome: null,
        exit_code: null,
        duration_ms: null,
        tokens: 0,
        error: null,
        started_at: null,
        finished_at: null,
      });
      const ev = s.listEvents({ since: before });
      expect(ev.map((e) => [e.entity_kind, e.entity_id, e.plan_id, e.type])).toEqual([
        ["run", "r1", "plan-r1", "run.started"],
      ]);
      expect(JSON.parse(ev[0]?.payload ?? "{}")).toEqual({
        workflow_id: "wf",
        trigger: "manual",
        group_name: "g1",
        owner: "123@host",
        steps: ["zeta", "alpha", "Mid"],
      });
      // A duplicate run id is refused and writes nothing (no second row, no event).
      expect(() => newRun(runs, "r1")).toThrow();
      expect(runs.stepRuns("r1")).toHaveLength(3);
      expect(s.lastEventId()).toBe(ev[0]?.id);
      // A throw in the caller's transaction rolls the run back with it.
      expect(() =>
        s.tx(() => {
          newRun(runs, "r2");
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(runs.getRun("r2")).toBeUndefined();
      expect(runs.stepRuns("r2")).toEqual([]);
      expect(s.lastEventId()).toBe(ev[0]?.id);
    }),
  );

  it(
    "startStep / finishStep / finishRun: columns, rounding, events; an unknown run is refused and writes nothing",
    withStore(impl, (s) => {
      const runs = runsOf(s);
      newRun(runs, "r1");
      runs.startStep("r1", "zeta", { fast_path: true });
      runs.finishStep("r1", "zeta", {
        outcome: "passed",
        fast_path: true,
        exit_code: 0,
        duration_ms: 12.6,
        tokens: 0,
        error: null,
      });
      runs.startStep("r1", "alpha", { mode: "code_exec" });
      runs.finishStep("r1", "alpha", {
        outcome: "script_failed",
        fast_path: false,
        exit_code: 3,
        duration_ms: null,
        tokens: 40,
        error: "exit 3",
      });
      // finishStep of a step that never started stamps started_at too.
      runs.finishStep("r1", "Mid", {
        outcome: "skipped",
        fast_path: false,
        exit_code: null,
        duration_ms: null,
        error: "dep",
      });
      runs.finishRun("r1", "failed", "step alpha failed");
      const [z, a, m] = runs.stepRuns("r1");
      expect(z).toMatchObject({ outcome: "passed", fast_path: 1, exit_code: 0, duration_ms: 13, tokens: 0 });
      expect(z?.started_at).not.toBeNull();
      expect(a).toMatchObject({
        mode: "code_exec",
        outcome: "script_failed",
        fast_path: 0,
        exit_code: 3,
        tokens: 40,
        error: "exit 3",
      });
      expect(m?.started_at).toBe(m?.finished_at);
      expect(runs.getRun("r1")).toMatchObject({ status: "failed", error: "step alpha failed" });
      expect(runs.getRun("r1")?.finished_at).not.toBeNull();
      const types = s.listEvents({ entityKind: "run", entityId: "r1" }).map((e) => e.type);
      expect(types).toEqual([
        "run.started",
        "run.step_finished",
        "run.step_finished",
        "run.step_finished",
        "run.finished",
      ]);
      const last = s.lastEventId();
      expect(() =>
        runs.finishStep("nope", "zeta", {
          outcome: "passed",
          fast_path: true,
          exit_code: 0,
          duration_ms: 1,
          error: null,
        }),
      ).toThrow(/run nope is not recorded/);
      expect(() => runs.finishRun("nope", "passed", null)).toThrow(/run nope is not recorded/);
      expect(() => runs.requireRun("nope")).toThrow(/run nope is not recorded/);
      expect(runs.getRun("nope")).toBeUndefined();
      expect(s.lastEventId()).toBe(last);
      // finishRun's other statuses and their event types.
      newRun(runs, "r2");
      runs.finishRun("r2", "interrupted", "SIGTERM");
      newRun(runs, "r3");
      runs.finishRun("r3", "cancelled", "by cli");
      expect(s.listEvents({ entityId: "r2" }).at(-1)?.type).toBe("run.interrupted");
      expect(s.listEvents({ entityId: "r3" }).at(-1)?.type).toBe("run.cancelled");
    }),
  );

  it(
    "markInterrupted / markCancelled: started steps interrupted, unstarted skipped, once only",
    withStore(impl, (s) => {
      const runs = runsOf(s);
      newRun(runs, "r1");
      runs.startStep("r1", "zeta");
      runs.finishStep("r1", "zeta", {
        outcome: "passed",
        fast_path: true,
        exit_code: 0,
        duration_ms: 5,
        error: null,
      });
      runs.startStep("r1", "alpha");
      expect(runs.markInterrupted("r1", "owner 123@host is gone")).toEqual(["alpha"]);
      expect(runs.stepRuns("r1").map((x) => [x.step_id, x.outcome, x.error])).toEqual([
        ["zeta", "passed", null],
        ["alpha", "interrupted", "owner 123@host is gone"],
        ["Mid", "skipped", "not started: owner 123@host is gone"],
      ]);
      expect(runs.getRun("r1")).toMatchObject({
        status: RunStatus.Interrupted,
        error: "owner 123@host is gone",
      });
      // A second marker (another process finding the same dead run) changes nothing and adds no event.
      const last = s.lastEventId();
      expect(runs.markInterrupted("r1", "again")).toEqual([]);
      expect(runs.markCancelled("r1", "again")).toEqual([]);
      expect(s.lastEventId()).toBe(last);
      expect(runs.getRun("r1")?.error).toBe("owner 123@host is gone");
      const ev = s.listEvents({ entityId: "r1" }).at(-1);
      expect(ev?.type).toBe("run.interrupted");
      expect(JSON.parse(ev?.payload ?? "{}")).toEqual({
        reason: "owner 123@host is gone",
        running_steps: ["alpha"],
      });
      newRun(runs, "r2");
      expect(runs.markCancelled("r2", "cancelled; owner gone")).toEqual([]);
      expect(runs.getRun("r2")?.status).toBe("cancelled");
      expect(runs.stepRuns("r2").every((x) => x.outcome === "skipped")).toBe(true);
      expect(s.listEvents({ entityId: "r2" }).at(-1)?.type).toBe("run.cancelled");
    }),
  );

  it(
    "requestCancel / cancelRequested: only a running run, with or without a plan, never another run's request",
    withStore(impl, (s) => {
      const runs = runsOf(s);
      const a = newRun(runs, "ra");
      const b = newRun(runs, "rb", { plan_id: null });
      const c = newRun(runs, "rc", { plan_id: "plan-ra" }); // shares ra's plan
      expect(runs.cancelRequested(a)).toBe(false);
      expect(runs.requestCancel("ra", "cli")).toBe(true);
      expect(runs.cancelRequested(a)).toBe(true);
      expect(runs.cancelRequested(c)).toBe(false);
      expect(runs.cancelRequested(b)).toBe(false);
      expect(runs.requestCancel("rb", "api")).toBe(true);
      expect(runs.cancelRequested(b)).toBe(true);
      runs.finishRun("rc", "passed", null);
      expect(runs.requestCancel("rc", "cli")).toBe(false);
      expect(() => runs.requestCancel("nope", "cli")).toThrow(/not recorded/);
    }),
  );

  it(
    "listRuns: newest first, filters, limit, keyset paging with ties; lastPassed, evidence, workflows, workflowPath",
    withStore(impl, (s) => {
      const runs = runsOf(s);
      const tie = "2026-12-01T09:00:00.000Z";
      for (const id of ["r-b", "R_a", "r-a"]) newRun(runs, id, { started_at: tie });
      newRun(runs, "r-new", { workflow_id: "other", group_name: "g2" });
      runs.finishRun("r-b", "passed", null);
      expect(runs.listRuns().map((r) => r.run_id)).toEqual(["r-new", "r-b", "r-a", "R_a"]);
      expect(runs.listRuns({ workflowId: "wf" }).map((r) => r.run_id)).toEqual(["r-b", "r-a", "R_a"]);
      expect(runs.listRuns({ status: "passed" }).map((r) => r.run_id)).toEqual(["r-b"]);
      expect(runs.listRuns({ limit: 2 }).map((r) => r.run_id)).toEqual(["r-new", "r-b"]);
      expect(runs.listRuns({ before: { started_at: tie, run_id: "r-b" } }).map((r) => r.run_id)).toEqual([
        "r-a",
        "R_a",
      ]);
      // Evidence: skipped/interrupted excluded, groups of successes, last run.
      runs.finishStep("r-a", "zeta", {
        outcome: "passed",
        fast_path: true,
        exit_code: 0,
        duration_ms: 1,
        error: null,
      });
      runs.finishStep("r-b", "zeta", {
        outcome: "validation_failed",
        fast_path: true,
        exit_code: 0,
        duration_ms: 1,
        error: "x",
      });
      runs.finishStep("R_a", "zeta", {
        outcome: "skipped",
        fast_path: false,
        exit_code: null,
        duration_ms: null,
        error: null,
      });
      runs.finishStep("r-new", "zeta", {
        outcome: "passed",
        fast_path: true,
        exit_code: 0,
        duration_ms: 1,
        error: null,
      });
      expect(runs.lastPassed("wf", "zeta")).toEqual({ run_id: "r-a" });
      expect(runs.lastPassed("wf", "alpha")).toBeUndefined();
      const ev = runs.evidence("wf", "zeta");
      expect(ev).toMatchObject({ runs: 2, successes: 1, failures: 1, groups_covered: ["(none)"] });
      expect(ev.by_outcome).toEqual({ passed: 1, validation_failed: 1, skipped: 1 });
      expect(ev.last_run).toMatchObject({ run_id: "r-b", outcome: "validation_failed" });
      expect(runs.evidence("other", "zeta").groups_covered).toEqual(["g2"]);
      expect(runs.workflows(10)).toEqual([
        {
          workflow_id: "other",
          workflow_path: "/repo/other/workflow.yaml",
          last_run_at: runs.getRun("r-new")?.started_at,
        },
        { workflow_id: "wf", workflow_path: "/repo/wf/workflow.yaml", last_run_at: tie },
      ]);
      expect(runs.workflows(1)).toHaveLength(1);
      expect(runs.workflowPath("wf")).toBe("/repo/wf/workflow.yaml");
      expect(runs.workflowPath("nope")).toBeUndefined();
    }),
  );
});

describe.each(IMPLS)("SqlPort contract: $name", (impl) => {
  function probe(): Store {
    const s = impl.open();
    const blob = s.sql.dialect === "postgres" ? "BYTEA" : "BLOB";
    const id =
      s.sql.dialect === "postgres"
        ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        : "INTEGER PRIMARY KEY";
    s.sql.run("DROP TABLE IF EXISTS port_probe");
    s.sql.run(`CREATE TABLE port_probe (id ${id}, name TEXT NOT NULL, n INTEGER, data ${blob})`);
    return s;
  }

  test("positional and named parameters, RETURNING ids, changes, literals left alone", () => {
    const s = probe();
    try {
      const a = s.tx(() =>
        s.sql.get<{ id: number }>("INSERT INTO port_probe (name, n) VALUES (?, ?) RETURNING id", ["a", 1]),
      );
      const b = s.tx(() =>
        s.sql.get<{ id: number }>("INSERT INTO port_probe (name, n) VALUES (@name, @n) RETURNING id", {
          name: "b",
          n: 2,
        }),
      );
      expect(a?.id).toBe(1);
      expect(b?.id).toBe(2);
      // `?` and `@x` inside a literal are text, and a name used twice binds once.
      const r = s.sql.get<{ q: string; c: number }>(
        "SELECT 'what? @who' AS q, COUNT(*) AS c FROM port_probe WHERE n >= @n AND n <= @n + 1",
        { n: 1 },
      );
      expect(r).toEqual({ q: "what? @who", c: 2 });
      const changed = s.tx(() => s.sql.run("UPDATE port_probe SET n = n + 10 WHERE n > ?", [0]));
      expect(changed.changes).toBe(2);
      expect(
        s.sql.all<{ name: string }>("SELECT name FROM port_probe ORDER BY id").map((x) => x.name),
      ).toEqual(["a", "b"]);
      expect(s.sql.get("SELECT * FROM port_probe WHERE name = ?", ["none"])).toBeUndefined();
    } finally {
      s.close();
    }
  });

  test("booleans are 1/0, undefined is NULL, bytes come back as a Buffer", () => {
    const s = probe();
    try {
      const bytes = Buffer.from([0, 1, 2, 255, 0]);
      s.tx(() => s.sql.run("INSERT INTO port_probe (name, n, data) VALUES (?, ?, ?)", ["x", true, bytes]));
      s.tx(() =>
        s.sql.run("INSERT INTO port_probe (name, n, data) VALUES (@name, @n, @data)", {
          name: "y",
          n: undefined,
          data: null,
        }),
      );
      const rows = s.sql.all<{ name: string; n: number | null; data: Buffer | null }>(
        "SELECT name, n, data FROM port_probe ORDER BY id",
      );
      expect(rows[0]?.n).toBe(1);
      expect(Buffer.isBuffer(rows[0]?.data)).toBe(true);
      expect(rows[0]?.data?.equals(bytes)).toBe(true);
      expect(rows[1]).toEqual({ name: "y", n: null, data: null });
    } finally {
      s.close();
    }
  });

  test("runs inside store.tx: inTransaction, rollback on throw", () => {
    const s = probe();
    try {
      expect(s.sql.inTransaction).toBe(false);
      expect(() =>
        s.tx(() => {
          expect(s.sql.inTransaction).toBe(true);
          s.sql.run("INSERT INTO port_probe (name) VALUES (?)", ["gone"]);
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(s.sql.get<{ c: number }>("SELECT COUNT(*) AS c FROM port_probe")?.c).toBe(0);
      expect(() => s.sql.get("SELECT * FROM port_probe WHERE name = @missing", {})).toThrow();
    } finally {
      s.close();
    }
  });
});

describe.each(IMPLS)("Blobs contract: $name", (impl) => {
  test("put is content-addressed and idempotent; bytes and text read back; bad and unknown hashes refused", () => {
    const s = impl.open();
    const dir = mkdtempSync(join(tmpdir(), "ratchet-blobs-"));
    dirs.push(dir);
    try {
      const blobs = blobsOf({ blobsDir: join(dir, "blobs") }, s);
      const bytes = Buffer.from([0, 159, 146, 150, 10]);
      const h = blobs.put(bytes);
      expect(h).toMatch(/^[0-9a-f]{64}$/);
      expect(blobs.put(bytes)).toBe(h);
      expect(blobs.has(h)).toBe(true);
      expect(blobs.getBytes(h).equals(bytes)).toBe(true);
      const t = blobs.put("héllo\n");
      expect(blobs.getText(t)).toBe("héllo\n");
      const missing = "0".repeat(64);
      expect(blobs.has(missing)).toBe(false);
      expect(() => blobs.getText(missing)).toThrow(/not found/);
      for (const bad of ["../etc/passwd", "ABC", `${h}' OR '1'='1`]) {
        expect(() => blobs.has(bad)).toThrow(/not a blob hash/);
        expect(() => blobs.getBytes(bad)).toThrow(/not a blob hash/);
      }
      // A blob put inside a transaction that rolls back is gone with it on the database store.
      const rolled = "rolled back with its row";
      expect(() =>
        s.tx(() => {
          blobs.put(rolled);
          throw new Error("abort");
        }),
      ).toThrow("abort");
      if (s.sql.dialect === "postgres")
        expect(blobs.has(createHash("sha256").update(rolled).digest("hex"))).toBe(false);
    } finally {
      s.close();
    }
  });
});

describe.runIf(pgAvailable())("PgStore only", () => {
  test("migrations are recorded once; reopening applies nothing; integrityCheck names a missing table", () => {
    const url = cluster?.createDatabase() as string;
    const a = PgStore.open(url);
    const b = PgStore.open(url);
    try {
      // Every migration once, in order, whichever areas have landed (the first three are pinned).
      const ran = a.pg.query<{ id: number; name: string }>(
        "SELECT id, name FROM schema_migrations ORDER BY id",
      ).rows;
      expect(ran).toEqual(
        [...PG_MIGRATIONS].sort((x, y) => x.id - y.id).map((m) => ({ id: m.id, name: m.name })),
      );
      expect(ran.slice(0, 3)).toEqual([
        { id: 1, name: "ledger" },
        { id: 2, name: "workflow_runs" },
        { id: 3, name: "blobs" },
      ]);
      expect(b.integrityCheck()).toBe("ok");
      a.pg.exec("DROP TABLE skills");
      expect(b.integrityCheck()).toBe("table skills is missing");
    } finally {
      a.close();
      b.close();
    }
  });

  test("a writer that hangs inside its transaction holding the lock is ended by the server; the next writer then goes on and the half-written change is gone", () => {
    const url = cluster?.createDatabase() as string;
    const hung = PgStore.open(url, { idleInTxTimeoutMs: 500 });
    const next = PgStore.open(url);
    try {
      hung.pg.exec(`BEGIN; SELECT pg_advisory_xact_lock(${WORKSPACE_WRITE_LOCK})`);
      hung.pg.query("INSERT INTO projects (name, repo_path, created_at) VALUES ('half', NULL, $1)", [T0]);
      // This blocks on the lock until the server ends the idle session (500 ms), then commits.
      next.tx(() => next.addProject({ name: "next", repo_path: null, created_at: T0 }));
      expect(next.listProjects().map((p) => p.name)).toEqual(["next"]);
      expect(() => hung.pg.query("SELECT 1")).toThrow();
    } finally {
      hung.close();
      next.close();
    }
  });

  test("a transaction function that returns a promise is refused and rolled back", () => {
    const s = PgStore.open(cluster?.createDatabase() as string);
    try {
      expect(() =>
        s.tx(() => {
          s.insertPlan(plan("p"));
          return Promise.resolve(1);
        }),
      ).toThrow(/must not return a promise/);
      expect(s.getPlan("p")).toBeUndefined();
    } finally {
      s.close();
    }
  });
});
