/**
 * The provenance pages of the dashboard in Debian's Chromium (playwright-core, as dashboard.test.ts),
 * served by the built `ratchet serve`: a plan's reason checklist (an answered and an open slot)
 * linking to a node's why page with its constraint, quoted span and source. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  makeWorkspace,
  ROOT,
  type RunningCli,
  startRatchet,
  type TestWorkspace,
} from "../helpers/cli.js";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test-artifacts", "dashboard");
const LOAD = "nk_34676ea5f1d4";
const ROLLUP = "nk_a72a091c8cc2";

let ws: TestWorkspace;
let server: RunningCli;
let url: string;
let context: BrowserContext;
let page: Page;
let profile: string;
let planId: string;
let constraintId: number;

beforeAll(async () => {
  assertBuilt();
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/ensure-system-deps.sh (npm test does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  ws = await makeWorkspace("ratchet-dash-why-");
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
  server = startRatchet(["serve", "--port", "0", "--token", "dash-why-token-0123456789", "--quiet"], {
    cwd: ws.dir,
    timeoutMs: 300_000,
  });
  const deadline = Date.now() + 30_000;
  while (!server.stdoutSoFar().includes("\n")) {
    if (Date.now() > deadline) throw new Error(`serve did not start: ${server.stderrSoFar()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  url = JSON.parse(server.stdoutSoFar().split("\n")[0] as string).url;
  profile = mkdtempSync(join(tmpdir(), "ratchet-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
}, 120_000);

afterAll(async () => {
  await context?.close();
  server?.child.kill("SIGTERM");
  await server?.done.catch(() => undefined);
  if (profile) rmSync(profile, { recursive: true, force: true });
  ws?.remove();
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
    await page.screenshot({ path: join(ARTIFACTS, "reasons-checklist.png"), fullPage: true });

    await page.locator(`[data-slot="${LOAD}"] > a`).click();
    await page.locator(`[data-why="${LOAD}"]`).waitFor();
    const c = page.locator(`[data-record="${constraintId}"]`);
    expect(await c.innerText()).toMatch(/asserted · linked · .* · shown/);
    expect(await c.locator('[data-verifiability="linked"]').innerText()).toContain(
      "finance thread · linked https://mail.example/t/1",
    );
    expect(await page.locator('[data-section="constraints"]').innerText()).toBe("constraints · 1");
    await page.screenshot({ path: join(ARTIFACTS, "why-node.png"), fullPage: true });

    await page.goto(`${url}/#/why/shop/shop.nope`);
    await page.locator('[data-why="none"]').waitFor();
    expect(await page.locator('[data-why="none"]').innerText()).toBe(
      "nothing on record for shop.nope in project shop",
    );
  });
});
