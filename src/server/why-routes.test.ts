/** The provenance read routes, in-process over a real store: checklist, why, errors, read-only. */
import { afterEach, describe, expect, it } from "vitest";
import { makeServerFixture, type ServerFixture } from "../../test/helpers/server.js";
import { insertReason, NODES, seedProject } from "../provenance/reasons/why-fixture.js";
import { insertRow } from "../provenance/rows.js";

let fx: ServerFixture;
afterEach(() => fx?.dispose());
// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
const json = async (r: Response) => (await r.json()) as Record<string, any>;
const LOAD = NODES[0] as (typeof NODES)[number];
const hits = () =>
  (fx.ctx.store.db.prepare("SELECT count(*) AS n FROM prov_read_hits").get() as { n: number }).n;

function seeded(opts: { readOnly?: boolean } = {}) {
  fx = makeServerFixture(opts);
  seedProject(fx.ctx.store, "shop", fx.dir);
  return fx;
}

describe("GET /api/plans/{id}/reasons", () => {
  it("lists the plan's slots (changed nodes) with the reasons recorded for each", async () => {
    seeded();
    const r = await fx.req("POST", "/api/flows/publish-plan", {
      body: { goal: "g", project: "shop", steps: ["a"] },
    });
    const planId = (await json(r)).result.plan_id as string;
    const db = fx.ctx.store.db;
    fx.ctx.store.tx(() => {
      const run = insertRow(db, "prov_analysis_runs", {
        project: "shop",
        plan_id: planId,
        step_id: `${planId}-REVIEW.1`,
        trigger: "review",
        created_at: "t",
      });
      for (const n of NODES)
        insertRow(db, "prov_node_snapshots", {
          run_id: run,
          node_key: n.node_key,
          node_type: "function",
          qualified_name: n.qualified_name,
          file_path: n.file_path,
          line_start: n.line_start,
          line_end: n.line_end,
        });
      insertRow(db, "prov_node_events", {
        run_id: run,
        seq: 1,
        event_type: "node_changed",
        node_key: LOAD.node_key,
        payload: '{"changed":["struct_sig"]}',
      });
      // A dataflow-only change is not a slot.
      insertRow(db, "prov_node_events", {
        run_id: run,
        seq: 2,
        event_type: "node_changed",
        node_key: "nk_a72a091c8cc2",
        payload: '{"changed":["dataflow_sig"]}',
      });
    });
    const id = insertReason(fx.ctx.store, "shop", { plan_id: planId, interpretation: "fiscal weeks" });
    const c = await json(await fx.req("GET", `/api/plans/${planId}/reasons`));
    expect(c).toMatchObject({ plan_id: planId, project: "shop", has_graph: true, answered: 1, open: 0 });
    expect(c.slots).toHaveLength(1);
    expect(c.slots[0]).toMatchObject({
      node_key: LOAD.node_key,
      event_types: ["node_changed"],
      answered: true,
    });
    expect(c.slots[0].reasons[0]).toMatchObject({
      id,
      tier: "asserted",
      evidence_level: "task_context",
      text: "fiscal weeks",
    });
    expect((await fx.req("GET", "/api/plans/nope/reasons")).status).toBe(404);
  });
});

describe("GET /api/why", () => {
  it("answers like why --json and writes read_hit(moment=why)", async () => {
    seeded();
    const id = insertReason(fx.ctx.store, "shop", { role: "constraint", statement: "weekly grain stays" });
    const r = await json(
      await fx.req("GET", `/api/why?project=shop&target=${encodeURIComponent("shop/pipeline.py:12")}`),
    );
    expect(r).toMatchObject({
      mode: "target",
      project: "shop",
      resolved: { node_key: LOAD.node_key },
      summary: { active_constraints: 1 },
    });
    expect(r.records.map((x: { id: number }) => x.id)).toEqual([id]);
    expect(hits()).toBe(1);
    const pending = await json(await fx.req("GET", "/api/why?project=shop&pending=1"));
    expect(pending).toMatchObject({ mode: "pending", records: [] });
    const unknown = await json(await fx.req("GET", "/api/why?project=shop&target=shop.nope"));
    expect(unknown).toMatchObject({ resolved: null, records: [] });
  });

  it("bad input is 400 naming the field, an unknown project 404, nothing written", async () => {
    seeded();
    insertReason(fx.ctx.store, "shop", { interpretation: "x" });
    for (const [path, status, field] of [
      ["/api/why?target=x", 400, "project"],
      ["/api/why?project=shop", 400, "target"],
      ["/api/why?project=shop&target=x&budget=-1", 400, "budget"],
      ["/api/why?project=nope&target=x", 404, "project"],
    ] as const) {
      const r = await fx.req("GET", path);
      expect(r.status, path).toBe(status);
      expect((await json(r)).error.field).toBe(field);
    }
    expect(hits()).toBe(0);
  });

  it("a read-only server writes no read_hit", async () => {
    seeded({ readOnly: true });
    insertReason(fx.ctx.store, "shop", { interpretation: "x" });
    const r = await json(await fx.req("GET", `/api/why?project=shop&target=${LOAD.node_key}`));
    expect(r.records).toHaveLength(1);
    expect(hits()).toBe(0);
  });

  it("is described in /openapi.json", async () => {
    seeded();
    const doc = await json(await fx.req("GET", "/openapi.json"));
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/api/why", "/api/plans/{planId}/reasons"]),
    );
  });
});
