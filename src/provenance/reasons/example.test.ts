// The spec's worked example (§8) with real rows: slots with drafts, the fill, the refused `text`
// shape, and the close in `ask` and `pending` mode.
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { applyOp } from "../../ledger/index.js";
import type { ReasonSlotsResult } from "./slots.js";
import { FISCAL_WEEK, LOAD_ORDERS, PLAN, REVIEW1, type ShopFixture, shopFixture } from "./test-kit.js";

let fx: ShopFixture;
afterEach(() => fx?.dispose());

function setup(opts: Parameters<typeof shopFixture>[0] = {}) {
  const saved = process.env.PROVLEDGER_EXTENSIONS;
  delete process.env.PROVLEDGER_EXTENSIONS;
  onTestFinished(() => {
    if (saved !== undefined) process.env.PROVLEDGER_EXTENSIONS = saved;
  });
  fx = shopFixture(opts);
  return fx;
}

const FILL = {
  plan_id: PLAN,
  project: "shop",
  run_id: 7,
  step_id: REVIEW1,
  reasons: [
    { node_key: LOAD_ORDERS, utterance_id: 42, span: [0, 33], because: [118] },
    { node_key: FISCAL_WEEK, interpretation: "the rollup groups by this column", refs: [9] },
  ],
};

describe("worked example (spec §8)", () => {
  it("reason-slots with draft proposes #42 [0,33] score 11 r0 and #42 [0,82] score 3 overlap", async () => {
    setup();
    const before = fx.counts();
    const o = await applyOp(fx.ledger, "reason-slots", { plan_id: PLAN, project: "shop", draft: true });
    expect(o.ok).toBe(true);
    expect(o.marker).toEqual({ ok: true, op: "reason-slots", plan_id: PLAN });
    const r = o.result as unknown as ReasonSlotsResult;
    expect(r.slots).toEqual([
      {
        node_key: LOAD_ORDERS,
        qualified_name: "shop.pipeline.load_orders",
        node_type: "function",
        event_types: ["node_changed"],
        run_id: 7,
      },
      {
        node_key: FISCAL_WEEK,
        qualified_name: "shop.pipeline.load_orders:df.fiscal_week",
        node_type: "column",
        event_types: ["node_added"],
        run_id: 7,
      },
    ]);
    expect(r.checklist).toContain("1. shop.pipeline.load_orders (function, node_changed) [nk_34676ea5f1d4]");
    expect(r.checklist).toContain(
      "2. shop.pipeline.load_orders:df.fiscal_week (column, node_added) [nk_a72a091c8cc2]",
    );
    expect(r.checklist).toContain("unstated");
    expect(r.auto_filled).toEqual([]);
    expect(r.draft?.[0]?.candidates).toEqual([
      expect.objectContaining({ utterance_id: 42, span: [0, 33], score: 11, kind: "r0" }),
    ]);
    expect(r.draft?.[1]?.candidates).toEqual([
      expect.objectContaining({ utterance_id: 42, span: [0, 82], score: 3, kind: "overlap" }),
    ]);
    expect(fx.counts()).toEqual(before);
  });

  it("reason-fill records one stated and one asserted reason, the influence and the reference link", async () => {
    setup();
    const o = await applyOp(fx.ledger, "reason-fill", FILL);
    expect(o.error?.message).toBeUndefined();
    expect(o.result).toMatchObject({
      filled: 2,
      stated: 1,
      asserted: 1,
      unstated: 0,
      adopted: 1,
      unknown_keys: [],
    });
    expect(o.marker).toEqual({ ok: true, op: "reason-fill", plan_id: PLAN });
    const rows = fx.db
      .prepare("SELECT * FROM prov_change_reasons WHERE plan_id = ? ORDER BY id")
      .all(PLAN) as Record<string, unknown>[];
    expect(rows).toEqual([
      expect.objectContaining({
        node_key: LOAD_ORDERS,
        tier: "stated",
        verbatim_utterance_id: 42,
        verbatim_start: 0,
        verbatim_end: 33,
        run_id: 7,
        step_id: REVIEW1,
        role: "reason",
        state: "active",
        recorded_by: "agent",
        kind: "technical",
      }),
      expect.objectContaining({
        node_key: FISCAL_WEEK,
        tier: "asserted",
        interpretation: "the rollup groups by this column",
        recorded_by: "agent",
      }),
    ]);
    expect(fx.db.prepare("SELECT reason_id, node_key, via, by, plan_id FROM prov_influence").all()).toEqual([
      { reason_id: 118, node_key: LOAD_ORDERS, via: "reason_because", by: "agent", plan_id: PLAN },
    ]);
    expect(
      fx.db.prepare("SELECT reason_id, reference_id, utterance_id, stance FROM prov_reference_links").all(),
    ).toEqual([{ reason_id: rows[1]?.id, reference_id: 9, utterance_id: null, stance: "supports" }]);
    // After the fill nothing is open; completing REVIEW.1 closes the plan with no unstated rows.
    const slots = await applyOp(fx.ledger, "reason-slots", { plan_id: PLAN });
    expect((slots.result as { slots: unknown[] }).slots).toEqual([]);
    expect(fx.closeReview()).toMatchObject({ plan_status: "COMPLETED" });
    expect(
      fx.db
        .prepare("SELECT count(*) AS n FROM prov_change_reasons WHERE plan_id = ? AND tier = 'unstated'")
        .get(PLAN),
    ).toEqual({ n: 0 });
    expect(fx.store.getPlan(PLAN)?.review_state).toBe("reviewed");
    const types = fx.events(PLAN).map((e) => e.type);
    expect(types).toContain("reasons.filled");
    // the close's event comes in the close's transaction, before the plan's own move
    expect(types.indexOf("reasons.closed")).toBeLessThan(types.indexOf("plan.completed"));
    expect(types.indexOf("reasons.closed")).toBeGreaterThan(types.indexOf("reasons.filled"));
  });

  it("the same call with {node_key, text} exits 2 and writes nothing", async () => {
    setup();
    const before = fx.counts();
    const o = await applyOp(fx.ledger, "reason-fill", {
      ...FILL,
      reasons: [{ node_key: LOAD_ORDERS, text: "fiscal weeks" }],
    });
    expect(o.exitStatus).toBe(2);
    expect(o.error?.message).toMatch(/^"text" is not accepted/);
    expect(fx.counts()).toEqual(before);
  });

  it("close in ask mode (no fill): R0 states load_orders from #42, the column gets an active unstated row", () => {
    setup();
    expect(fx.closeReview()).toMatchObject({ plan_status: "COMPLETED", review_status: "COMPLETED" });
    const rows = fx.db
      .prepare(
        "SELECT node_key, tier, state, rule_id, recorded_by, verbatim_utterance_id, verbatim_start, verbatim_end, step_id, run_id, kind FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
      )
      .all(PLAN);
    expect(rows).toEqual([
      {
        node_key: LOAD_ORDERS,
        tier: "stated",
        state: "active",
        rule_id: "R0",
        recorded_by: "system",
        verbatim_utterance_id: 42,
        verbatim_start: 0,
        verbatim_end: 33,
        step_id: REVIEW1,
        run_id: 7,
        kind: "technical",
      },
      {
        node_key: FISCAL_WEEK,
        tier: "unstated",
        state: "active",
        rule_id: null,
        recorded_by: "system",
        verbatim_utterance_id: null,
        verbatim_start: null,
        verbatim_end: null,
        step_id: REVIEW1,
        run_id: 7,
        kind: "technical",
      },
    ]);
    expect(
      fx.db.prepare("SELECT node_key, rule_id, verdict FROM prov_trigger_log ORDER BY id").all(),
    ).toEqual([
      { node_key: LOAD_ORDERS, rule_id: "R0", verdict: "auto" },
      { node_key: FISCAL_WEEK, rule_id: null, verdict: "ask" },
    ]);
    const logs = fx.store.logsOfPlan(PLAN).map((l) => l.text);
    expect(logs.some((t) => t.startsWith("[REASONS] close (close_mode ask)"))).toBe(true);
  });

  it("close in pending mode: both unanswered nodes get unstated/unknown rows; a later fill supersedes one", async () => {
    // No words for R0 to quote and the constraint elsewhere (R5): no rule recognises either node.
    setup({ words: false, constraintOn: "nk_elsewhere" });
    fx.extensions({ version: 1, reasons: { close_mode: "pending" } });
    fx.closeReview();
    const rows = fx.db
      .prepare(
        "SELECT id, node_key, tier, state, recorded_by FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
      )
      .all(PLAN) as { id: number; node_key: string }[];
    expect(rows).toEqual([
      {
        id: expect.any(Number),
        node_key: LOAD_ORDERS,
        tier: "unstated",
        state: "unknown",
        recorded_by: "system",
      },
      {
        id: expect.any(Number),
        node_key: FISCAL_WEEK,
        tier: "unstated",
        state: "unknown",
        recorded_by: "system",
      },
    ]);
    expect(fx.db.prepare("SELECT verdict FROM prov_trigger_log ORDER BY id").all()).toEqual([
      { verdict: "silent" },
      { verdict: "silent" },
    ]);
    // A later answer (the plan is closed) appends and supersedes the system row.
    const o = await applyOp(fx.ledger, "reason-fill", {
      plan_id: PLAN,
      source: "human",
      reasons: [{ node_key: FISCAL_WEEK, interpretation: "finance asked for fiscal weeks", because: [118] }],
    });
    expect(o.result).toMatchObject({ filled: 1, asserted: 1, adopted: 1 });
    const newId = (o.result as { reason_ids: number[] }).reason_ids[0];
    const after = fx.db
      .prepare(
        "SELECT id, superseded_by, recorded_by, tier FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
      )
      .all(PLAN);
    expect(after).toEqual([
      { id: rows[0]?.id, superseded_by: null, recorded_by: "system", tier: "unstated" },
      { id: rows[1]?.id, superseded_by: newId, recorded_by: "system", tier: "unstated" },
      { id: newId, superseded_by: null, recorded_by: "human", tier: "asserted" },
    ]);
    expect(fx.db.prepare("SELECT by FROM prov_influence").all()).toEqual([{ by: "human" }]);
  });

  it("close with no words but a constraint on load_orders: R5 derives its reason", () => {
    setup({ words: false });
    fx.closeReview();
    const rows = fx.db
      .prepare(
        "SELECT node_key, tier, rule_id, interpretation FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
      )
      .all(PLAN) as Record<string, unknown>[];
    expect(rows[0]).toMatchObject({ node_key: LOAD_ORDERS, tier: "derived", rule_id: "R5" });
    expect(String(rows[0]?.interpretation)).toContain("#118");
    expect(rows[1]).toMatchObject({ node_key: FISCAL_WEEK, tier: "unstated", rule_id: null });
  });

  it("without a state graph: reason-slots exits 10 `no state graph`, and the close proceeds with a [REASONS] line", async () => {
    setup({ graph: false });
    const o = await applyOp(fx.ledger, "reason-slots", { plan_id: PLAN, project: "shop" });
    expect(o.exitStatus).toBe(10);
    expect(o.error?.code).toBe("no_state_graph");
    expect(o.error?.message).toContain("no state graph");
    const f = await applyOp(fx.ledger, "reason-fill", { ...FILL, reasons: [{ node_key: "x", text: "t" }] });
    expect(f.exitStatus).toBe(10); // the graph check comes before the shape check
    expect(fx.closeReview()).toMatchObject({ plan_status: "COMPLETED" });
    const logs = fx.store.logsOfPlan(PLAN).map((l) => l.text);
    expect(logs.some((t) => t.startsWith("[REASONS] state graph unavailable"))).toBe(true);
    expect(
      fx.db.prepare("SELECT count(*) AS n FROM prov_change_reasons WHERE plan_id = ?").get(PLAN),
    ).toEqual({ n: 0 });
  });
});
