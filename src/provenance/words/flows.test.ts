/**
 * The words flows through `applyOp` (the function every edge calls) on a real ledger and SQLite
 * file: refusals name the field, carry the documented status and write nothing.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyOp, type Op } from "../../ledger/index.js";
import { publishSession } from "./session.js";
import { SqlWordStore } from "./store.js";
import { analysed, type Kit, makeKit, publishIn } from "./test-kit.js";

const kits: Kit[] = [];
function kit(): Kit {
  const k = makeKit();
  kits.push(k);
  return k;
}
afterEach(() => {
  for (const k of kits.splice(0)) k.close();
});

const TABLES = [
  "prov_utterances",
  "prov_references",
  "prov_reference_links",
  "prov_reference_checks",
  "prov_change_reasons",
  "events",
];
const counts = (k: Kit) => Object.fromEntries(TABLES.map((t) => [t, k.count(t)]));

async function op(k: Kit, name: Op, input: unknown, ctx: { cwd?: string; interactive?: boolean } = {}) {
  return applyOp(k.ledger, name, input, {
    cwd: ctx.cwd ?? k.repo,
    ...(ctx.interactive ? { interactive: true } : {}),
  });
}

/** Expects a refusal with `status` naming `field`, and no row written anywhere. */
async function refused(
  k: Kit,
  name: Op,
  input: unknown,
  status: number,
  field: string,
  ctx: { cwd?: string } = {},
) {
  const before = counts(k);
  const r = await op(k, name, input, ctx);
  expect(r.ok, JSON.stringify(r.marker)).toBe(false);
  expect(r.exitStatus).toBe(status);
  expect(r.marker.field).toBe(field);
  expect(String(r.marker.error)).toContain(field.replace(/\[\d+\].*$/, ""));
  expect(counts(k)).toEqual(before);
  return r;
}

describe("note", () => {
  it("records the words, their sources, and the project from the current folder", async () => {
    const k = kit();
    const r = await op(k, "note", {
      text: "Finance reconciles weekly",
      at: "2026-11-30 14:05",
      refs: [
        { kind: "meeting", label: "finance sync" },
        { kind: "email", label: "CFO, re: weeks", uri: "https://mail.example/t/1" },
      ],
    });
    expect(r.ok, JSON.stringify(r.marker)).toBe(true);
    expect(r.result).toMatchObject({
      project: "shop",
      plan_id: null,
      occurred_at: "2026-11-30T14:05:00.000Z",
      origin: "agent_cli",
      reason_id: null,
    });
    const w = new SqlWordStore(k.store);
    const u = w.getUtterance(r.result?.utterance_id as number);
    expect(u).toMatchObject({ text: "Finance reconciles weekly", origin: "agent_cli", project: "shop" });
    expect(w.referencesOfUtterance(u?.id as number).map((x) => x.verifiability)).toEqual([
      "unreachable",
      "linked",
    ]);
    const human = await op(k, "note", { text: "said at the desk", at: "2026-11-30" }, { interactive: true });
    expect(human.result?.origin).toBe("human_cli");
  });

  it("with a node writes one stated reason spanning the whole note, linked to the refs", async () => {
    const k = kit();
    const keys = await analysed(k, { "shop/pipeline.py": "def load_orders(path):\n    return path\n" });
    const loadOrders = keys["shop.pipeline.load_orders"];
    expect(loadOrders).toMatch(/^nk_[0-9a-f]{12}$/);
    const planId = publishIn(k);
    const text = "Keep fiscal weeks in load_orders.";
    const r = await op(k, "note", {
      text,
      at: "2026-11-30T09:00:00",
      plan_id: planId,
      node: "shop.pipeline.load_orders",
      refs: [{ kind: "email", label: "CFO", uri: "https://m/1" }],
    });
    expect(r.ok, JSON.stringify(r.marker)).toBe(true);
    expect(r.result).toMatchObject({
      plan_id: planId,
      node_key: loadOrders,
      evidence_level: "linked",
    });
    const reason = k.store.db
      .prepare("SELECT * FROM prov_change_reasons WHERE id = ?")
      .get(r.result?.reason_id) as Record<string, unknown>;
    expect(reason).toMatchObject({
      tier: "stated",
      recorded_by: "human",
      role: "reason",
      kind: "organizational",
      plan_id: planId,
      node_key: loadOrders,
      verbatim_utterance_id: r.result?.utterance_id,
      verbatim_start: 0,
      verbatim_end: text.length,
    });
    const w = new SqlWordStore(k.store);
    expect(w.referencesOfReason(reason.id as number).map((x) => x.label)).toEqual(["CFO"]);
    // Without --plan the reason's plan is the literal `note`; a verbal ref gives evidence `verbal`.
    const r2 = await op(k, "note", {
      text: "Same, said again",
      at: "2026-11-30",
      node: loadOrders,
      kind: "technical",
      refs: [{ kind: "verbal", label: "hallway" }],
    });
    expect(r2.result).toMatchObject({ evidence_level: "verbal" });
    const row = k.store.db
      .prepare("SELECT plan_id, kind FROM prov_change_reasons WHERE id = ?")
      .get(r2.result?.reason_id);
    expect(row).toEqual({ plan_id: "note", kind: "technical" });
  });

  it("refuses bad input naming the field, writing nothing", async () => {
    const k = kit();
    const ok = { text: "words", at: "2026-11-30" };
    await refused(k, "note", { ...ok, text: "" }, 2, "text");
    await refused(k, "note", { ...ok, text: "   \n" }, 2, "text");
    await refused(k, "note", { text: "words" }, 2, "at");
    for (const at of [
      "yesterday",
      "2026-02-30",
      "2026-11-30 25:00",
      "2026-11-30 12:60",
      "30/11/2026",
      "2026-11-30T12",
    ])
      await refused(k, "note", { ...ok, at }, 2, "at");
    await refused(k, "note", { ...ok, refs: [{ kind: "fax", label: "x" }] }, 2, "refs[0].kind");
    await refused(k, "note", { ...ok, refs: [{ kind: "email", label: "" }] }, 2, "refs[0].label");
    await refused(
      k,
      "note",
      { ...ok, refs: [{ kind: "email", label: "x".repeat(513) }] },
      2,
      "refs[0].label",
    );
    await refused(
      k,
      "note",
      {
        ...ok,
        refs: [
          { kind: "email", label: "ok" },
          { kind: "verbal", label: "x", uri: "https://x" },
        ],
      },
      2,
      "refs[1].uri",
    );
    await refused(
      k,
      "note",
      { ...ok, refs: [{ kind: "email", label: "x", body: "the whole email" }] },
      2,
      "refs[0].body",
    );
    await refused(k, "note", { ...ok, project: "nope" }, 3, "project");
    await refused(k, "note", { ...ok, kind: "personal" }, 2, "kind");
    // --node without a project (a folder in no registered repo, none given).
    await refused(k, "note", { ...ok, node: "shop.x" }, 2, "node", { cwd: k.dir });
    // --node with no node source, and with one that does not know the node.
    await refused(k, "note", { ...ok, node: "shop.x" }, 10, "node");
    await analysed(k, { "shop.py": "def a():\n    return 1\n" });
    await refused(k, "note", { ...ok, node: "shop.missing" }, 10, "node");
  });

  it("refuses an unknown plan (3) and a plan of another project (2)", async () => {
    const k = kit();
    const before = counts(k);
    const r = await op(k, "note", { text: "words", at: "2026-11-30", plan_id: "no-such-plan" });
    expect(r.exitStatus).toBe(3);
    expect(String(r.marker.error)).toContain("no-such-plan");
    expect(counts(k)).toEqual(before);
    const planId = publishIn(k);
    k.store.tx(() =>
      k.store.addProject({ name: "other", repo_path: join(k.dir, "other"), created_at: k.ledger.now() }),
    );
    await refused(
      k,
      "note",
      { text: "words", at: "2026-11-30", plan_id: planId, project: "other" },
      2,
      "plan_id",
    );
  });
});

describe("reference add", () => {
  it("anchors a source on an utterance or a reason, verifiability derived", async () => {
    const k = kit();
    const u = (await op(k, "note", { text: "words", at: "2026-11-30" })).result?.utterance_id as number;
    const r = await op(k, "reference-add", {
      kind: "email",
      label: "CFO: fiscal weeks",
      occurred_at: "2026-11-28",
      utterance: u,
      uri: "https://mail.example/t/123",
      stance: "context",
    });
    expect(r.ok, JSON.stringify(r.marker)).toBe(true);
    expect(r.result).toMatchObject({
      project: "shop",
      kind: "email",
      verifiability: "linked",
      visibility: "shareable",
      stance: "context",
      utterance_id: u,
      reason_id: null,
      occurred_at: "2026-11-28T00:00:00.000Z",
    });
    await analysed(k, { "shop.py": "def b():\n    return 2\n" });
    const reason = (await op(k, "note", { text: "b stays", at: "2026-11-30", node: "shop.b" })).result
      ?.reason_id;
    const r2 = await op(k, "reference-add", {
      kind: "ticket",
      label: "JIRA-9",
      occurred_at: "2026-11-29",
      reason_id: reason,
    });
    expect(r2.result).toMatchObject({ reason_id: reason, utterance_id: null, verifiability: "unreachable" });
  });

  it("refuses a missing, doubled or unknown anchor (exit 2), a verbal uri, a bad label — writing nothing", async () => {
    const k = kit();
    const u = (await op(k, "note", { text: "words", at: "2026-11-30" })).result?.utterance_id as number;
    const base = { kind: "email", label: "x", occurred_at: "2026-11-30" };
    await refused(k, "reference-add", base, 2, "utterance");
    await refused(k, "reference-add", { ...base, utterance: u, reason: 1 }, 2, "reason");
    await refused(k, "reference-add", { ...base, utterance: 999 }, 2, "utterance");
    await refused(k, "reference-add", { ...base, reason: 999 }, 2, "reason");
    await refused(k, "reference-add", { ...base, utterance: u, utterance_id: u + 1 }, 2, "utterance");
    await refused(k, "reference-add", { ...base, utterance: "12abc" }, 2, "utterance");
    await refused(k, "reference-add", { ...base, utterance: u, kind: "verbal", uri: "https://x" }, 2, "uri");
    await refused(k, "reference-add", { ...base, utterance: u, uri: "has spaces in it" }, 2, "uri");
    await refused(k, "reference-add", { ...base, utterance: u, label: "   " }, 2, "label");
    await refused(k, "reference-add", { ...base, utterance: u, occurred_at: "soon" }, 2, "occurred_at");
    await refused(k, "reference-add", { ...base, utterance: u, project: "nope" }, 3, "project");
    k.store.tx(() => k.store.addProject({ name: "other", repo_path: null, created_at: k.ledger.now() }));
    await refused(k, "reference-add", { ...base, utterance: u, project: "other" }, 2, "project");
  });
});

describe("reference mark", () => {
  it("appends dated checks and sets last_checked; a dead link stays", async () => {
    const k = kit();
    const u = (await op(k, "note", { text: "words", at: "2026-11-30" })).result?.utterance_id as number;
    const ref = (
      await op(k, "reference-add", {
        kind: "doc",
        label: "spec",
        occurred_at: "2026-11-01",
        utterance: u,
        uri: "https://d/1",
      })
    ).result?.reference_id as number;
    const gone = await op(k, "reference-mark", { reference_id: String(ref), gone: true, note: "404" });
    expect(gone.result).toMatchObject({
      reference_id: ref,
      verdict: "gone",
      note: "404",
      verifiability: "linked",
      checks: 1,
    });
    k.clock.advance(1000);
    const back = await op(k, "reference-mark", { reference_id: ref, verdict: "ok" });
    expect(back.result).toMatchObject({ verdict: "ok", checks: 2, note: null });
    const row = new SqlWordStore(k.store).getReference(ref);
    expect(row).toMatchObject({
      verifiability: "linked",
      uri: "https://d/1",
      last_checked: back.result?.checked_at,
    });
  });

  it("refuses no verdict or two, an unknown id (3), a verbal source — writing nothing", async () => {
    const k = kit();
    const u = (
      await op(k, "note", { text: "w", at: "2026-11-30", refs: [{ kind: "verbal", label: "lunch" }] })
    ).result;
    const verbal = (u?.reference_ids as number[] | undefined)?.[0];
    const ref = (
      await op(k, "reference-add", {
        kind: "doc",
        label: "spec",
        occurred_at: "2026-11-01",
        utterance: u?.utterance_id,
        uri: "https://d",
      })
    ).result?.reference_id;
    await refused(k, "reference-mark", { reference_id: ref }, 2, "verdict");
    await refused(k, "reference-mark", { reference_id: ref, ok: true, gone: true }, 2, "verdict");
    await refused(k, "reference-mark", { reference_id: ref, verdict: "broken" }, 2, "verdict");
    await refused(k, "reference-mark", { reference_id: 999, ok: true }, 3, "reference_id");
    await refused(k, "reference-mark", { reference_id: 0, ok: true }, 2, "reference_id");
    await refused(k, "reference-mark", { reference_id: verbal, ok: true }, 2, "reference_id");
  });
});

describe("plans.session_id at publish", () => {
  it("is the session of the project's newest hook prompt within 30 minutes, else the environment's, else null", () => {
    const k = kit();
    const w = new SqlWordStore(k.store, () => k.ledger.now());
    const hookRow = (session: string) =>
      w.write(() =>
        w.recordUtterance({
          text: "w",
          occurred_at: k.ledger.now(),
          origin: "hook",
          project: "shop",
          session_id: session,
        }),
      );
    hookRow("old-session");
    k.clock.advance(10 * 60_000);
    hookRow("recent-session");
    k.clock.advance(5 * 60_000);
    const planId = publishIn(k);
    expect(k.store.getPlan(planId)).toMatchObject({ session_id: "recent-session" });
    k.clock.advance(31 * 60_000);
    const now = k.clock.now();
    expect(publishSession(w, "shop", now, {})).toBeNull();
    expect(publishSession(w, "shop", now, { CLAUDE_SESSION_ID: "env-s", CODEX_THREAD_ID: "later" })).toBe(
      "env-s",
    );
    expect(publishSession(w, null, now, { CODEX_THREAD_ID: " t-1 " })).toBe("t-1");
    // A prompt of another project never names this plan's session.
    k.clock.advance(60_000);
    w.write(() =>
      w.recordUtterance({
        text: "w",
        occurred_at: k.ledger.now(),
        origin: "hook",
        project: "else",
        session_id: "x",
      }),
    );
    expect(publishSession(w, "shop", k.clock.now(), {})).toBeNull();
  });
});
