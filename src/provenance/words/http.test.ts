/** The words flows over HTTP (`POST /api/flows/<op>`), in-process over a real store. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeServerFixture, type ServerFixture } from "../../../test/helpers/server.js";

let fx: ServerFixture;
beforeEach(() => {
  fx = makeServerFixture();
});
afterEach(() => fx.dispose());

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
const json = async (r: Response) => (await r.json()) as Record<string, any>;
const rows = () =>
  (
    fx.ctx.store.db
      .prepare(
        "SELECT (SELECT count(*) FROM prov_utterances) + (SELECT count(*) FROM prov_references) + (SELECT count(*) FROM prov_reference_checks) AS n",
      )
      .get() as { n: number }
  ).n;

describe("POST /api/flows/note | reference-add | reference-mark", () => {
  it("records through HTTP with the CLI's results (origin agent_cli), refusals 400/404 writing nothing", async () => {
    const note = await fx.req("POST", "/api/flows/note", {
      body: {
        text: "Finance reconciles weekly",
        at: "2026-11-30 14:00",
        refs: [{ kind: "verbal", label: "hallway" }],
      },
    });
    expect(note.status).toBe(200);
    const n = (await json(note)).result;
    expect(n).toMatchObject({ origin: "agent_cli", occurred_at: "2026-11-30T14:00:00.000Z" });
    const add = await fx.req("POST", "/api/flows/reference-add", {
      body: {
        kind: "email",
        label: "CFO",
        occurred_at: "2026-11-28",
        utterance_id: n.utterance_id,
        uri: "https://m/1",
      },
    });
    expect(add.status).toBe(200);
    const ref = (await json(add)).result.reference_id;
    const mark = await fx.req("POST", "/api/flows/reference-mark", {
      body: { reference_id: ref, verdict: "moved" },
    });
    expect((await json(mark)).result).toMatchObject({ verdict: "moved", checks: 1 });
    const before = rows();
    const badAnchor = await fx.req("POST", "/api/flows/reference-add", {
      body: { kind: "email", label: "x", occurred_at: "2026-11-28", utterance_id: 999 },
    });
    expect(badAnchor.status).toBe(400);
    expect(JSON.stringify(await json(badAnchor))).toContain("utterance");
    const unknown = await fx.req("POST", "/api/flows/reference-mark", {
      body: { reference_id: 999, ok: true },
    });
    expect(unknown.status).toBe(404);
    const badAt = await fx.req("POST", "/api/flows/note", { body: { text: "w", at: "tomorrow" } });
    expect(badAt.status).toBe(400);
    expect(rows()).toBe(before);
  });
});
