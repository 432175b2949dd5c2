/**
 * The dashboard's lists at 1,000 plans, in Debian's Chromium against a built `ratchet serve`: 50 a
 * page with "load more" through the API's cursor to the end, the server's search on goal and step
 * title, filters (status, kind, project, created range), workflow-run plans hidden by default and
 * reachable from their run, run filters; bad filter values refused naming the field.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Dash, openDashboard } from "../web/browser.js";

// The browser's globals, for the functions that run inside the page (page.evaluate).
// biome-ignore lint/suspicious/noExplicitAny: page-side values
declare const document: any;

let d: Dash;
let runPlan: string;
let runId: string;
let completedPlan: string;

const items = () => d.page.locator("#side-list ul.list > li");
/** A fresh page load (a hash change alone keeps the page, and how many pages its list shows). */
const fresh = (hash: string) => d.page.goto(`${d.url}/?load=${Date.now()}${hash}`);

beforeAll(async () => {
  d = await openDashboard("dashboard-lists");
  for (let b = 0; b < 5; b++) {
    const ops = Array.from({ length: 200 }, (_, i) => {
      const n = b * 200 + i;
      return {
        op: "publish-plan",
        goal: `Seeded plan ${String(n).padStart(4, "0")}`,
        steps: [{ title: n === 777 ? "Polish the zebra crossing" : `step of ${n}`, type: "COMMAND" }],
      };
    });
    const r = await d.post("/api/flows/apply", { ops });
    expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(200);
  }
  const done = await d.post("/api/flows/publish-plan", {
    goal: "The one finished plan",
    steps: [{ title: "finish", type: "DOCUMENTATION" }],
  });
  completedPlan = done.body.marker.plan_id;
  const step = done.body.marker.step_ids[0];
  expect((await d.post("/api/flows/start-step", { step_id: step })).status).toBe(200);
  expect((await d.post("/api/flows/complete-step", { step_id: step, summary: "done" })).status).toBe(200);
  const r = await d.ws.run(["run", join(d.ws.dir, "hello"), "--json"]);
  const report = JSON.parse(r.stdout) as { run_id: string; plan_id: string };
  runId = report.run_id;
  runPlan = report.plan_id;
}, 240_000);
afterAll(async () => d?.close());

describe("dashboard lists", () => {
  it("pages through 1,000 plans by the cursor with load more, newest first, none twice", async () => {
    await fresh("#/plans");
    await d.page.locator('[data-action="load-more"]').waitFor();
    expect(await items().count()).toBe(50);
    for (let shown = 50; shown < 1001; shown += 50) {
      await d.page.locator('[data-action="load-more"]').click();
      await d.page.waitForFunction(
        (n) => document.querySelectorAll("#side-list ul.list > li").length >= n,
        Math.min(shown + 50, 1001),
      );
    }
    await d.page.locator("[data-list-end]", { hasText: "1001 shown" }).waitFor();
    const ids = await d.page
      .locator("#side-list ul.list > li a[data-plan]")
      .evaluateAll((as) => as.map((a) => a.getAttribute("data-plan")));
    expect(ids).toHaveLength(1001);
    expect(new Set(ids).size).toBe(1001);
    // The workflow run's plan is not in the default list; the finished plan is the newest.
    expect(ids).not.toContain(runPlan);
    expect(ids[0]).toBe(completedPlan);
  });

  it("searches goal and step title on the server, beyond the first page", async () => {
    await fresh("#/plans");
    await d.page.locator('[data-action="load-more"]').waitFor();
    await d.page.keyboard.press("/");
    await d.page.keyboard.type("zebra");
    await d.page.waitForFunction(() => document.querySelectorAll("#side-list ul.list > li").length === 1);
    expect(await items().first().textContent()).toContain("Seeded plan 0777");
    await d.page.fill("#search", "Seeded plan 0003");
    await items().first().filter({ hasText: "Seeded plan 0003" }).waitFor();
    expect(await items().count()).toBe(1);
    // LIKE's wildcards are plain characters in a search.
    await d.page.fill("#search", "%");
    await d.page.locator("#side-list .empty", { hasText: "No plan matches" }).waitFor();
    await d.page.fill("#search", "");
    await d.page.locator('[data-action="load-more"]').waitFor();
  });

  it("filters by status, kind, project and created range; run plans are reachable from their run", async () => {
    await fresh("#/plans");
    await d.page.locator('[data-action="load-more"]').waitFor();
    await d.page.selectOption('[data-filter="status"]', "COMPLETED");
    await d.page.waitForFunction(() => document.querySelectorAll("#side-list ul.list > li").length === 1);
    expect(await d.page.locator(`[data-plan="${completedPlan}"]`).count()).toBe(1);
    await d.page.selectOption('[data-filter="status"]', "");

    await d.page.selectOption('[data-filter="kind"]', "workflow_run");
    await d.page.locator(`[data-plan="${runPlan}"]`).waitFor();
    expect(await items().count()).toBe(1);
    await d.page.selectOption('[data-filter="kind"]', "");
    await d.page.locator('[data-action="load-more"]').waitFor();
    expect(await d.page.locator(`[data-plan="${runPlan}"]`).count()).toBe(0);
    await d.page.check('[data-filter="all"]');
    await d.page.locator(`[data-plan="${runPlan}"]`).waitFor();
    await d.page.uncheck('[data-filter="all"]');

    await d.page.fill('[data-filter="project"]', "no-such-project");
    await d.page.dispatchEvent('[data-filter="project"]', "change");
    await d.page.locator("#side-list .empty", { hasText: "No plan matches" }).waitFor();
    await d.page.fill('[data-filter="project"]', "");
    await d.page.dispatchEvent('[data-filter="project"]', "change");

    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    await d.page.fill('[data-filter="since"]', tomorrow);
    await d.page.dispatchEvent('[data-filter="since"]', "change");
    await d.page.locator("#side-list .empty", { hasText: "No plan matches" }).waitFor();
    await d.page.fill('[data-filter="since"]', today);
    await d.page.dispatchEvent('[data-filter="since"]', "change");
    await d.page.locator('[data-action="load-more"]').waitFor();
    await d.shot("plans-filtered");

    // The run's page links its plan, which opens though the default list leaves it out.
    await d.page.goto(`${d.url}/#/runs/${runId}`);
    await d.page.locator(`a[href="#/plans/${runPlan}"]`).click();
    await d.page.locator("#main h2").waitFor();
    expect(await d.page.locator("#main .meta").first().textContent()).toContain(runPlan);
  });

  it("filters runs by status, trigger and workflow", async () => {
    await fresh("#/runs");
    await d.page.locator(`[data-run="${runId}"]`).waitFor();
    await d.page.selectOption('[data-filter="trigger"]', "webhook");
    await d.page.locator("#side-list .empty", { hasText: "No run matches" }).waitFor();
    await d.page.selectOption('[data-filter="trigger"]', "manual");
    await d.page.locator(`[data-run="${runId}"]`).waitFor();
    await d.page.selectOption('[data-filter="status"]', "failed");
    await d.page.locator("#side-list .empty", { hasText: "No run matches" }).waitFor();
    await d.page.selectOption('[data-filter="status"]', "passed");
    await d.page.fill('[data-filter="workflow_id"]', "hello");
    await d.page.dispatchEvent('[data-filter="workflow_id"]', "change");
    await d.page.locator(`[data-run="${runId}"]`).waitFor();
  });

  it("refuses bad filter values naming the field", async () => {
    for (const [qs, field] of [
      ["since=yesterday", "since"],
      ["until=2026-13-45", "until"],
      [`q=${"w ".repeat(9)}`, "q"],
      [`q=${"x".repeat(201)}`, "q"],
      ["status=DONE", "status"],
    ] as const) {
      const r = await fetch(`${d.url}/api/plans?${qs}`);
      expect(r.status, qs).toBe(400);
      const body = (await r.json()) as { error: { field?: string; message: string } };
      expect(body.error.field ?? body.error.message, qs).toContain(field);
    }
    const r = await fetch(`${d.url}/api/runs?since=not-a-date`);
    expect(r.status).toBe(400);
  });
});
