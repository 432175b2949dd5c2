// The reason flows over HTTP (`POST /api/flows/<op>`, the same flows as the CLI), in-process.

import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeServerFixture, type ServerFixture } from "../../../test/helpers/server.js";
import { reviewedPlan } from "../../testing/prov-repo.js";

let fx: ServerFixture;
beforeEach(() => {
  fx = makeServerFixture();
});
afterEach(() => fx.dispose());

const reasonRows = () =>
  (fx.ctx.store.db.prepare("SELECT count(*) AS n FROM prov_change_reasons").get() as { n: number }).n;

const FILES = { "shop/pipeline.py": "def load_orders(path):\n    return open(path).read().splitlines()\n" };
const EDITS = {
  "shop/pipeline.py": `${FILES["shop/pipeline.py"]}\n\ndef fiscal_week(day):\n    return day.isocalendar()[1]\n`,
};
let added = "";

/**
 * A plan of project `shop` handed off to -REVIEW.1: a real git repo analysed at publish and at the
 * review start, whose edit added `fiscal_week` (its key in `added`). `withRepo: false` registers the
 * project without a repo (no state graph).
 */
async function handedOff(withRepo = true): Promise<string> {
  const { store, ledger } = fx.ctx;
  if (withRepo) {
    const p = await reviewedPlan(ledger, {
      project: "shop",
      repo: join(fx.dir, "shop"),
      files: FILES,
      edits: EDITS,
    });
    added = p.key("shop.pipeline.fiscal_week");
    return p.planId;
  }
  store.tx(() => store.addProject({ name: "shop", repo_path: null, created_at: "2026-12-01T00:00:00Z" }));
  const p = ledger.publish({ goal: "g", steps: [{ title: "a", type: "THINKING" }], project: "shop" }, {});
  const a = p.step_ids[0] as string;
  ledger.start({ step_id: a });
  ledger.complete({ step_id: a });
  return p.plan_id;
}

describe("reason flows over HTTP", () => {
  it("reason-slots and reason-fill answer with the CLI's result and marker", async () => {
    const plan = await handedOff();
    const s = await fx.req("POST", "/api/flows/reason-slots", { body: { plan_id: plan } });
    expect(s.status).toBe(200);
    const sb = (await s.json()) as { result: { slots: { node_key: string }[] }; marker: unknown };
    expect(sb.result.slots.map((x) => x.node_key)).toEqual([added]);
    expect(sb.marker).toEqual({ ok: true, op: "reason-slots", plan_id: plan });
    const f = await fx.req("POST", "/api/flows/reason-fill", {
      body: { plan_id: plan, reasons: [{ node_key: added, interpretation: "asked for it" }] },
    });
    expect(f.status).toBe(200);
    expect(reasonRows()).toBe(1);
  });

  it("refusals map to 400 (text shape), 409 (unknown key, no state graph), 404 (plan), nothing written", async () => {
    const plan = await handedOff();
    const text = await fx.req("POST", "/api/flows/reason-fill", {
      body: { plan_id: plan, reasons: [{ node_key: added, text: "because" }] },
    });
    expect(text.status).toBe(400);
    expect(JSON.stringify(await text.json())).toContain('\\"text\\" is not accepted');
    const key = await fx.req("POST", "/api/flows/reason-fill", {
      body: { plan_id: plan, reasons: [{ node_key: "nk_999999999999", unstated: true }] },
    });
    expect(key.status).toBe(409);
    const ghost = await fx.req("POST", "/api/flows/reason-slots", { body: { plan_id: "ghost-1" } });
    expect(ghost.status).toBe(404);
    expect(reasonRows()).toBe(0);
  });

  it("no state graph → 409 no_state_graph", async () => {
    const plan = await handedOff(false);
    const r = await fx.req("POST", "/api/flows/reason-slots", { body: { plan_id: plan } });
    expect(r.status).toBe(409);
    expect(JSON.stringify(await r.json())).toContain("no state graph");
  });
});
