import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyOp } from "../../ledger/index.js";
import { nodeSourceFor as analyserSource } from "../nodes/index.js";
import { useNodeSource } from "./node-source.js";
import { type Fixture, fixture, NODES } from "./why-fixture.js";

const fixtures: Fixture[] = [];
afterEach(() => {
  for (const f of fixtures.splice(0)) f.store.close();
});

function setup() {
  const f = fixture();
  fixtures.push(f);
  return f;
}

const LOAD = NODES[0] as (typeof NODES)[number];

function publish(f: Fixture, extra: Record<string, unknown>) {
  return applyOp(
    f.ledger,
    "publish-plan",
    { goal: "orders fiscal", prefix: "orders", project: "shop", steps: ["a"], ...extra },
    { cwd: f.dir },
  );
}

function extensions(f: Fixture, constraints: unknown[]) {
  mkdirSync(f.repo, { recursive: true });
  writeFileSync(join(f.repo, "provledger-extensions.json"), JSON.stringify({ version: 1, constraints }));
}

/** Row counts of every table a publish or an answer writes. */
const written = (f: Fixture) =>
  [
    "plans",
    "prov_headlines",
    "prov_headline_responses",
    "prov_influence",
    "prov_read_hits",
    "prov_change_reasons",
  ].map((t) => f.count(t));

describe("headline at publish", () => {
  it("computes findings with stable ids, stores the headline and copies it to the plan", async () => {
    const f = setup();
    const c = f.reason({ role: "constraint", statement: "weekly grain stays", recorded_by: "human" });
    const r = f.reason({
      role: "rejected_path",
      interpretation: "calendar weeks broke the finance reconciliation",
      tier: "asserted",
    });
    const why = f.reason({ interpretation: "finance reconciles by fiscal week" });
    const out = await publish(f, {
      declared_targets: [LOAD.qualified_name, "shop.new_thing"],
      headline_notes: [{ text: "an earlier plan also moved to fiscal weeks", cites: [why] }],
    });
    expect(out.exitStatus).toBe(0);
    const doc = out.result?.headline as {
      findings: { id: string; kind: string; severity: string; evidence: unknown }[];
      summary: Record<string, number>;
      headline_id: number;
      hints: string[];
    };
    expect(doc.findings.map((x) => [x.id, x.kind, x.severity])).toEqual([
      ["active_constraint:nk_34676ea5f:1", "active_constraint", "blocking"],
      ["rejected_path:nk_34676ea5f:1", "rejected_path", "warning"],
      ["similar_intent:nk_34676ea5f:1", "similar_intent", "warning"],
    ]);
    expect(doc.findings[0]?.evidence).toEqual({ reason_id: c });
    expect(doc.findings[1]?.evidence).toEqual({ reason_id: r });
    expect(doc.summary).toMatchObject({
      targets: 2,
      layers: 2,
      findings: 3,
      blocking: 1,
      warning: 2,
      unanswered: 1,
      hard_unanswered: 0,
      shown: 3,
      adopted: 0,
    });
    expect(doc.hints.join("\n")).toMatch(/shop\.new_thing: not in the state graph/);
    expect(doc.hints.join("\n")).toMatch(/not available .*unverified_upstream/);
    const planId = String(out.result?.plan_id);
    const row = f.store.db.prepare("SELECT headline_json FROM plans WHERE plan_id = ?").get(planId) as {
      headline_json: string;
    };
    expect(JSON.parse(row.headline_json).headline_id).toBe(doc.headline_id);
    // read_hit(moment=plan) once per record shown; shown is not adopted.
    expect(f.count("prov_read_hits", `moment = 'plan' AND plan_id = '${planId}'`)).toBe(3);
    expect(f.count("prov_influence")).toBe(0);
  });

  it("dedupes read_hits: a record shown for two targets of one plan counts once", async () => {
    const f = setup();
    const c = f.reason({ role: "constraint", statement: "keep it", recorded_by: "human" });
    const out = await publish(f, {
      declared_targets: [LOAD.qualified_name, LOAD.node_key, "shop/pipeline.py:12"],
    });
    expect(out.exitStatus).toBe(0);
    expect(f.count("prov_read_hits", `reason_id = ${c}`)).toBe(1);
  });

  it("stores a headline every time, even with no findings; no project or no targets → no headline", async () => {
    const f = setup();
    const a = await publish(f, { declared_targets: ["shop.pipeline.rollup"] });
    expect((a.result!.headline as { findings: unknown[] }).findings).toEqual([]);
    const b = await publish(f, {});
    expect(b.result?.headline).toBeUndefined();
    const c = await applyOp(
      f.ledger,
      "publish-plan",
      { goal: "g", project: "none", steps: ["a"], declared_targets: ["x"] },
      { cwd: f.dir },
    );
    expect(c.result?.headline).toBeUndefined();
    expect(f.count("prov_headlines")).toBe(1);
  });

  it("refuses notes citing no existing reason (exit 2, nothing written)", async () => {
    const f = setup();
    const before = written(f);
    for (const notes of [
      ["watch the cache"],
      [{ text: "x", cites: [] }],
      [{ text: "x", cites: [999] }],
      [{ text: "", cites: [1] }],
      { text: "x" },
    ]) {
      const out = await publish(f, { declared_targets: [LOAD.qualified_name], headline_notes: notes });
      expect(out.exitStatus, JSON.stringify(notes)).toBe(2);
      expect(out.error?.details.field).toMatch(/^headline_notes/);
    }
    const bad = await publish(f, { declared_targets: [42] });
    expect(bad.exitStatus).toBe(2);
    expect(written(f)).toEqual(before);
  });

  it("block: true on a human constraint refuses publish (exit 4, nothing written) until answered in headline_notes", async () => {
    const f = setup();
    extensions(f, [
      {
        node: LOAD.qualified_name,
        statement: "weekly grain stays; finance reconciles by fiscal week",
        block: true,
      },
    ]);
    const before = written(f);
    const refused = await publish(f, { declared_targets: [LOAD.qualified_name] });
    expect(refused.exitStatus).toBe(4);
    expect(refused.error?.code).toBe("headline_blocked");
    expect(refused.error?.message).toContain("active_constraint:nk_34676ea5f:1");
    // Nothing written: not even the imported constraint row.
    expect(written(f)).toEqual(before);
    // Answering an unknown finding is bad input.
    const wrong = await publish(f, {
      declared_targets: [LOAD.qualified_name],
      headline_notes: [{ answer: "active_constraint:nk_34676ea5f:9", action: "proceed" }],
    });
    expect(wrong.exitStatus).toBe(2);
    expect(written(f)).toEqual(before);
    const ok = await publish(f, {
      declared_targets: [LOAD.qualified_name],
      headline_notes: [
        {
          answer: "active_constraint:nk_34676ea5f:1",
          action: "proceed",
          rationale: "kept weekly",
          by: "human",
        },
      ],
    });
    expect(ok.exitStatus).toBe(0);
    const doc = ok.result?.headline as {
      summary: Record<string, number>;
      findings: { hard: boolean; response: { by: string } | null }[];
    };
    expect(doc.findings[0]).toMatchObject({ hard: true, response: { by: "human", action: "proceed" } });
    expect(doc.summary).toMatchObject({ unanswered: 0, hard_unanswered: 0, adopted: 1 });
    // The constraint was imported once, as a human asserted constraint row.
    expect(
      f.count("prov_change_reasons", "role = 'constraint' AND recorded_by = 'human' AND tier = 'asserted'"),
    ).toBe(1);
    await publish(f, {
      declared_targets: [LOAD.qualified_name],
      headline_notes: [{ answer: "active_constraint:nk_34676ea5f:1", action: "revise" }],
    });
    expect(f.count("prov_change_reasons", "role = 'constraint'")).toBe(1);
  });

  it("a malformed extensions file never blocks publish: a hint says it was not used", async () => {
    const f = setup();
    mkdirSync(f.repo, { recursive: true });
    for (const body of [
      "{not json",
      JSON.stringify({ constraints: "x" }),
      JSON.stringify({ constraints: [{ node: "" }] }),
    ]) {
      writeFileSync(join(f.repo, "provledger-extensions.json"), body);
      const out = await publish(f, { declared_targets: [LOAD.qualified_name] });
      expect(out.exitStatus, body).toBe(0);
      expect((out.result!.headline as { hints: string[] }).hints.join("\n")).toMatch(
        /extensions file not used: .*provledger-extensions\.json/,
      );
    }
    expect(f.count("prov_change_reasons", "role = 'constraint'")).toBe(0);
  });

  it("a node source plugged in with useNodeSource is the one publish reads", async () => {
    const f = setup();
    const seen: string[] = [];
    const table = analyserSource(f.store);
    const restore = useNodeSource(() => ({
      hasGraph: (p: string) => table.hasGraph(p),
      refresh: (p, o) => table.refresh(p, o),
      changedNodes: (id: string) => table.changedNodes(id),
      touchedNodes: (id: string) => table.touchedNodes(id),
      history: (k: string) => table.history(k),
      callees: (p: string, k: string) => table.callees(p, k),
      callers: (p: string, k: string) => table.callers(p, k),
      resolve: (p: string, t: string) => {
        seen.push(t);
        return table.resolve(p, t);
      },
    }));
    try {
      const out = await publish(f, { declared_targets: ["shop.pipeline.rollup"] });
      expect(out.exitStatus).toBe(0);
      expect(seen).toEqual(["shop.pipeline.rollup"]);
    } finally {
      restore();
    }
  });

  it("block: false (or an agent constraint) never blocks", async () => {
    const f = setup();
    extensions(f, [{ node: LOAD.node_key, statement: "soft rule" }]);
    f.reason({ role: "constraint", statement: "agent's rule", recorded_by: "agent" });
    const out = await publish(f, { declared_targets: [LOAD.qualified_name] });
    expect(out.exitStatus).toBe(0);
    expect(
      (out.result!.headline as { summary: { blocking: number; hard_unanswered: number } }).summary,
    ).toMatchObject({ blocking: 2, hard_unanswered: 0 });
  });
});

describe("headline-respond", () => {
  async function published(f: Fixture) {
    const c = f.reason({ role: "constraint", statement: "weekly grain stays", recorded_by: "human" });
    const other = f.reason({ interpretation: "finance reconciles weekly" });
    f.reason({ role: "rejected_path", interpretation: "calendar weeks" });
    const out = await publish(f, { declared_targets: [LOAD.qualified_name] });
    return { planId: String(out.result?.plan_id), c, other };
  }

  it("answers a finding: one response, influence for evidence ∪ cites, summary recomputed", async () => {
    const f = setup();
    const { planId, c, other } = await published(f);
    const out = await applyOp(f.ledger, "headline-respond", {
      plan_id: planId,
      finding_id: "active_constraint:nk_34676ea5f:1",
      action: "proceed",
      rationale: "kept",
      cites: [other, c],
    });
    expect(out.exitStatus).toBe(0);
    expect(out.result).toMatchObject({
      plan_id: planId,
      finding_id: "active_constraint:nk_34676ea5f:1",
      action: "proceed",
      by: "agent",
      adopted: 2,
    });
    expect(out.result?.summary).toMatchObject({ unanswered: 0, adopted: 2 });
    expect(out.marker).toMatchObject({ ok: true, op: "headline-respond", plan_id: planId });
    const rows = f.store.db
      .prepare("SELECT reason_id, via, by, node_key, plan_id FROM prov_influence ORDER BY reason_id")
      .all();
    expect(rows).toEqual([
      { reason_id: c, via: "headline_response", by: "agent", node_key: LOAD.node_key, plan_id: planId },
      { reason_id: other, via: "headline_response", by: "agent", node_key: LOAD.node_key, plan_id: planId },
    ]);
    const plan = f.store.db.prepare("SELECT headline_json FROM plans WHERE plan_id = ?").get(planId) as {
      headline_json: string;
    };
    expect(JSON.parse(plan.headline_json).summary.unanswered).toBe(0);
  });

  it("refuses bad action/by, no headline, unknown finding, unknown cite, a second answer — nothing written", async () => {
    const f = setup();
    const { planId } = await published(f);
    const bare = await publish(f, {});
    const fid = "active_constraint:nk_34676ea5f:1";
    const first = await applyOp(f.ledger, "headline-respond", {
      plan_id: planId,
      finding_id: fid,
      action: "proceed",
    });
    expect(first.exitStatus).toBe(0);
    const before = written(f);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ plan_id: planId, finding_id: fid, action: "ignore" }, /action/],
      [{ plan_id: planId, finding_id: fid, action: "proceed", by: "system" }, /by/],
      [{ plan_id: String(bare.result?.plan_id), finding_id: fid, action: "proceed" }, /has no headline/],
      [
        { plan_id: planId, finding_id: "rejected_path:nk_34676ea5f:7", action: "proceed" },
        /no finding rejected_path/,
      ],
      [
        { plan_id: planId, finding_id: "rejected_path:nk_34676ea5f:1", action: "revise", cites: [4242] },
        /#4242 does not exist/,
      ],
      [{ plan_id: planId, finding_id: fid, action: "revise" }, /already answered on the latest headline of/],
      [{ plan_id: planId, finding_id: fid, action: "proceed", by: "human" }, /already answered/],
    ];
    for (const [input, msg] of cases) {
      const out = await applyOp(f.ledger, "headline-respond", input);
      expect(out.exitStatus, JSON.stringify(input)).toBe(2);
      expect(out.error?.message).toMatch(msg);
    }
    const missing = await applyOp(f.ledger, "headline-respond", {
      plan_id: "nope",
      finding_id: fid,
      action: "proceed",
    });
    expect(missing.exitStatus).toBe(3);
    expect(written(f)).toEqual(before);
  });

  it("the UNIQUE index backs the check: a raw second insert fails", async () => {
    const f = setup();
    const { planId } = await published(f);
    await applyOp(f.ledger, "headline-respond", {
      plan_id: planId,
      finding_id: "active_constraint:nk_34676ea5f:1",
      action: "proceed",
    });
    const h = f.store.db.prepare("SELECT max(id) AS id FROM prov_headlines").get() as { id: number };
    expect(() =>
      f.store.db
        .prepare(
          "INSERT INTO prov_headline_responses (headline_id, finding_id, action, by, at) VALUES (?, ?, 'revise', 'agent', 't')",
        )
        .run(h.id, "active_constraint:nk_34676ea5f:1"),
    ).toThrow(/UNIQUE/);
  });
});
