/**
 * Provenance on both stores: one scenario — node analysis at publish and at the review start, the
 * prompt hook, `note`, a reference and its check, reason-slots / reason-fill, the close's rules, a
 * headline refused as blocking (exit 4) then answered, `why` as text and JSON — run on a SQLite
 * file and on a real PostgreSQL server (test/harness/pg.ts) with the same clock. Each store's
 * results are checked on their own, then the two are compared: the same rows (ids, hashes and the
 * chain included) and the same outputs.
 */
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PgCluster, startPgCluster } from "../../test/harness/pg.js";
import { iso, ManualClock } from "../core/index.js";
import { applyOp, Ledger } from "../ledger/index.js";
import { BlobStore, DbBlobStore, PgStore, SqliteStore, type Store } from "../store/index.js";
import { reviewedPlan } from "../testing/prov-repo.js";
import { chainHash } from "./chain.js";
import { useNodeSource } from "./node-source.js";
import { nodeSourceFor } from "./nodes/index.js";
import { why } from "./reasons/why.js";
import { renderWhy } from "./reasons/why-format.js";
import { SqlWhyStore } from "./reasons/why-store.js";
import { CHAINED_TABLES } from "./rows.js";
import type { NodeSource } from "./types.js";
import { type HookStore, recordPrompt, sqliteHookStore } from "./words/hook.js";
import { pgHookStore } from "./words/hook-pg.js";

let cluster: PgCluster;
const closers: (() => void)[] = [];

beforeAll(async () => {
  cluster = await startPgCluster();
}, 120_000);
afterAll(() => {
  for (const c of closers.splice(0).reverse()) c();
  cluster?.stop();
});

const PROV_TABLES = [
  "prov_analysis_runs",
  "prov_node_snapshots",
  "prov_node_events",
  "prov_utterances",
  "prov_references",
  "prov_reference_links",
  "prov_reference_checks",
  "prov_change_reasons",
  "prov_trigger_log",
  "prov_read_hits",
  "prov_influence",
  "prov_headlines",
  "prov_headline_responses",
];
const ORDER: Record<string, string> = {
  prov_node_snapshots: "run_id, node_key",
  prov_node_events: "run_id, seq",
};

const FILES = {
  "shop/pipeline.py":
    "def helper(x):\n    return x + 1\n\n\ndef load_orders(path):\n    return helper(len(open(path).read().splitlines()))\n",
};
const EDITS = {
  "shop/pipeline.py": `${FILES["shop/pipeline.py"]}\n\ndef fiscal_week(day):\n    return day.isocalendar()[1]\n`,
};
const PROMPT = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";

interface Side {
  kind: "sqlite" | "postgres";
  store: Store;
  ledger: Ledger;
  clock: ManualClock;
  repo: string;
  dir: string;
  hook: () => HookStore;
}

async function side(kind: Side["kind"]): Promise<Side> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `ratchet-prov-${kind}-`)));
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 10, 15, 0));
  const now = () => iso(clock.now());
  let store: Store;
  let hook: () => HookStore;
  if (kind === "sqlite") {
    const path = join(dir, "ratchet.db");
    store = new SqliteStore(SqliteStore.open(path, { create: true }).db, now);
    hook = () => sqliteHookStore(new Database(path, { fileMustExist: true, timeout: 2000 }), now);
  } else {
    const url = await cluster.createDatabase();
    store = new PgStore(PgStore.open(url).pg, now);
    hook = () => pgHookStore(url, now);
  }
  closers.push(() => store.close());
  const blobs = kind === "sqlite" ? new BlobStore(join(dir, "blobs")) : new DbBlobStore(store, now);
  const ledger = new Ledger({ store, blobs, clock, holder: "test@host" });
  return { kind, store, ledger, clock, repo: join(dir, "shop"), dir, hook };
}

/** Every provenance row, in key order, with what differs by machine (wall-clock run times, commit shas) masked. */
function rows(s: Side): Record<string, Record<string, unknown>[]> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const t of PROV_TABLES)
    out[t] = s.store.sql.all(`SELECT * FROM ${t} ORDER BY ${ORDER[t] ?? "id"}`).map((r) => {
      const o: Record<string, unknown> = { ...r };
      if (t === "prov_analysis_runs") {
        o.created_at = "<t>";
        o.commit_sha = o.commit_sha === null ? null : "<sha>";
      }
      return o;
    });
  return out;
}

/**
 * The chain of every chained table holds: each row's prev_hash is the previous row's hash; for
 * utterances (every column given at insert) the hash recomputes from the stored row.
 */
function chainHolds(s: Side): void {
  for (const t of CHAINED_TABLES) {
    let prev = "";
    for (const r of s.store.sql.all<Record<string, unknown>>(`SELECT * FROM ${t} ORDER BY id`)) {
      const { hash, prev_hash, id: _id, ...content } = r;
      expect(prev_hash, `${s.kind} ${t} #${r.id}`).toBe(prev);
      if (t === "prov_utterances") expect(hash, `${s.kind} ${t} #${r.id}`).toBe(chainHash(content, prev));
      expect(hash, `${s.kind} ${t} #${r.id}`).toMatch(/^[0-9a-f]{64}$/);
      prev = hash as string;
    }
  }
}

const mask = (v: unknown) =>
  JSON.parse(
    JSON.stringify(v)
      .replace(/"duration_ms":\d+/g, '"duration_ms":0')
      .replace(/\b[0-9a-f]{40}\b/g, "<sha>"),
  );

/** The scenario; returns what each step answered. */
async function scenario(s: Side) {
  const out: Record<string, unknown> = {};
  const p = await reviewedPlan(s.ledger, { project: "shop", repo: s.repo, files: FILES, edits: EDITS });
  const load = p.key("shop.pipeline.load_orders");
  const fiscal = p.key("shop.pipeline.fiscal_week");
  out.runs = s.store.sql
    .all("SELECT id, plan_id, step_id, trigger FROM prov_analysis_runs ORDER BY id")
    .map((r) => ({ ...r }));
  out.nodes = nodeSourceFor(s.store)
    .nodes("shop")
    .nodes.map((n) => [n.node_key, n.qualified_name, n.line_start, n.line_end]);
  s.clock.advance(1000);
  const hooked = recordPrompt({
    payload: { prompt: PROMPT, cwd: s.repo, session_id: "sess-1", hook_event_name: "UserPromptSubmit" },
    env: {},
    open: s.hook,
    now: () => new Date(s.clock.now()),
  });
  out.hook = hooked;
  s.clock.advance(1000);
  const note = await applyOp(s.ledger, "note", {
    text: "the weekly grain is what finance signs off",
    at: "2026-12-01T09:00:00Z",
    project: "shop",
    plan_id: p.planId,
    node: "shop.pipeline.load_orders",
  });
  out.note = [note.ok, note.error?.message, note.result];
  const ref = await applyOp(s.ledger, "reference-add", {
    kind: "ticket",
    label: "FIN-12 weekly reconciliation",
    uri: "https://tickets.example/FIN-12",
    occurred_at: "2026-11-30T12:00:00Z",
    utterance: 1,
  });
  out.ref = [ref.ok, ref.error?.message, ref.result];
  const mark = await applyOp(s.ledger, "reference-mark", { reference_id: 1, ok: true });
  out.mark = [mark.ok, mark.error?.message, mark.result];
  const slots = await applyOp(s.ledger, "reason-slots", { plan_id: p.planId, draft: true });
  out.slots = [slots.ok, slots.error?.message, slots.result];
  const bad = await applyOp(s.ledger, "reason-fill", {
    plan_id: p.planId,
    reasons: [{ node_key: fiscal, text: "because" }],
  });
  out.badFill = [bad.ok, bad.exitStatus, bad.error?.code];
  const fill = await applyOp(s.ledger, "reason-fill", {
    plan_id: p.planId,
    reasons: [{ node_key: fiscal, interpretation: "the rollup groups orders by fiscal week", refs: [1] }],
  });
  out.fill = [fill.ok, fill.error?.message, fill.result];
  s.clock.advance(1000);
  out.close = s.ledger.complete({ step_id: p.reviewStepId });
  out.reviewLog = s.store
    .logsOfPlan(p.planId)
    .filter((l) => l.text.startsWith("[REASONS]"))
    .map((l) => l.text);
  // A blocking constraint from the extensions file refuses the next publish (exit 4, nothing written).
  writeFileSync(
    join(s.repo, "provledger-extensions.json"),
    JSON.stringify({
      version: 1,
      constraints: [{ node: "shop.pipeline.load_orders", statement: "weekly grain stays", block: true }],
    }),
  );
  s.clock.advance(1000);
  const before = s.store.sql.get<{ n: number }>("SELECT count(*) AS n FROM prov_change_reasons")?.n;
  const refused = await applyOp(s.ledger, "publish-plan", {
    goal: "orders by calendar week",
    steps: [{ title: "a", type: "THINKING" }],
    project: "shop",
    declared_targets: ["shop.pipeline.load_orders"],
  });
  out.refused = [refused.ok, refused.exitStatus, refused.error?.code, refused.error?.message];
  out.refusedWroteNothing =
    s.store.sql.get<{ n: number }>("SELECT count(*) AS n FROM prov_change_reasons")?.n === before;
  const findingId = /active_constraint:[\w:]+/.exec(refused.error?.message ?? "")?.[0];
  const answered = await applyOp(s.ledger, "publish-plan", {
    goal: "orders by calendar week",
    steps: [{ title: "a", type: "THINKING" }],
    project: "shop",
    declared_targets: ["shop.pipeline.load_orders"],
    headline_notes: [{ answer: findingId, action: "proceed", rationale: "kept weekly", by: "human" }],
  });
  out.answered = [answered.ok, answered.error?.message, answered.result?.headline];
  const ws = new SqlWhyStore(s.store.sql);
  const nodes = nodeSourceFor(s.store);
  const at = iso(s.clock.now());
  const target = s.store.tx(() =>
    why(ws, nodes, { project: "shop", target: "shop.pipeline.load_orders" }, at),
  );
  out.whyJson = target;
  out.whyText = renderWhy(target);
  out.search = renderWhy(s.store.tx(() => why(ws, nodes, { project: "shop", search: "FISCAL Week" }, at)));
  out.pending = renderWhy(s.store.tx(() => why(ws, nodes, { project: "shop", pending: true }, at)));
  return { out: mask(out), load, fiscal, planId: p.planId };
}

describe("provenance on SQLite and PostgreSQL", () => {
  it("gives the same rows, chain and outputs for the same scenario", async () => {
    const lite = await side("sqlite");
    const pg = await side("postgres");
    const a = await scenario(lite);
    const b = await scenario(pg);
    for (const [s, r] of [
      [lite, a],
      [pg, b],
    ] as const) {
      const o = r.out as Record<string, unknown[] | unknown>;
      // Node analysis: the publish baseline and the REVIEW.1 refresh, attributed to the plan.
      expect(o.runs, s.kind).toEqual([
        { id: 1, plan_id: r.planId, step_id: null, trigger: "publish" },
        { id: 2, plan_id: r.planId, step_id: `${r.planId}-REVIEW.1`, trigger: "review" },
      ]);
      expect(o.hook, s.kind).toMatchObject({
        status: "recorded",
        utteranceId: 1,
        project: "shop",
        planId: r.planId,
      });
      expect((o.note as unknown[])[0], JSON.stringify(o.note)).toBe(true);
      expect((o.ref as unknown[])[0], JSON.stringify(o.ref)).toBe(true);
      expect((o.mark as unknown[])[0], JSON.stringify(o.mark)).toBe(true);
      expect((o.slots as unknown[])[0], JSON.stringify(o.slots)).toBe(true);
      expect(o.badFill, s.kind).toEqual([false, 2, "schema_violation"]);
      expect((o.fill as unknown[])[0], JSON.stringify(o.fill)).toBe(true);
      expect(JSON.stringify(o.reviewLog), s.kind).toMatch(/\[REASONS\] close \(close_mode ask\)/);
      expect(o.refused, s.kind).toEqual([
        false,
        4,
        "headline_blocked",
        expect.stringContaining("active_constraint"),
      ]);
      expect(o.refusedWroteNothing, s.kind).toBe(true);
      expect((o.answered as unknown[])[0], JSON.stringify(o.answered)).toBe(true);
      expect(o.whyText as string, s.kind).toContain("shop.pipeline.load_orders");
      expect(o.search as string, s.kind).toMatch(/search \(LIKE, no full-text index\) "FISCAL Week" · [1-9]/);
      chainHolds(s);
      const reasons = s.store.sql.all<{ tier: string; node_key: string; rule_id: string | null }>(
        "SELECT tier, node_key, rule_id FROM prov_change_reasons WHERE role = 'reason' ORDER BY id",
      );
      expect(
        reasons.map((x) => x.tier),
        s.kind,
      ).toEqual(expect.arrayContaining(["stated", "asserted"]));
    }
    expect(b.out).toEqual(a.out);
    expect(rows(pg)).toEqual(rows(lite));
    // The append-only rule holds on the rows the flows wrote.
    for (const s of [lite, pg]) {
      expect(() => s.store.tx(() => s.store.sql.run("DELETE FROM prov_change_reasons"))).toThrow(
        /append-only/,
      );
      expect(() =>
        s.store.tx(() => s.store.sql.run("UPDATE prov_utterances SET text = 'forged' WHERE id = 1")),
      ).toThrow(/append-only/);
      expect(() =>
        s.store.tx(() =>
          s.store.sql.run("UPDATE prov_change_reasons SET superseded_by = 1, tier = 'stated'"),
        ),
      ).toThrow(/append-only/);
    }
  }, 240_000);
});

describe("the close on both stores never half-writes", () => {
  it("a failure after some rows were written rolls back the savepoint only: the plan closes, the log says why", async () => {
    for (const [kind, withGhost] of [
      ["sqlite", false],
      ["sqlite", true],
      ["postgres", false],
      ["postgres", true],
    ] as const) {
      const s = await side(kind);
      const p = await reviewedPlan(s.ledger, { project: "shop", repo: s.repo, files: FILES, edits: EDITS });
      // Words R0 quotes (fiscal_week by name), so the close writes a stated row for it first; then the
      // keyless ghost node's insert fails its CHECK — after a write, inside the close.
      const note = await applyOp(s.ledger, "note", {
        text: "Add fiscal_week to the pipeline for the finance rollup",
        at: "2026-12-01T09:00:00Z",
        project: "shop",
        plan_id: p.planId,
      });
      expect(note.ok, note.error?.message).toBe(true);
      const restore = useNodeSource((store) => {
        const real = nodeSourceFor(store);
        if (!withGhost) return real;
        const ghost = {
          node_key: null as unknown as string,
          qualified_name: "ghost",
          node_type: "function",
          event_types: ["node_added"],
          run_id: 2,
        };
        const broken: NodeSource = {
          hasGraph: (x) => real.hasGraph(x),
          refresh: (x, o) => real.refresh(x, o),
          changedNodes: (id) => [...real.changedNodes(id), ghost],
          touchedNodes: (id) => real.touchedNodes(id),
          history: (k) => real.history(k),
          resolve: (x, t) => real.resolve(x, t),
          callees: (x, k) => real.callees(x, k),
          callers: (x, k) => real.callers(x, k),
        };
        return broken;
      });
      try {
        const count = (t: string) => s.store.sql.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`)?.n;
        const before = [count("prov_change_reasons"), count("prov_trigger_log")];
        expect(s.ledger.complete({ step_id: p.reviewStepId }), kind).toMatchObject({
          plan_status: "COMPLETED",
        });
        if (!withGhost) {
          // The control: without the ghost the same close writes the R0 row the ghost's failure undoes.
          expect(
            s.store.sql.get<{ n: number }>(
              "SELECT count(*) AS n FROM prov_change_reasons WHERE rule_id = 'R0'",
            )?.n,
            kind,
          ).toBe(1);
          continue;
        }
        expect([count("prov_change_reasons"), count("prov_trigger_log")], kind).toEqual(before);
        expect(s.store.getPlan(p.planId), kind).toMatchObject({
          status: "COMPLETED",
          review_state: "reviewed",
        });
        const logs = s.store.logsOfPlan(p.planId).map((l) => l.text);
        expect(logs, kind).toContainEqual(expect.stringContaining("rolled back"));
        // The transaction went on after the rollback: the close's own event is there.
        expect(
          s.store.listEvents({ planId: p.planId, limit: 1000 }).map((e) => e.type),
          kind,
        ).toContain("plan.completed");
      } finally {
        restore();
      }
    }
  }, 240_000);
});
