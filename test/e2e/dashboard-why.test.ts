/**
 * The provenance pages of the dashboard in Debian's Chromium (playwright-core, as dashboard.test.ts),
 * served by the built `ratchet serve`: a plan's reason checklist (an answered and an open slot)
 * linking to a node's why page with its constraint, quoted span and source. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestWorkspace } from "../helpers/cli.js";
import { type Dash, openDashboard } from "../web/browser.js";

const LOAD = "nk_34676ea5f1d4";
const ROLLUP = "nk_a72a091c8cc2";

let dash: Dash;
let url: string;
let page: Page;
let artifacts: string;
let planId: string;
let constraintId: number;

/** What the node source and the reasons area record, written before the server starts. */
async function seed(ws: TestWorkspace) {
  const repo = join(ws.dir, "shop");
  mkdirSync(repo);
  execFileSync("git", ["init", "-q"], { cwd: repo });
  expect((await ws.run(["project", "add", "shop", "--repo", repo])).status).toBe(0);
  const pub = await ws.run(["plan", "publish", "-"], {
    cwd: repo,
    input: JSON.stringify({ goal: "orders fiscal", prefix: "orders", steps: ["edit"] }),
  });
  planId = String(pub.marker?.plan_id);
  // What the node source and the reasons area record (their writers are other modules).
  const db = new Database(ws.dbPath);
  const t = "2026-12-01T10:15:00.000Z";
  const run = (plan: string | null) =>
    Number(
      db
        .prepare(
          "INSERT INTO prov_analysis_runs (project, plan_id, trigger, created_at) VALUES ('shop', ?, 'review', ?)",
        )
        .run(plan, t).lastInsertRowid,
    );
  const r = run(planId);
  const snap = db.prepare(
    "INSERT INTO prov_node_snapshots (run_id, node_key, node_type, qualified_name, file_path, line_start, line_end) VALUES (?, ?, 'function', ?, 'shop/pipeline.py', ?, ?)",
  );
  snap.run(r, LOAD, "shop.pipeline.load_orders", 1, 20);
  snap.run(r, ROLLUP, "shop.pipeline.rollup", 22, 40);
  const ev = db.prepare(
    "INSERT INTO prov_node_events (run_id, seq, event_type, node_key, payload) VALUES (?, ?, ?, ?, ?)",
  );
  ev.run(r, 1, "node_changed", LOAD, '{"changed":["struct_sig"]}');
  ev.run(r, 2, "node_added", ROLLUP, "{}");
  const text = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";
  const u = Number(
    db
      .prepare(
        "INSERT INTO prov_utterances (project, text, occurred_at, recorded_at, origin, prev_hash, hash) VALUES ('shop', ?, ?, ?, 'hook', '', 'h')",
      )
      .run(text, t, t).lastInsertRowid,
  );
  const reason = db.prepare(
    `INSERT INTO prov_change_reasons (project, node_key, plan_id, role, tier, verbatim_utterance_id, verbatim_start, verbatim_end, statement, occurred_at, recorded_at, recorded_by, prev_hash, hash)
     VALUES ('shop', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 'h')`,
  );
  reason.run(LOAD, planId, "reason", "stated", u, 0, 33, null, t, t, "agent");
  constraintId = Number(
    reason.run(
      LOAD,
      "extensions",
      "constraint",
      "asserted",
      null,
      null,
      null,
      "weekly grain stays",
      t,
      t,
      "human",
    ).lastInsertRowid,
  );
  const ref = Number(
    db
      .prepare(
        "INSERT INTO prov_references (project, kind, uri, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('shop', 'email', 'https://mail.example/t/1', 'finance thread', ?, ?, 'linked', '', 'h')",
      )
      .run(t, t).lastInsertRowid,
  );
  db.prepare("INSERT INTO prov_reference_links (reason_id, reference_id) VALUES (?, ?)").run(
    constraintId,
    ref,
  );
  db.close();
}

beforeAll(async () => {
  dash = await openDashboard("dashboard", { setup: seed });
  ({ url, page, artifacts } = dash);
}, 120_000);

afterAll(async () => {
  await dash?.close();
});

describe("dashboard: reasons and why", () => {
  it("shows a plan's reason checklist and, from a slot, the node's why page", async () => {
    await page.goto(`${url}/#/plans/${planId}`);
    await page.locator("[data-reasons-link]").click();
    await page.locator(`[data-slot="${LOAD}"][data-answered="true"]`).waitFor();
    expect(await page.locator(`[data-slot="${ROLLUP}"][data-answered="false"]`).count()).toBe(1);
    expect(await page.locator(`[data-slot="${LOAD}"] .record[data-tier="stated"]`).innerText()).toContain(
      "«Keep fiscal weeks in load_orders.»",
    );
    await page.screenshot({ path: join(artifacts, "reasons-checklist.png"), fullPage: true });

    await page.locator(`[data-slot="${LOAD}"] > a`).click();
    await page.locator(`[data-why="${LOAD}"]`).waitFor();
    const c = page.locator(`[data-record="${constraintId}"]`);
    expect(await c.innerText()).toMatch(/asserted · linked · .* · shown/);
    expect(await c.locator('[data-verifiability="linked"]').innerText()).toContain(
      "finance thread · linked https://mail.example/t/1",
    );
    expect(await page.locator('[data-section="constraints"]').innerText()).toBe("constraints · 1");
    await page.screenshot({ path: join(artifacts, "why-node.png"), fullPage: true });

    await page.goto(`${url}/#/why/shop/shop.nope`);
    await page.locator('[data-why="none"]').waitFor();
    expect(await page.locator('[data-why="none"]').innerText()).toBe(
      "nothing on record for shop.nope in project shop",
    );
  });
});
