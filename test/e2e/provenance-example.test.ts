/**
 * The spec's worked example (§8) end to end through the built CLI (`bin/ratchet.js`), on a real git
 * repository with Python and TypeScript files, the real analyser and the real prompt hook:
 * project `shop` → the user's words through `hook user-prompt` (Claude Code's UserPromptSubmit
 * JSON) → a plan (publish baseline) → an edit with a rename that keeps its `nk_` key → REVIEW.1
 * (refresh) → `reason slots --draft` (the r0 candidate with its sentence span) → the old
 * `{node_key, text}` shape refused → a stated and an asserted fill → the close → a second plan
 * closed with `close_mode: pending` → `why --pending` and `why <file>:<line>`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { commitFiles, writeFiles } from "../../src/testing/prov-repo.js";
import { assertBuilt, makeWorkspace, query, type TestWorkspace } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const WORDS = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";
const FIRST_SENTENCE = "Keep fiscal weeks in load_orders.";
const QUIET = {
  RATCHET_HEADLESS: undefined,
  PROVLEDGER_HEADLESS: undefined,
  PROVLEDGER_HOOK_ERRORS: undefined,
};

const PIPELINE = `import csv


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def load_orders(path):
    rows = read_rows(path)
    return [r for r in rows if r["status"] == "paid"]
`;

// read_rows renamed to fetch_rows (same body), load_orders keeps fiscal weeks, fiscal_week added.
const PIPELINE_EDITED = `import csv
import datetime


def fetch_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def load_orders(path):
    rows = fetch_rows(path)
    paid = [r for r in rows if r["status"] == "paid"]
    for r in paid:
        r["fiscal_week"] = fiscal_week(r["date"])
    return paid


def fiscal_week(day):
    return datetime.date.fromisoformat(day).isocalendar()[1]
`;
const LOAD_ORDERS_LINE = PIPELINE_EDITED.split("\n").indexOf("def load_orders(path):") + 2;

const ROLLUP = `export function weeklyTotal(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
`;
const ROLLUP_EDITED = `export function weeklyTotal(xs: number[], digits: number): number {
  const total = xs.reduce((a, b) => a + b, 0);
  return Number(total.toFixed(digits));
}
`;
const ROLLUP_EDITED_AGAIN = `export function weeklyTotal(xs: number[], digits: number): number {
  if (xs.length === 0) return 0;
  const total = xs.reduce((a, b) => a + b, 0);
  return Number(total.toFixed(digits));
}
`;

let ws: TestWorkspace;
let repo: string;
beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-e2e-example-");
  repo = join(ws.dir, "shop");
  commitFiles(repo, { "shop/pipeline.py": PIPELINE, "web/rollup.ts": ROLLUP });
});
afterAll(() => ws?.remove());

const json = (r: { lines: string[] }) => JSON.parse(r.lines.slice(0, -1).join("\n"));
const reasonRows = () =>
  (
    query<{ n: number }>(
      ws,
      "SELECT (SELECT count(*) FROM prov_change_reasons) + (SELECT count(*) FROM prov_influence) + (SELECT count(*) FROM prov_reference_links) AS n",
    )[0] as { n: number }
  ).n;

async function ok(args: string[], opts: Parameters<TestWorkspace["run"]>[1] = {}) {
  const r = await ws.run(args, opts);
  expect(r.status, `${args.join(" ")}: ${r.stderr}${r.stdout}`).toBe(0);
  return r;
}

/** Publishes a one-step plan of `shop` from inside the repo; returns its id. */
async function publish(goal: string, prefix: string): Promise<string> {
  const r = await ok(
    [
      "plan",
      "publish",
      ws.input(`${prefix}.json`, { goal, prefix, project: "shop", steps: ["edit the code"] }),
    ],
    { cwd: repo },
  );
  return String(r.marker?.plan_id);
}

describe("the worked example through bin/ratchet.js", () => {
  let plan = "";
  let review1 = "";
  let utteranceId = 0;
  let loadOrders = "";

  it("registers shop and records the user's words through the prompt hook", async () => {
    await ok(["project", "add", "shop", "--repo", repo]);
    const payload = {
      session_id: "5f0c1a2b-example",
      transcript_path: "/home/u/.claude/projects/shop/5f0c1a2b-example.jsonl",
      cwd: join(repo, "shop"),
      hook_event_name: "UserPromptSubmit",
      permission_mode: "default",
      prompt: WORDS,
    };
    const hook = await ws.run(["hook", "user-prompt"], {
      cwd: join(repo, "shop"),
      input: JSON.stringify(payload),
      env: { ...QUIET, RATCHET_HOOK_ERRORS: join(ws.dir, "hook-errors.log") },
    });
    expect(hook.status, hook.stderr).toBe(0);
    const rows = query<{ id: number; text: string; project: string; origin: string; session_id: string }>(
      ws,
      "SELECT id, text, project, origin, session_id FROM prov_utterances",
    );
    expect(rows).toEqual([
      expect.objectContaining({
        text: WORDS,
        project: "shop",
        origin: "hook",
        session_id: "5f0c1a2b-example",
      }),
    ]);
    utteranceId = (rows[0] as { id: number }).id;
  });

  it("publishes a plan (baseline), renames and edits code, and the REVIEW.1 refresh keeps the renamed key", async () => {
    plan = await publish("Keep fiscal weeks in the orders pipeline", "orders-fiscal");
    expect(query(ws, "SELECT session_id FROM plans WHERE plan_id = ?", plan)).toEqual([
      { session_id: "5f0c1a2b-example" },
    ]);
    expect(query(ws, "SELECT trigger FROM prov_analysis_runs WHERE plan_id = ? ORDER BY id", plan)).toEqual([
      { trigger: "publish" },
    ]);
    const before = await ok(["graph", "show", "shop.pipeline.read_rows", "--project", "shop", "--json"]);
    const renamedKey = JSON.parse(before.stdout).resolved.node_key as string;
    expect(renamedKey).toMatch(/^nk_[0-9a-f]{12}$/);
    loadOrders = JSON.parse(
      (await ok(["graph", "show", "shop.pipeline.load_orders", "--project", "shop", "--json"])).stdout,
    ).resolved.node_key;

    writeFiles(repo, { "shop/pipeline.py": PIPELINE_EDITED, "web/rollup.ts": ROLLUP_EDITED });
    await ok(["step", "start", `${plan}-A`]);
    await ok(["step", "complete", `${plan}-A`, "--summary", "fiscal weeks in load_orders"]);
    review1 = `${plan}-REVIEW.1`;
    await ok(["step", "start", review1]);
    expect(
      query(ws, "SELECT trigger, step_id FROM prov_analysis_runs WHERE plan_id = ? ORDER BY id", plan),
    ).toEqual([
      { trigger: "publish", step_id: null },
      { trigger: "review", step_id: review1 },
    ]);

    const after = await ok(["graph", "show", "shop.pipeline.fetch_rows", "--project", "shop", "--json"]);
    const j = JSON.parse(after.stdout);
    expect(j.resolved.node_key).toBe(renamedKey);
    expect(j.history.map((e: { event_type: string }) => e.event_type)).toContain("node_renamed");
    expect(
      JSON.parse(
        (await ok(["graph", "show", "shop.pipeline.load_orders", "--project", "shop", "--json"])).stdout,
      ).resolved.node_key,
    ).toBe(loadOrders);
  });

  it("reason slots --draft shows the changed nodes and the r0 candidate with the sentence span", async () => {
    const text = await ok(["reason", "slots", plan, "--draft"]);
    expect(text.stdout).toContain(`shop.pipeline.load_orders (function, node_changed) [${loadOrders}]`);
    expect(text.stdout).toContain("shop.pipeline.fiscal_week (function, node_added)");
    expect(text.stdout).toContain("web.rollup.weeklyTotal (function, node_changed)");
    expect(text.stdout).toMatch(
      new RegExp(
        `#${utteranceId} \\[0, ${FIRST_SENTENCE.length}\\] score \\d+ r0: Keep fiscal weeks in load_orders\\.`,
      ),
    );
    const j = json(await ok(["reason", "slots", plan, "--json", "--draft"]));
    const names = j.slots.map((s: { qualified_name: string }) => s.qualified_name).sort();
    // The pure rename (same body) is no slot.
    expect(names).toEqual([
      "shop.pipeline.fiscal_week",
      "shop.pipeline.load_orders",
      "web.rollup.weeklyTotal",
    ]);
    const draft = j.draft.find((d: { node_key: string }) => d.node_key === loadOrders);
    expect(draft.candidates[0]).toMatchObject({
      utterance_id: utteranceId,
      span: [0, FIRST_SENTENCE.length],
    });
  });

  it("refuses the old {node_key, text} shape with exit 2 and writes nothing", async () => {
    const old = await ws.run(["reason", "fill", "-"], {
      input: JSON.stringify({ plan_id: plan, reasons: [{ node_key: loadOrders, text: "fiscal weeks" }] }),
    });
    expect(old.status).toBe(2);
    expect(old.stderr).toContain('"text" is not accepted');
    expect(old.marker).toMatchObject({ ok: false, op: "reason-fill" });
    expect(reasonRows()).toBe(0);
  });

  it("fills a stated span and an asserted interpretation with a reference; the close completes the plan", async () => {
    const ref = await ok([
      "reference",
      "add",
      "--utterance",
      String(utteranceId),
      "--kind",
      "doc",
      "--label",
      "finance fiscal calendar",
      "--uri",
      "https://wiki.example/finance/fiscal-calendar",
      "--occurred-at",
      "2026-11-30",
    ]);
    const refId = Number(ref.marker?.reference_id ?? json(ref).reference_id);
    expect(refId).toBeGreaterThan(0);
    const slots = json(await ok(["reason", "slots", plan, "--json"])).slots as {
      node_key: string;
      qualified_name: string;
    }[];
    const keyOf = (qn: string) => slots.find((s) => s.qualified_name === qn)?.node_key;
    const fill = await ok([
      "reason",
      "fill",
      ws.input("fill.json", {
        plan_id: plan,
        reasons: [
          { node_key: loadOrders, utterance_id: utteranceId, span: [0, FIRST_SENTENCE.length] },
          {
            node_key: keyOf("shop.pipeline.fiscal_week"),
            interpretation: "finance reconciles by fiscal week, so the week is computed once here",
            refs: [refId],
          },
        ],
      }),
    ]);
    expect(fill.marker).toEqual({ ok: true, op: "reason-fill", plan_id: plan });
    expect(json(fill)).toMatchObject({ filled: 2, stated: 1, asserted: 1, unknown_keys: [] });
    expect(
      query(
        ws,
        "SELECT node_key, tier, verbatim_utterance_id, verbatim_start, verbatim_end FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
        plan,
      ).slice(0, 2),
    ).toEqual([
      {
        node_key: loadOrders,
        tier: "stated",
        verbatim_utterance_id: utteranceId,
        verbatim_start: 0,
        verbatim_end: FIRST_SENTENCE.length,
      },
      {
        node_key: keyOf("shop.pipeline.fiscal_week"),
        tier: "asserted",
        verbatim_utterance_id: null,
        verbatim_start: null,
        verbatim_end: null,
      },
    ]);
    const done = await ok(["step", "complete", review1, "--summary", "reasons filled"]);
    expect(done.marker).toMatchObject({ plan_status: "COMPLETED" });
    expect(query(ws, "SELECT status FROM plans WHERE plan_id = ?", plan)).toEqual([{ status: "COMPLETED" }]);
  });

  it("a second plan closed with close_mode pending records unstated/unknown rows; why --pending lists them", async () => {
    writeFileSync(
      join(repo, "provledger-extensions.json"),
      JSON.stringify({ version: 1, reasons: { close_mode: "pending" } }),
    );
    const second = await publish("Skip empty weeks in the rollup", "rollup-empty");
    writeFiles(repo, { "web/rollup.ts": ROLLUP_EDITED_AGAIN });
    await ok(["step", "start", `${second}-A`]);
    await ok(["step", "complete", `${second}-A`, "--summary", "empty weeks"]);
    await ok(["step", "start", `${second}-REVIEW.1`]);
    const done = await ok(["step", "complete", `${second}-REVIEW.1`, "--summary", "no one asked"], {
      env: { PROVLEDGER_EXTENSIONS: undefined },
    });
    expect(done.marker).toMatchObject({ plan_status: "COMPLETED" });
    const rows = query<{ node_key: string; tier: string; state: string }>(
      ws,
      "SELECT node_key, tier, state FROM prov_change_reasons WHERE plan_id = ? ORDER BY id",
      second,
    );
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.tier === "unstated" && r.state === "unknown")).toBe(true);
    // The first plan's unanswered weeklyTotal got the `ask` backstop (unstated, active): listed too.
    const unstated = query<{ n: number }>(
      ws,
      "SELECT count(*) AS n FROM prov_change_reasons WHERE project = 'shop' AND tier = 'unstated'",
    )[0]?.n;
    expect(unstated).toBe(rows.length + 1);
    const pending = await ok(["why", "--pending", "--project", "shop"]);
    expect(pending.stdout.split("\n")[0]).toBe(`pending reasons (unstated) · ${unstated}`);
    for (const r of rows) expect(pending.stdout).toContain(`${r.node_key} · ${second}`);
  });

  it("why <file>:<line> on the changed function shows its reasons with the quoted span marked", async () => {
    const r = await ok(["why", `shop/pipeline.py:${LOAD_ORDERS_LINE}`], { cwd: repo });
    expect(r.stdout.split("\n")[0]).toMatch(/^shop\.pipeline\.load_orders · /);
    expect(r.stdout).toContain(`«${FIRST_SENTENCE}»`);
    const j = JSON.parse(
      (await ok(["why", `shop/pipeline.py:${LOAD_ORDERS_LINE}`, "--project", "shop", "--json"])).stdout,
    );
    expect(j).toMatchObject({ project: "shop", resolved: { node_key: loadOrders } });
    const stated = (j.records as { tier: string; evidence_level: string }[]).filter(
      (x) => x.tier === "stated",
    );
    expect(stated).toHaveLength(1);
    expect(["linked", "verbal"]).toContain(stated[0]?.evidence_level);
  });
});
