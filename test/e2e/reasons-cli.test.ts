/**
 * Close-time reasons through the built CLI (`bin/ratchet.js`), as a review agent drives them:
 * `reason slots` (text and --json), `reason fill` from stdin and from a file, the old `text` shape
 * refused with exit 2 and nothing written, keys outside the plan refused with 10, `step apply`
 * with `{{label.path}}` references, and a `pending` close. The node source's rows (runs,
 * snapshots, events) and the user's words are inserted directly, as the analyzer and the prompt
 * hook would have recorded them.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { insertChained, insertRow } from "../../src/provenance/rows.js";
import { assertBuilt, makeWorkspace, query, type TestWorkspace } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000 });

const WORDS = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";
const LOAD = "nk_34676ea5f1d4";
const COL = "nk_a72a091c8cc2";

let ws: TestWorkspace | undefined;
afterEach(() => ws?.remove());

/** A workspace with project shop, a plan handed off to -REVIEW.1, and (graph) run 7's events. */
async function handedOff(opts: { graph?: boolean } = {}) {
  assertBuilt();
  ws = await makeWorkspace("ratchet-reasons-");
  const w = ws;
  const repo = join(w.dir, "shop");
  expect((await w.run(["project", "add", "shop", "--repo", w.dir])).status).toBe(0);
  const pub = await w.run([
    "plan",
    "publish",
    w.input("plan.json", {
      goal: "fiscal weeks",
      prefix: "orders-fiscal",
      project: "shop",
      steps: ["edit load_orders"],
    }),
  ]);
  expect(pub.status, pub.stderr).toBe(0);
  const plan = String(pub.marker?.plan_id);
  const a = `${plan}-A`;
  expect((await w.run(["step", "start", a])).status).toBe(0);
  expect((await w.run(["step", "complete", a, "--summary", "done"])).status).toBe(0);
  const review1 = `${plan}-REVIEW.1`;
  expect((await w.run(["step", "start", review1])).status).toBe(0);
  const db = new Database(w.dbPath);
  db.transaction(() => {
    insertChained(db, "prov_utterances", {
      session_id: "s-1",
      project: "shop",
      plan_id: plan,
      text: WORDS,
      occurred_at: new Date().toISOString(),
      recorded_at: new Date().toISOString(),
      origin: "hook",
    });
    if (opts.graph === false) return;
    insertRow(db, "prov_analysis_runs", {
      id: 7,
      project: "shop",
      plan_id: plan,
      step_id: review1,
      trigger: "review",
      created_at: new Date().toISOString(),
    });
    const snap = (key: string, type: string, qn: string) =>
      insertRow(db, "prov_node_snapshots", {
        run_id: 7,
        node_key: key,
        node_type: type,
        qualified_name: qn,
        file_path: "shop/pipeline.py",
        line_start: 1,
        line_end: 9,
      });
    snap(LOAD, "function", "shop.pipeline.load_orders");
    snap(COL, "column", "shop.pipeline.load_orders:df.fiscal_week");
    insertRow(db, "prov_node_events", {
      run_id: 7,
      seq: 1,
      event_type: "node_changed",
      node_key: LOAD,
      payload: '{"changed":["struct_sig"]}',
    });
    insertRow(db, "prov_node_events", {
      run_id: 7,
      seq: 2,
      event_type: "node_added",
      node_key: COL,
      payload: "{}",
    });
  })();
  db.close();
  return { w, plan, review1, repo };
}

const count = (w: TestWorkspace) =>
  query<{ n: number }>(
    w,
    "SELECT (SELECT count(*) FROM prov_change_reasons) + (SELECT count(*) FROM prov_influence) + (SELECT count(*) FROM prov_reference_links) AS n",
  )[0]?.n;

describe("ratchet reason (built CLI)", () => {
  it("slots as text and JSON, the refused text shape, unknown keys, then a fill and the close", async () => {
    const { w, plan, review1 } = await handedOff();
    const text = await w.run(["reason", "slots", plan, "--draft"]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      "  1. shop.pipeline.load_orders (function, node_changed) [nk_34676ea5f1d4]",
    );
    expect(text.stdout).toContain("  2. shop.pipeline.load_orders:df.fiscal_week (column, node_added)");
    expect(text.stdout).toContain("`unstated`");
    expect(text.stdout).toMatch(/#1 \[0, 33\] score 11 r0: Keep fiscal weeks in load_orders\./);
    const json = await w.run(["reason", "slots", plan, "--json", "--draft"]);
    expect(json.marker).toEqual({ ok: true, op: "reason-slots", plan_id: plan });
    expect(JSON.parse(json.lines.slice(0, -1).join("\n")).slots).toHaveLength(2);
    // The flow's own input shape (what the reason-slots.sh shim passes): a JSON file or stdin.
    const viaFile = await w.run(["reason", "slots", w.input("slots.json", { plan_id: plan, draft: true })]);
    expect(viaFile.marker).toEqual({ ok: true, op: "reason-slots", plan_id: plan });
    const viaStdin = await w.run(["reason", "slots", "-"], {
      input: JSON.stringify({ plan_id: plan, bogus: 1 }),
    });
    expect(viaStdin.status).toBe(2);
    expect(viaStdin.stderr).toContain("bogus");

    const old = await w.run(["reason", "fill", "-"], {
      input: JSON.stringify({
        plan_id: plan,
        project: "shop",
        run_id: 7,
        reasons: [{ node_key: LOAD, text: "fiscal weeks" }],
      }),
    });
    expect(old.status).toBe(2);
    expect(old.stderr).toContain('"text" is not accepted');
    expect(count(w)).toBe(0);

    const ghost = await w.run(["reason", "fill", "-"], {
      input: JSON.stringify({ plan_id: plan, reasons: [{ node_key: "nk_ffffffffffff", unstated: true }] }),
    });
    expect(ghost.status).toBe(10);
    expect(ghost.stderr).toContain("nk_ffffffffffff");
    expect(ghost.marker).toMatchObject({
      ok: false,
      code: "unknown_node_key",
      unknown_keys: ["nk_ffffffffffff"],
    });
    expect(count(w)).toBe(0);

    const fill = await w.run([
      "reason",
      "fill",
      w.input("fill.json", {
        plan_id: plan,
        project: "shop",
        run_id: 7,
        step_id: review1,
        reasons: [
          { node_key: LOAD, utterance_id: 1, span: [0, 33] },
          { node_key: COL, interpretation: "the rollup groups by this column" },
        ],
      }),
    ]);
    expect(fill.status, fill.stderr).toBe(0);
    expect(fill.lines.at(-1)).toBe(JSON.stringify({ ok: true, op: "reason-fill", plan_id: plan }));
    expect(JSON.parse(fill.lines.slice(0, -1).join("\n"))).toMatchObject({
      filled: 2,
      stated: 1,
      asserted: 1,
      unstated: 0,
      adopted: 0,
      unknown_keys: [],
    });
    const done = await w.run(["step", "complete", review1, "--summary", "reviewed"]);
    expect(done.status, done.stderr).toBe(0);
    expect(done.marker).toMatchObject({ plan_status: "COMPLETED" });
    expect(query(w, "SELECT review_state FROM plans WHERE plan_id = ?", plan)).toEqual([
      { review_state: "reviewed" },
    ]);
    expect(query(w, "SELECT count(*) AS n FROM prov_change_reasons WHERE tier = 'unstated'")).toEqual([
      { n: 0 },
    ]);
  });

  it("step apply: reason-slots then reason-fill with {{label.path}}", async () => {
    const { w, plan } = await handedOff();
    const lines = [
      { op: "reason-slots", as: "s", plan_id: plan, draft: true },
      {
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
      },
    ];
    const r = await w.run(["step", "apply", "-"], { input: lines.map((l) => JSON.stringify(l)).join("\n") });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    expect(JSON.parse(r.lines[0] as string)).toMatchObject({ ok: true, op: "reason-slots", plan_id: plan });
    expect(JSON.parse(r.lines[1] as string)).toMatchObject({ ok: true, op: "reason-fill", plan_id: plan });
    expect(
      query(w, "SELECT node_key, tier, verbatim_start, verbatim_end FROM prov_change_reasons ORDER BY id"),
    ).toEqual([
      { node_key: LOAD, tier: "stated", verbatim_start: 0, verbatim_end: 33 },
      { node_key: COL, tier: "unstated", verbatim_start: null, verbatim_end: null },
    ]);
  });

  it("a pending close records unstated/unknown rows for nodes no rule recognises", async () => {
    const { w, review1 } = await handedOff();
    writeFileSync(
      join(w.dir, "provledger-extensions.json"),
      JSON.stringify({ version: 1, reasons: { close_mode: "pending" } }),
    );
    const done = await w.run(["step", "complete", review1, "--summary", "reviewed"], {
      env: { PROVLEDGER_EXTENSIONS: undefined },
    });
    expect(done.status, done.stderr).toBe(0);
    expect(query(w, "SELECT node_key, tier, state, rule_id FROM prov_change_reasons ORDER BY id")).toEqual([
      { node_key: LOAD, tier: "stated", state: "active", rule_id: "R0" },
      { node_key: COL, tier: "unstated", state: "unknown", rule_id: null },
    ]);
    expect(query(w, "SELECT verdict FROM prov_trigger_log ORDER BY id")).toEqual([
      { verdict: "auto" },
      { verdict: "silent" },
    ]);
  });

  it("no state graph: reason slots exits 10 `no state graph`; the close proceeds and says so", async () => {
    const { w, plan, review1 } = await handedOff({ graph: false });
    const r = await w.run(["reason", "slots", plan]);
    expect(r.status).toBe(10);
    expect(r.stderr).toContain("no state graph");
    const done = await w.run(["step", "complete", review1, "--summary", "reviewed"]);
    expect(done.status, done.stderr).toBe(0);
    const logs = query<{ text: string }>(w, "SELECT text FROM step_logs WHERE plan_id = ?", plan).map(
      (l) => l.text,
    );
    expect(logs.some((t) => t.startsWith("[REASONS] state graph unavailable"))).toBe(true);
  });
});
