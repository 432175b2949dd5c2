// reason-fill's refusals, each tried the way a determined caller would: the documented status, a
// message naming the field or id, and nothing written (row counts before = after).
import { afterEach, describe, expect, it } from "vitest";
import { applyOp, Batch } from "../../ledger/index.js";
import { FISCAL_WEEK, LOAD_ORDERS, PLAN, type ShopFixture, shopFixture } from "./test-kit.js";

let fx: ShopFixture;
afterEach(() => fx?.dispose());

const base = { plan_id: PLAN, project: "shop", run_id: 7 };

async function refused(raw: Record<string, unknown>, status: number, message: RegExp) {
  const before = fx.counts();
  const o = await applyOp(fx.ledger, "reason-fill", raw);
  expect(o.ok, JSON.stringify(o.result)).toBe(false);
  expect(o.exitStatus).toBe(status);
  expect(o.error?.message).toMatch(message);
  expect(fx.counts()).toEqual(before);
  return o;
}

describe("reason-fill refusals write nothing", () => {
  it("refuses the old `text` shape anywhere, message first", async () => {
    fx = shopFixture();
    const starts = /^"text" is not accepted/;
    await refused({ ...base, reasons: [{ node_key: LOAD_ORDERS, text: "fiscal weeks" }] }, 2, starts);
    await refused({ ...base, text: "x", reasons: [{ node_key: LOAD_ORDERS, unstated: true }] }, 2, starts);
    await refused(
      { ...base, reasons: [{ node_key: LOAD_ORDERS, interpretation: "ok", text: "also" }] },
      2,
      /^"text" is not accepted \(field `reasons\[0\]\.text`\)/,
    );
    await refused(
      {
        ...base,
        reasons: [
          { node_key: LOAD_ORDERS, unstated: true },
          { node_key: FISCAL_WEEK, text: "" },
        ],
      },
      2,
      starts,
    );
  });

  it("refuses a tier from the caller (the tier follows from the shape)", async () => {
    fx = shopFixture();
    await refused(
      { ...base, reasons: [{ node_key: LOAD_ORDERS, interpretation: "x", tier: "stated" }] },
      2,
      /"tier" is not accepted/,
    );
    await refused(
      { ...base, tier: "derived", reasons: [{ node_key: LOAD_ORDERS, unstated: true }] },
      2,
      /"tier" is not accepted/,
    );
  });

  it("refuses zero or several shapes, no node_key, bad spans, empty interpretations, empty lists", async () => {
    fx = shopFixture();
    const cases: [unknown, RegExp][] = [
      [[{ node_key: LOAD_ORDERS }], /no answer shape/],
      [[{ node_key: LOAD_ORDERS, interpretation: "x", unstated: true }], /more than one answer shape/],
      [[{ node_key: LOAD_ORDERS, utterance_id: 42, span: [0, 5], interpretation: "x" }], /more than one/],
      [[{ utterance_id: 42, span: [0, 5] }], /reasons\[0\]\.node_key/],
      [[{ node_key: LOAD_ORDERS, utterance_id: 42, span: [0, 5, 9] }], /span.*two integers/],
      [[{ node_key: LOAD_ORDERS, utterance_id: 42, span: [0, 5.5] }], /span\[1\]/],
      [[{ node_key: LOAD_ORDERS, utterance_id: 42, span: ["a", 5] }], /span\[0\]/],
      [[{ node_key: LOAD_ORDERS, utterance_id: 42, span: "0,5" }], /span/],
      [[{ node_key: LOAD_ORDERS, span: [0, 5] }], /utterance_id.*required/],
      [[{ node_key: LOAD_ORDERS, interpretation: "   " }], /interpretation.*non-empty/],
      [[{ node_key: LOAD_ORDERS, unstated: false }], /unstated.*must be true/],
      [[{ node_key: LOAD_ORDERS, unstated: true, kind: "personal" }], /kind/],
      [[{ node_key: LOAD_ORDERS, unstated: true, weight: 1 }], /reasons\[0\]\.weight.*unknown field/],
      [[], /reasons.*non-empty/],
      ["all", /reasons.*non-empty/],
    ];
    for (const [reasons, msg] of cases) await refused({ ...base, reasons }, 2, msg);
    await refused({ plan_id: PLAN }, 2, /reasons/);
    await refused({ ...base, reasons: [{ node_key: LOAD_ORDERS, unstated: true }], extra: 1 }, 2, /`extra`/);
  });

  it("refuses node keys outside the plan's changed set with 10 and names them (valid answers too)", async () => {
    fx = shopFixture();
    const o = await refused(
      {
        ...base,
        reasons: [
          { node_key: LOAD_ORDERS, unstated: true },
          { node_key: "nk_000000000000", unstated: true },
          { node_key: "shop.pipeline.load_orders", unstated: true },
        ],
      },
      10,
      /nk_000000000000, shop\.pipeline\.load_orders are not among the nodes the plan changed/,
    );
    expect(o.error?.code).toBe("unknown_node_key");
    expect(o.marker).toMatchObject({
      ok: false,
      unknown_keys: ["nk_000000000000", "shop.pipeline.load_orders"],
    });
  });

  it("refuses the columns only the system sets (state, recorded_by, rule_id, superseded_by, offsets)", async () => {
    fx = shopFixture();
    for (const extra of [
      { state: "active" },
      { recorded_by: "human" },
      { rule_id: "R0" },
      { superseded_by: 1 },
      { verbatim_start: 0 },
      { role: "constraint" },
    ])
      await refused(
        { ...base, reasons: [{ node_key: LOAD_ORDERS, interpretation: "x", ...extra }] },
        2,
        new RegExp(`reasons\\[0\\]\\.${Object.keys(extra)[0]}.*unknown field`),
      );
  });

  it("a dataflow-only change is not a slot: answering it is an unknown key (10)", async () => {
    fx = shopFixture();
    fx.store.tx(() =>
      fx.db
        .prepare(
          "INSERT INTO prov_node_events (run_id, seq, event_type, node_key, payload) VALUES (7, 3, 'node_changed', 'nk_flow', '{\"changed\":[\"dataflow_sig\"]}')",
        )
        .run(),
    );
    const slots = await applyOp(fx.ledger, "reason-slots", { plan_id: PLAN });
    expect((slots.result as { slots: { node_key: string }[] }).slots.map((x) => x.node_key)).toEqual([
      LOAD_ORDERS,
      FISCAL_WEEK,
    ]);
    await refused({ ...base, reasons: [{ node_key: "nk_flow", unstated: true }] }, 10, /nk_flow/);
  });

  it("a plan without a project has no state graph (10)", async () => {
    fx = shopFixture();
    const p = fx.publish("no project", ["THINKING"]);
    await refused(
      { plan_id: p.plan_id, reasons: [{ node_key: LOAD_ORDERS, unstated: true }] },
      10,
      /no state graph/,
    );
  });

  it("refuses unknown utterance, reference and because ids, naming them", async () => {
    fx = shopFixture();
    await refused(
      { ...base, reasons: [{ node_key: LOAD_ORDERS, utterance_id: 999, span: [0, 3] }] },
      2,
      /utterance 999/,
    );
    await refused(
      { ...base, reasons: [{ node_key: FISCAL_WEEK, interpretation: "x", refs: [9, 77] }] },
      2,
      /reference 77 is not recorded/,
    );
    await refused(
      { ...base, reasons: [{ node_key: LOAD_ORDERS, unstated: true, because: [4040] }] },
      2,
      /reason 4040/,
    );
    // all or nothing: a valid first answer is not written either
    await refused(
      {
        ...base,
        reasons: [
          { node_key: LOAD_ORDERS, utterance_id: 42, span: [0, 33] },
          { node_key: FISCAL_WEEK, interpretation: "x", because: [118, 5000] },
        ],
      },
      2,
      /reason 5000/,
    );
  });

  it("checks spans in characters (code points): an emoji or a CJK character outside the BMP is one", async () => {
    fx = shopFixture();
    const text = "😀 keep load_orders 𠮷"; // 20 code points, 22 UTF-16 units
    const id = fx.utterance({ text });
    expect(Array.from(text).length).toBe(20);
    for (const span of [
      [0, 21],
      [0, 22],
      [5, 5],
      [6, 2],
    ])
      await refused(
        { ...base, reasons: [{ node_key: LOAD_ORDERS, utterance_id: id, span }] },
        2,
        /outside utterance .* ≤ 20, in characters/,
      );
    const ok = await applyOp(fx.ledger, "reason-fill", {
      ...base,
      reasons: [{ node_key: LOAD_ORDERS, utterance_id: id, span: [0, 20] }],
    });
    expect(ok.result).toMatchObject({ stated: 1 });
  });

  it("refuses an unknown plan (3), a project that is not the plan's (2)", async () => {
    fx = shopFixture();
    await refused(
      { ...base, plan_id: "ghost-1", reasons: [{ node_key: LOAD_ORDERS, unstated: true }] },
      3,
      /ghost-1/,
    );
    await refused(
      { ...base, project: "other", reasons: [{ node_key: LOAD_ORDERS, unstated: true }] },
      2,
      /project/,
    );
  });
});

describe("reason-fill accepts", () => {
  it("annotation keys, id strings from references, source system (by agent), unknown source → agent", async () => {
    fx = shopFixture();
    const o = await applyOp(fx.ledger, "reason-fill", {
      _comment: "from the review",
      plan_id: PLAN,
      source: "system",
      reasons: [
        { _why: "x", node_key: LOAD_ORDERS, utterance_id: "42", span: ["0", "33"], because: [118, 118] },
      ],
    });
    expect(o.result).toMatchObject({ stated: 1, adopted: 1 });
    expect(
      fx.db.prepare("SELECT recorded_by, run_id FROM prov_change_reasons WHERE plan_id = ?").get(PLAN),
    ).toEqual({
      recorded_by: "system",
      run_id: 7,
    });
    expect(fx.db.prepare("SELECT by FROM prov_influence").all()).toEqual([{ by: "agent" }]);
    const u = await applyOp(fx.ledger, "reason-fill", {
      plan_id: PLAN,
      source: "robot",
      reasons: [{ node_key: FISCAL_WEEK, unstated: true }],
    });
    expect(u.result).toMatchObject({ filled: 0, unstated: 1 });
    expect(
      fx.db.prepare("SELECT recorded_by, tier FROM prov_change_reasons WHERE node_key = ?").get(FISCAL_WEEK),
    ).toEqual({ recorded_by: "agent", tier: "unstated" });
  });

  it("step apply: reason-slots then reason-fill through {{label.path}} references", async () => {
    fx = shopFixture();
    const batch = new Batch(fx.ledger);
    const a = await batch.apply(1, { op: "reason-slots", as: "s", plan_id: PLAN, draft: true });
    expect(a.marker).toMatchObject({ ok: true, op: "reason-slots", plan_id: PLAN });
    const b = await batch.apply(2, {
      op: "reason-fill",
      plan_id: "{{s.plan_id}}",
      reasons: [
        {
          node_key: "{{s.draft.0.node_key}}",
          utterance_id: "{{s.draft.0.candidates.0.utterance_id}}",
          span: ["{{s.draft.0.candidates.0.span.0}}", "{{s.draft.0.candidates.0.span.1}}"],
        },
        { node_key: "{{s.slots.1.node_key}}", unstated: true },
      ],
    });
    expect(b.status).toBe(0);
    expect(b.marker).toMatchObject({ ok: true, op: "reason-fill", plan_id: PLAN });
    expect(
      fx.db
        .prepare(
          "SELECT node_key, tier, verbatim_start, verbatim_end FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
        )
        .all(PLAN),
    ).toEqual([
      { node_key: LOAD_ORDERS, tier: "stated", verbatim_start: 0, verbatim_end: 33 },
      { node_key: FISCAL_WEEK, tier: "unstated", verbatim_start: null, verbatim_end: null },
    ]);
  });
});
