// The close writes: rules R0–R6 over real rows, close_mode loading, and the guarantee that nothing
// here stops the close or leaves half-written provenance.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyOp } from "../../ledger/index.js";
import { nodeSourceFor as analyserSource } from "../nodes/index.js";
import { insertRow } from "../rows.js";
import type { NodeSource } from "../types.js";
import { loadCloseMode } from "./close-mode.js";
import { useNodeSource } from "./node-source.js";
import { FISCAL_WEEK, LOAD_ORDERS, PLAN, REVIEW1, type ShopFixture, shopFixture } from "./test-kit.js";

let fx: ShopFixture;
let savedEnv: string | undefined;
beforeEach(() => {
  savedEnv = process.env.PROVLEDGER_EXTENSIONS;
  delete process.env.PROVLEDGER_EXTENSIONS;
});
afterEach(() => {
  fx?.dispose();
  if (savedEnv !== undefined) process.env.PROVLEDGER_EXTENSIONS = savedEnv;
});

const reasonsOf = (planId = PLAN) =>
  fx.db
    .prepare(
      "SELECT node_key, role, tier, state, rule_id, interpretation FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
    )
    .all(planId) as Record<string, unknown>[];
const reviewLogs = () =>
  fx.store
    .logsOfPlan(PLAN)
    .filter((l) => l.step_id === `${PLAN}-REVIEW`)
    .map((l) => l.text);

/** Adds a touched node to run 7 (an event of the plan's run). */
function touch(seq: number, key: string, qn: string, event: string, payload: unknown = {}) {
  fx.store.tx(() => {
    insertRow(fx.db, "prov_node_snapshots", {
      run_id: 7,
      node_key: key,
      node_type: "function",
      qualified_name: qn,
      file_path: "shop/other.py",
      line_start: 1,
      line_end: 2,
      struct_sig: "x",
      dataflow_sig: "trivial",
    });
    insertRow(fx.db, "prov_node_events", {
      run_id: 7,
      seq,
      event_type: event,
      node_key: key,
      payload: JSON.stringify(payload),
    });
  });
}

describe("close-time rules", () => {
  it("R0: a sentence naming more than 3 touched nodes is generic → ambiguous, no reason", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    touch(3, "nk_00000000000b", "shop.other.build_weeks", "node_changed", { changed: ["struct_sig"] });
    touch(4, "nk_00000000000c", "shop.other.merge_weeks", "node_changed", { changed: ["struct_sig"] });
    touch(5, "nk_00000000000d", "shop.other.emit_weeks", "node_changed", { changed: ["struct_sig"] });
    fx.utterance({ text: "Rework load_orders, build_weeks, merge_weeks and emit_weeks." });
    fx.closeReview();
    expect(reasonsOf().every((r) => r.tier === "unstated")).toBe(true);
    const verdicts = fx.db.prepare("SELECT node_key, verdict FROM prov_trigger_log ORDER BY id").all();
    expect(verdicts).toContainEqual({ node_key: LOAD_ORDERS, verdict: "ambiguous" });
    expect(verdicts).toContainEqual({ node_key: LOAD_ORDERS, verdict: "ask" });
  });

  it("a node only matched (no other event) is not touched: no rule writes for it", () => {
    fx = shopFixture({ constraintOn: "nk_0000000000ee" });
    touch(3, "nk_0000000000ee", "shop.other.weekly_total", "node_matched", { via: "name" });
    fx.utterance({ text: "Leave weekly_total alone." });
    fx.closeReview();
    expect(reasonsOf().some((r) => r.node_key === "nk_0000000000ee")).toBe(false);
  });

  it("R1: a run failed then passed and the passing log names the node", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    const a = `${PLAN}-A`;
    const add = (text: string) =>
      fx.store.tx(() =>
        fx.store.insertLog({
          step_id: a,
          plan_id: PLAN,
          at: fx.ledger.now(),
          kind: "run",
          text,
          bytes: 1,
          truncated: 0,
          blob: null,
        }),
      );
    add("FAILED test_weeks: load_orders returned calendar weeks\n--- exit_code=1, runtime=1s ---");
    add("test_fiscal_week passed in load_orders\n--- exit_code=0, runtime=1s ---");
    fx.closeReview();
    const r = reasonsOf();
    expect(r[0]).toMatchObject({ node_key: LOAD_ORDERS, tier: "derived", rule_id: "R1" });
    expect(String(r[0]?.interpretation)).toMatch(/failed .*exit 1.* then passed/);
    expect(r[1]).toMatchObject({ node_key: FISCAL_WEEK, tier: "unstated" });
  });

  it("R4: renamed/moved with struct_sig unchanged is a pure refactor (not a slot)", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    touch(3, "nk_0000000000ae", "shop.other.weeks_of", "node_renamed", {
      from: "shop.other.week_of",
      to: "shop.other.weeks_of",
    });
    fx.closeReview();
    expect(reasonsOf()).toContainEqual(
      expect.objectContaining({
        node_key: "nk_0000000000ae",
        tier: "derived",
        rule_id: "R4",
        role: "reason",
      }),
    );
  });

  it("R6: a failed step and a deviation become rejected paths, once per (plan, text), anchored by local name", async () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    // Deviate under REVIEW.1 with a retry that mentions load_orders, then close.
    const d = fx.ledger.deviate({
      parent_step_id: REVIEW1,
      justification: "calendar weeks in load_orders broke the finance rollup; keep fiscal weeks",
      sub_steps: [{ title: "retry", type: "CODE" }],
    });
    const child = d.sub_step_ids[0] as string;
    fx.ledger.start({ step_id: child });
    fx.ledger.complete({ step_id: child, summary: "done" });
    fx.closeReview();
    const paths = reasonsOf().filter((r) => r.role === "rejected_path");
    expect(paths).toEqual([
      expect.objectContaining({ node_key: LOAD_ORDERS, tier: "derived", rule_id: "R6" }),
    ]);
    expect(String(paths[0]?.interpretation)).toContain("calendar weeks in load_orders");
  });

  it("R2: the previous reviewed plan of the project logged a failed gate naming the node", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    // A previous plan of shop, reviewed and completed, with a failed gate in its review log.
    fx.store.tx(() => {
      fx.db
        .prepare(
          "INSERT INTO plans (plan_id, goal, kind, project, status, revision_count, max_revisions, created_at, updated_at, finished_at, review_state) VALUES ('prev-1', 'g', 'plan', 'shop', 'COMPLETED', 1, 5, '2026-11-01', '2026-11-01', '2026-11-01', 'reviewed')",
        )
        .run();
      fx.db
        .prepare(
          "INSERT INTO steps (step_id, plan_id, seq, role, depth, title, type, status, tokens, created_at, updated_at) VALUES ('prev-1-REVIEW', 'prev-1', 1, 'review', 0, 'review', 'THINKING', 'COMPLETED', 0, '2026-11-01', '2026-11-01')",
        )
        .run();
      fx.store.insertLog({
        step_id: "prev-1-REVIEW",
        plan_id: "prev-1",
        at: "2026-11-01",
        kind: "review",
        text: "[AGENT-REVIEW FAIL] gate: load_orders drops the fiscal week column",
        bytes: 1,
        truncated: 0,
        blob: null,
      });
    });
    fx.closeReview();
    expect(reasonsOf()[0]).toMatchObject({ node_key: LOAD_ORDERS, tier: "derived", rule_id: "R2" });
  });

  it("rules skip a node the agent already answered; the backstop skips it too", async () => {
    fx = shopFixture();
    await applyOp(fx.ledger, "reason-fill", {
      plan_id: PLAN,
      reasons: [{ node_key: LOAD_ORDERS, interpretation: "finance wants fiscal weeks" }],
    });
    fx.closeReview();
    expect(reasonsOf().map((r) => [r.node_key, r.tier, r.rule_id])).toEqual([
      [LOAD_ORDERS, "asserted", null],
      [FISCAL_WEEK, "unstated", null],
    ]);
  });
});

describe("the close never stops, never half-writes", () => {
  it("a failure after some rows were written: the savepoint rolls them back, the plan closes, the log says why", () => {
    fx = shopFixture();
    // A source whose last changed node has no key: R0 writes load_orders' row, then the backstop's
    // insert for the keyless node fails its CHECK — after a write, inside the close.
    const restore = useNodeSource((store) => {
      const real = analyserSource(store);
      const ghost = {
        node_key: null as unknown as string,
        qualified_name: "ghost",
        node_type: "function",
        event_types: ["node_added"],
        run_id: 7,
      };
      const broken: NodeSource = {
        hasGraph: (p) => real.hasGraph(p),
        refresh: (p, o) => real.refresh(p, o),
        changedNodes: (id) => [...real.changedNodes(id), ghost],
        touchedNodes: (id) => real.touchedNodes(id),
        history: (k) => real.history(k),
        resolve: (p, t) => real.resolve(p, t),
        callees: (p, k) => real.callees(p, k),
        callers: (p, k) => real.callers(p, k),
      };
      return broken;
    });
    try {
      const before = fx.counts();
      expect(fx.closeReview()).toMatchObject({ plan_status: "COMPLETED" });
      const after = fx.counts();
      expect(after.prov_change_reasons).toBe(before.prov_change_reasons);
      expect(after.prov_trigger_log).toBe(before.prov_trigger_log);
      expect(reviewLogs()).toContainEqual(expect.stringContaining("rolled back"));
      expect(fx.store.getPlan(PLAN)).toMatchObject({ status: "COMPLETED", review_state: "reviewed" });
    } finally {
      restore();
    }
  });

  it("a node source that throws at once: the close proceeds with a [REASONS] line", () => {
    fx = shopFixture();
    const restore = useNodeSource(() => {
      throw new Error("graph file vanished");
    });
    try {
      expect(fx.closeReview()).toMatchObject({ plan_status: "COMPLETED" });
      expect(
        reviewLogs().some((t) => t.startsWith("[REASONS] state graph unavailable") && t.includes("vanished")),
      ).toBe(true);
    } finally {
      restore();
    }
  });

  it("a bad close_mode is a load error: the close uses ask and logs it", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    fx.extensions({ version: 1, reasons: { close_mode: "later" } });
    fx.closeReview();
    expect(reasonsOf().map((r) => r.state)).toEqual(["active", "active"]);
    expect(reviewLogs().some((t) => t.startsWith("[REASONS] close_mode: ") && t.includes('"later"'))).toBe(
      true,
    );
  });

  it("review-close pass also runs the close writes; fail does not", () => {
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    const r = fx.ledger.reviewClose({ plan_id: PLAN, outcome: "pass", summary: "ok" });
    expect(r).toMatchObject({ status: "COMPLETED" });
    expect(reasonsOf().map((x) => x.tier)).toEqual(["unstated", "unstated"]);
    fx.dispose();
    fx = shopFixture({ words: false, constraintOn: "nk_elsewhere" });
    fx.ledger.reviewClose({ plan_id: PLAN, outcome: "fail", summary: "no" });
    expect(reasonsOf()).toEqual([]);
  });

  it("failing REVIEW.1 closes the plan FAILED without close writes", () => {
    fx = shopFixture();
    fx.ledger.fail({ step_id: REVIEW1, reason: "graph broken" });
    expect(fx.store.getPlan(PLAN)?.status).toBe("FAILED");
    expect(reasonsOf()).toEqual([]);
  });
});

describe("loadCloseMode", () => {
  it("takes the first existing file, never merged; config.json provenance.close_mode as a fallback", () => {
    fx = shopFixture({ graph: false });
    const home = join(fx.dir, "home");
    mkdirSync(join(home, "skill-workspace"), { recursive: true });
    const ws = join(fx.dir, "ws");
    mkdirSync(ws);
    const l = { repo: fx.repo, workspaceDir: ws, env: {}, home };
    expect(loadCloseMode(l)).toEqual({ mode: "ask" });
    writeFileSync(join(ws, "config.json"), JSON.stringify({ provenance: { close_mode: "pending" } }));
    expect(loadCloseMode(l)).toMatchObject({ mode: "pending", source: join(ws, "config.json") });
    const homeFile = join(home, "skill-workspace", "provledger-extensions.json");
    writeFileSync(homeFile, JSON.stringify({ version: 1, reasons: {} }));
    expect(loadCloseMode(l)).toEqual({ mode: "ask", source: homeFile });
    const envFile = join(fx.dir, "env.json");
    writeFileSync(envFile, JSON.stringify({ version: 1, reasons: { close_mode: "pending" } }));
    expect(loadCloseMode({ ...l, env: { PROVLEDGER_EXTENSIONS: envFile } })).toMatchObject({
      mode: "pending",
    });
    fx.extensions({ version: 1, reasons: { close_mode: "ask" } });
    expect(loadCloseMode({ ...l, env: { PROVLEDGER_EXTENSIONS: envFile } })).toMatchObject({ mode: "ask" });
    writeFileSync(join(fx.repo, "provledger-extensions.json"), "{not json");
    expect(loadCloseMode(l)).toMatchObject({ mode: "ask", error: expect.stringContaining("cannot be read") });
    fx.extensions({ version: 2, reasons: { close_mode: "pending" } });
    expect(loadCloseMode(l)).toMatchObject({ mode: "ask", error: expect.stringContaining("version") });
  });
});
