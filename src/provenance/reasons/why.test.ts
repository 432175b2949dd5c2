import { afterEach, describe, expect, it } from "vitest";
import { nodeSourceFor as analyserSource } from "../nodes/index.js";
import { boundedRead, evidenceLevel, markSpan, trimToBudget } from "./read.js";
import { why } from "./why.js";
import { type Fixture, fixture, NODES } from "./why-fixture.js";
import { renderWhy } from "./why-format.js";
import { SqlWhyStore } from "./why-store.js";

const fixtures: Fixture[] = [];
afterEach(() => {
  for (const f of fixtures.splice(0)) f.store.close();
});
const LOAD = NODES[0] as (typeof NODES)[number];

function setup() {
  const f = fixture();
  fixtures.push(f);
  return { f, store: new SqlWhyStore(f.store.sql), nodes: analyserSource(f.store) };
}

const ask = (s: ReturnType<typeof setup>, q: Parameters<typeof why>[2]) =>
  s.f.store.tx(() => why(s.store, s.nodes, q, "2026-12-01T10:00:00.000Z"));

describe("why", () => {
  it("shows constraints, rejected paths and reasons with tier, evidence level, quoted span and sources", () => {
    const s = setup();
    const u = s.f.utterance(
      "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.",
    );
    const stated = s.f.reason({
      tier: "stated",
      verbatim_utterance_id: u,
      verbatim_start: 0,
      verbatim_end: 33,
    });
    const c = s.f.reason({
      role: "constraint",
      statement: "weekly grain stays; finance reconciles by fiscal week",
      recorded_by: "human",
    });
    const ref = s.f.reference({
      kind: "email",
      label: "finance thread 2026-11",
      uri: "https://mail.example/t/1",
    });
    s.f.link(c, ref);
    s.f.reason({
      role: "rejected_path",
      tier: "derived",
      rule_id: "R6",
      interpretation: "calendar weeks failed the reconcile step",
    });
    s.f.reason({ tier: "unstated", state: "unknown" });
    const r = ask(s, { project: "shop", target: LOAD.qualified_name });
    expect(r.mode).toBe("target");
    if (r.mode !== "target") return;
    expect(r.summary).toMatchObject({
      constraints: 1,
      active_constraints: 1,
      rejected: 1,
      reasons: 1,
      pending: 1,
      history: 1,
    });
    const text = renderWhy(r);
    const lines = text.split("\n");
    expect(lines[0]).toBe(
      `${LOAD.qualified_name} · downstream 0 · history 1 · constraints 1 (1 active) · rejected 1 · pending 1`,
    );
    expect(text).toContain("── constraints · 1");
    expect(text).toMatch(new RegExp(`#${c} · asserted · linked · 2026-11-20 09:12 · shown 0`));
    expect(text).toContain("source #1 · email · finance thread 2026-11 · linked https://mail.example/t/1");
    expect(text).toContain("── rejected · 1");
    expect(text).toMatch(/· derived · task context · .* · rule R6/);
    expect(text).toContain(`#${stated} · stated · verbal`);
    expect(text).toContain("«Keep fiscal weeks in load_orders.» Finance reconciles weekly");
    expect(text).toContain("── prior claims · 0");
    // Every record printed writes read_hit(moment=why); the unstated row is not printed.
    expect(s.f.count("prov_read_hits", "moment = 'why'")).toBe(3);
    const again = ask(s, { project: "shop", target: LOAD.node_key });
    expect(renderWhy(again)).toMatch(
      new RegExp(`#${c} · asserted · linked · 2026-11-20 09:12 · shown why 1`),
    );
    expect(s.f.count("prov_read_hits", "moment = 'why'")).toBe(6);
  });

  it("resolves file:line to the innermost node on that line", () => {
    const s = setup();
    const r = ask(s, { project: "shop", target: "shop/pipeline.py:40" });
    expect(r.resolved?.node_key).toBe("nk_a72a091c8cc2");
    const none = ask(s, { project: "shop", target: "shop/pipeline.py:999" });
    expect(renderWhy(none)).toBe("nothing on record for shop/pipeline.py:999 in project shop");
  });

  it("an unknown node is one line; no target and no mode is a usage error", () => {
    const s = setup();
    expect(renderWhy(ask(s, { project: "shop", target: "shop.nope" }))).toBe(
      "nothing on record for shop.nope in project shop",
    );
    expect(() => ask(s, { project: "shop" })).toThrow(/give a target/);
  });

  it("shows a supersede chain as its newest row, adopted plans, and shown per moment", () => {
    const s = setup();
    const old = s.f.reason({ interpretation: "old reading" });
    const fresh = s.f.reason({ interpretation: "corrected reading" });
    s.f.store.db.prepare("UPDATE prov_change_reasons SET superseded_by = ? WHERE id = ?").run(fresh, old);
    s.f.store.db
      .prepare(
        "INSERT INTO prov_influence (reason_id, project, plan_id, via, by, at) VALUES (?, 'shop', 'p-20261201', 'reason_because', 'agent', 't')",
      )
      .run(fresh);
    s.f.store.db
      .prepare(
        "INSERT INTO prov_read_hits (reason_id, project, plan_id, moment, at) VALUES (?, 'shop', 'p', 'plan', 't')",
      )
      .run(fresh);
    const text = renderWhy(ask(s, { project: "shop", target: LOAD.qualified_name }));
    expect(text).not.toContain("old reading");
    expect(text).toMatch(
      new RegExp(
        `#${fresh} · asserted · task context · .* · shown plan 1 · adopted by p-20261201 · corrects #${old}`,
      ),
    );
  });

  it("caps records (last 3 reasons) and lifts the caps with --all; the budget cuts with a record pointer", () => {
    const s = setup();
    const ids = [1, 2, 3, 4, 5].map((i) =>
      s.f.reason({ interpretation: `reason number ${i} ${"x".repeat(200)}` }),
    );
    const capped = ask(s, { project: "shop", target: LOAD.qualified_name });
    if (capped.mode !== "target" || !capped.read) throw new Error("no read");
    expect(capped.read.reasons.records.map((r) => r.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(capped.read.reasons.omitted).toBe(2);
    expect(renderWhy(capped)).toContain("… 2 more not shown");
    const all = ask(s, { project: "shop", target: LOAD.qualified_name, all: true });
    if (all.mode !== "target" || !all.read) throw new Error("no read");
    expect(all.read.reasons.records).toHaveLength(5);
    // 100 tokens = 400 chars: one whole record (~216 chars), one cut, the rest left out with pointers.
    const tight = ask(s, { project: "shop", target: LOAD.qualified_name, all: true, budgetTokens: 100 });
    if (tight.mode !== "target" || !tight.read) throw new Error("no read");
    const recs = tight.read.reasons.records;
    expect(recs).toHaveLength(2);
    expect(recs[1]?.cut).toMatchObject({ pointer: `record #${ids[3]}` });
    expect(tight.read.reasons.pointers).toEqual([
      `record #${ids[2]}`,
      `record #${ids[1]}`,
      `record #${ids[0]}`,
    ]);
    expect(tight.read.budget.used).toBeLessThanOrEqual(400);
    const text = renderWhy(tight);
    expect(text).toMatch(new RegExp(`chars cut: record #${ids[3]}`));
    // Only records shown get read_hits (cut counts as shown; left-out does not).
    expect(s.f.count("prov_read_hits", `moment = 'why' AND reason_id = ${ids[0]}`)).toBe(1);
  });

  it("--pending lists unstated rows (with and without a target), writing no read_hit", () => {
    const s = setup();
    const a = s.f.reason({ tier: "unstated", state: "unknown", plan_id: "p1" });
    const b = s.f.reason({ tier: "unstated", state: "unknown", plan_id: "p1", node_key: "nk_a72a091c8cc2" });
    s.f.reason({ interpretation: "answered" });
    const all = ask(s, { project: "shop", pending: true });
    expect(all.records.map((r) => r.id)).toEqual([a, b]);
    const text = renderWhy(all);
    expect(text.split("\n")[0]).toBe("pending reasons (unstated) · 2");
    expect(text).toContain(` #${a} · ${LOAD.node_key} · p1 · 2026-11-20 09:12`);
    const one = ask(s, { project: "shop", target: "shop.pipeline.rollup", pending: true });
    expect(one.records.map((r) => r.id)).toEqual([b]);
    expect(s.f.count("prov_read_hits")).toBe(0);
  });

  it("--never-read lists active constraints never shown; --search matches words (LIKE, announced)", () => {
    const s = setup();
    const c = s.f.reason({ role: "constraint", statement: "fiscal weeks only" });
    const seen = s.f.reason({ role: "constraint", statement: "keep the cache", node_key: "nk_a72a091c8cc2" });
    s.f.store.db
      .prepare("INSERT INTO prov_read_hits (reason_id, project, moment, at) VALUES (?, 'shop', 'why', 't')")
      .run(seen);
    expect(ask(s, { project: "shop", neverRead: true }).records.map((r) => r.id)).toEqual([c]);
    const found = ask(s, { project: "shop", search: "fiscal only" });
    expect(found.records.map((r) => r.id)).toEqual([c]);
    expect(renderWhy(found).split("\n")[0]).toBe('search (LIKE, no full-text index) "fiscal only" · 1');
    expect(ask(s, { project: "shop", search: "100%" }).records).toEqual([]);
  });
});

describe("bounded read pieces", () => {
  it("evidence level: linked > verbal > task_context > unstated", () => {
    const base = { tier: "asserted", verbatim_utterance_id: null };
    expect(evidenceLevel(base, [{ verifiability: "linked" }, { verifiability: "verbal" }])).toBe("linked");
    expect(evidenceLevel(base, [{ verifiability: "verbal" }])).toBe("verbal");
    expect(
      evidenceLevel({ tier: "stated", verbatim_utterance_id: 3 }, [{ verifiability: "unreachable" }]),
    ).toBe("verbal");
    expect(evidenceLevel(base, [{ verifiability: "unreachable" }])).toBe("task_context");
    expect(evidenceLevel({ tier: "unstated", verbatim_utterance_id: null }, [])).toBe("unstated");
  });

  it("marks a span with context", () => {
    expect(markSpan("abc def ghi", 4, 7)).toBe("abc «def» ghi");
    expect(markSpan(`${"a".repeat(100)}X${"b".repeat(100)}`, 100, 101)).toMatch(/^…a{60}«X»b{60}…$/);
  });

  it("trimToBudget with no room leaves every record out and counts it", () => {
    const s = setup();
    s.f.reason({ interpretation: "y".repeat(50) });
    const node = s.nodes.resolve("shop", LOAD.qualified_name);
    if (!node) throw new Error("no node");
    const read = boundedRead(s.store, s.nodes, "shop", node, LOAD.qualified_name);
    const used = trimToBudget([read.reasons], 10);
    expect(used).toBe(0);
    expect(read.reasons.records).toEqual([]);
    expect(read.reasons.omitted).toBe(1);
  });
});
