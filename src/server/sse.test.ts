/**
 * `/events` over a listening server: `id:` on every message, live delivery of writes made through
 * the server and by another connection to the store (the shared watcher), filters, and resume with
 * Last-Event-ID after a disconnect with no event lost or repeated.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { connectSse } from "../../test/helpers/sse.js";
import { Ledger } from "../ledger/index.js";
import { BlobStore, SqliteStore } from "../store/index.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

async function post(op: string, body: unknown) {
  const r = await fetch(`${fx.server.url}/api/flows/${op}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
  return (await r.json()) as Record<string, any>;
}

/** A second connection to the same database, as another `ratchet` process would have. */
function otherWriter() {
  const store = SqliteStore.open(fx.workspace.dbPath);
  const ledger = new Ledger({ store, blobs: new BlobStore(fx.workspace.blobsDir) });
  return { ledger, close: () => store.close() };
}

const ids = (ms: { id: string | undefined }[]) => ms.map((m) => Number(m.id));

describe("GET /events", () => {
  it("delivers new events live, each with id:, from this server and from another writer", async () => {
    const sse = await connectSse(`${fx.server.url}/events`);
    expect(sse.status).toBe(200);
    const plan = (await post("publish-plan", { goal: "live", steps: [{ title: "a", type: "THINKING" }] }))
      .result;
    const first = await sse.waitFor(1);
    expect(JSON.parse(first[0]!.data)).toMatchObject({ type: "plan.published", plan_id: plan.plan_id });
    const other = otherWriter();
    try {
      other.ledger.start({ step_id: plan.step_ids[0] });
    } finally {
      other.close();
    }
    const total = fx.server.ctx.store.lastEventId();
    const got = await sse.waitFor(total);
    sse.close();
    for (const m of got) expect(m.id).toMatch(/^\d+$/);
    expect(got.map((m) => JSON.parse(m.data).type)).toContain("step.in_progress");
    expect(ids(got)).toEqual([...ids(got)].sort((a, b) => a - b));
  });

  it("resumes after a disconnect from Last-Event-ID with no event lost or repeated", async () => {
    const plan = (
      await post("publish-plan", {
        goal: "resume",
        steps: [1, 2, 3, 4].map((i) => ({ title: `s${i}`, type: "THINKING" })),
      })
    ).result;
    const a = await connectSse(`${fx.server.url}/events?since=0`);
    const firstBatch = await a.waitFor(1);
    a.close();
    const lastId = firstBatch[firstBatch.length - 1]!.id!;
    // Written while no client is connected: some through the server, some by another writer.
    for (const s of plan.step_ids.slice(0, 2)) await post("start-step", { step_id: s });
    const other = otherWriter();
    try {
      for (const s of plan.step_ids.slice(2, 4)) other.ledger.start({ step_id: s });
    } finally {
      other.close();
    }
    const b = await connectSse(`${fx.server.url}/events`, { "last-event-id": lastId });
    const total = fx.server.ctx.store.lastEventId();
    const rest = await b.waitFor(total - Number(lastId));
    // And one more live after the replay.
    await post("complete-step", { step_id: plan.step_ids[0], summary: "done" });
    const after = await b.waitFor(rest.length + 1);
    b.close();
    const all = [...ids(firstBatch), ...ids(after)];
    const expected = Array.from({ length: fx.server.ctx.store.lastEventId() }, (_, i) => i + 1);
    expect(all).toEqual(expected);
  });

  it("filters by plan and entity, and refuses a bad resume id (400)", async () => {
    const p1 = (await post("publish-plan", { goal: "one", steps: [{ title: "a", type: "THINKING" }] }))
      .result;
    const p2 = (await post("publish-plan", { goal: "two", steps: [{ title: "b", type: "THINKING" }] }))
      .result;
    await post("start-step", { step_id: p1.step_ids[0] });
    await post("start-step", { step_id: p2.step_ids[0] });
    const byPlan = await connectSse(`${fx.server.url}/events?since=0&plan_id=${p2.plan_id}`);
    const got = await byPlan.waitFor(2);
    byPlan.close();
    for (const m of got) expect(JSON.parse(m.data).plan_id).toBe(p2.plan_id);
    const byEntity = await connectSse(
      `${fx.server.url}/events?since=0&entity_kind=step&entity_id=${p1.step_ids[0]}`,
    );
    const e = await byEntity.waitFor(1);
    byEntity.close();
    expect(JSON.parse(e[0]!.data)).toMatchObject({ entity_kind: "step", entity_id: p1.step_ids[0] });
    const bad = await fetch(`${fx.server.url}/events`, { headers: { "last-event-id": "abc" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe("Last-Event-ID");
  });
});
