/**
 * The dashboard's fixes (issue 18), in Debian's Chromium against a built `ratchet serve`: a skipped
 * step is not "ran as model", failures are red, an unknown route shows a not-found view, the
 * runner's detail column wraps, the log panel follows new lines live, a detail chosen far down a
 * long list is on screen, the favicon, 390 px wide, deep links to a step and its log, dark mode,
 * and the keys j/k and /.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskArtifacts } from "../../src/runner/index.js";
import { type Dash, openDashboard } from "../web/browser.js";

// The browser's globals, for the functions that run inside the page (page.evaluate): declared
// here only, so the Node test code around them keeps Node's types.
// biome-ignore lint/suspicious/noExplicitAny: page-side values, read field by field
type Page = any;
declare const document: Page;
declare const location: Page;
declare const window: Page;
declare function getComputedStyle(el: Page): Page;

let d: Dash;

beforeAll(async () => {
  d = await openDashboard("dashboard-fixes");
}, 120_000);
afterAll(async () => d?.close());

async function publish(goal: string, titles: string[], type = "COMMAND") {
  const r = await d.post("/api/flows/publish-plan", {
    goal,
    steps: titles.map((title) => ({ title, type })),
  });
  expect(r.status).toBe(200);
  return r.body.marker as { plan_id: string; step_ids: string[] };
}

const noHorizontalScroll = () =>
  d.page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

describe("dashboard fixes", () => {
  it("shows a skipped step as skipped, not as ran-as-model, and its failed dependency in red", async () => {
    // language=xx breaks greet's validation pattern; summarise depends on greet and is skipped.
    const r = await d.ws.run(["run", join(d.ws.dir, "hello"), "--var", "language=xx", "--json"]);
    const report = JSON.parse(r.stdout) as { run_id: string };
    await d.page.goto(`${d.url}/#/runs/${report.run_id}`);
    const summarise = d.page.locator('[data-step-run="summarise"]');
    await summarise.waitFor();
    expect(await summarise.locator('[data-status="skipped"]').count()).toBe(1);
    expect(await summarise.locator('[data-ran-as="not-run"]').textContent()).toBe("skipped");
    expect(await summarise.locator('[data-ran-as="model"]').count()).toBe(0);
    const greetOutcome = d.page.locator('[data-step-run="greet"] .badge');
    expect(await greetOutcome.getAttribute("data-tone")).toBe("bad");
    // Red, not the neutral grey of an unknown status.
    const color = await greetOutcome.evaluate((el) => getComputedStyle(el).color);
    expect(color).toBe("rgb(179, 38, 30)");
    expect(await greetOutcome.textContent()).toMatch(/^✕ /);
    await d.shot("run-failed-and-skipped");
  });

  it("shows a not-found view for an unknown route instead of keeping the old view", async () => {
    await d.page.goto(`${d.url}/#/runs`);
    await d.page.locator("#side-list h2", { hasText: "Workflow runs" }).waitFor();
    for (const bad of ["#/nonsense", "#/plans/x/y/z/w", "#/runs/a/b", "#/why/only-project"]) {
      await d.page.evaluate((h) => {
        location.hash = h;
      }, bad);
      await d.page.locator('[data-view="not-found"]').waitFor();
      expect(await d.page.locator("#side-list h2", { hasText: "Workflow runs" }).count()).toBe(0);
      expect(await d.page.locator("#main").textContent()).toContain(bad);
      await d.page.evaluate(() => {
        location.hash = "#/runs";
      });
      await d.page.locator("#side-list h2", { hasText: "Workflow runs" }).waitFor();
    }
  });

  it("wraps the runner's detail column inside the page", async () => {
    const art = new TaskArtifacts(join(d.ws.dir, "runner-out"), "long-round");
    art.reset();
    art.round({ round: 1, score: 0.5, dod_passed: false, note: "x".repeat(600), path: "/a/b".repeat(80) });
    art.status("failed");
    await d.page.goto(`${d.url}/#/runner/long-round`);
    await d.page.locator("td.wrap").waitFor();
    expect(await noHorizontalScroll()).toBe(true);
    const mainFits = await d.page.evaluate(() => {
      const m = document.getElementById("main")!;
      return m.scrollWidth <= m.clientWidth + 1 && m.getBoundingClientRect().right <= window.innerWidth;
    });
    expect(mainFits).toBe(true);
  });

  it("deep-links a step and its log, and the log panel shows new lines live", async () => {
    const p = await publish("Watch a log grow", ["Long job", "After"], "TEST");
    const step = p.step_ids[0]!;
    const started = await d.post("/api/flows/start-step", { step_id: step });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect((await d.post("/api/flows/append-log", { step_id: step, text: "line one" })).status).toBe(200);
    // A fresh page on the deep link: the step is highlighted and its log open.
    await d.page.goto(`${d.url}/#/plans/${p.plan_id}/steps/${step}/log`);
    await d.page.locator(`[data-step="${step}"].selected`).waitFor();
    const log = d.page.locator("#log");
    await log.locator("pre", { hasText: "line one" }).waitFor();
    await d.page.evaluate("globalThis.noReload = true");
    expect((await d.post("/api/flows/append-log", { step_id: step, text: "line two" })).status).toBe(200);
    await log.locator("pre", { hasText: "line two" }).waitFor({ timeout: 15_000 });
    expect((await d.post("/api/flows/complete-step", { step_id: step, summary: "done" })).status).toBe(200);
    await log.locator('.panel-head [data-status="COMPLETED"]').waitFor({ timeout: 15_000 });
    expect(await d.page.evaluate("globalThis.noReload")).toBe(true);
    await d.shot("plan-step-log-deep-link");
    // Closing the panel goes to the step's own link; the step stays selected.
    await log.locator("[data-close-log]").click();
    await d.page.waitForURL(new RegExp(`/steps/${step}$`));
    await log.waitFor({ state: "hidden" });
    expect(await d.page.locator(`[data-step="${step}"].selected`).count()).toBe(1);
    // A log link of another step is a deep link too.
    await d.page.locator(`[data-log="${p.step_ids[1]}"]`).click();
    await d.page.waitForURL(new RegExp(`/steps/${p.step_ids[1]}/log$`));
    await log.locator(".empty", { hasText: "No log lines" }).waitFor();
  });

  it("draws the detail on screen when chosen far down a long list; j/k move and / searches", async () => {
    for (let i = 0; i < 60; i++)
      await publish(`Bulk plan number ${String(i).padStart(2, "0")}`, ["only step"]);
    await d.page.goto(`${d.url}/#/plans`);
    const last = d.page.locator("#side-list ul.list > li").last();
    await d.page
      .locator("#side-list ul.list > li")
      .first()
      .filter({ hasText: "Bulk plan number 59" })
      .waitFor();
    await last.locator("a").click(); // scrolls the list to its end first
    await d.page.locator("#side-list li.selected").waitFor();
    await d.page.locator("#main h2").waitFor();
    const top = await d.page.evaluate(() => document.querySelector("#main h2")!.getBoundingClientRect().top);
    expect(top).toBeGreaterThanOrEqual(0);
    expect(top).toBeLessThan(900);

    // k moves up from the selected item, j back down.
    const selectedHref = () => d.page.locator("#side-list li.selected a").first().getAttribute("href");
    const before = await selectedHref();
    await d.page.keyboard.press("k");
    await d.page.waitForFunction((h) => location.hash !== h, before);
    const up = (await d.page.evaluate("location.hash")) as string;
    expect(up).not.toBe(before);
    // The list redraws with the new item selected: the one just above the old one.
    await d.page.locator(`#side-list li.selected a[href="${up}"]`).waitFor();
    const order = await d.page
      .locator("#side-list ul.list > li > a")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    expect(order.indexOf(up)).toBe(order.indexOf(before) - 1);
    await d.page.keyboard.press("j");
    await d.page.waitForFunction((h) => location.hash === h, before);
    await d.page.locator(`#side-list li.selected a[href="${before}"]`).waitFor();

    // / focuses the search box (the key is not typed into it); typing filters the list.
    await d.page.keyboard.press("/");
    expect(await d.page.evaluate(() => document.activeElement?.id)).toBe("search");
    expect(await d.page.inputValue("#search")).toBe("");
    await d.page.keyboard.type("number 42");
    const visible = d.page.locator("#side-list ul.list > li:visible");
    await d.page.waitForFunction(
      () => document.querySelectorAll("#side-list ul.list > li:not([hidden])").length === 1,
    );
    expect(await visible.textContent()).toContain("Bulk plan number 42");
    // Keys typed in the box are text, not navigation.
    await d.page.keyboard.press("Escape");
    await d.page.fill("#search", "");
    await d.page.dispatchEvent("#search", "input");
  });

  it("has a favicon, works at 390 px wide, and follows prefers-color-scheme", async () => {
    const icon = await fetch(`${d.url}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toContain("image/svg+xml");
    expect(await icon.text()).toContain("<svg");
    const ico = await fetch(`${d.url}/favicon.ico`, { redirect: "manual" });
    expect(ico.status).toBe(301);
    expect(ico.headers.get("location")).toBe("/favicon.svg");
    await d.page.goto(`${d.url}/#/plans`);
    expect(await d.page.locator('link[rel="icon"]').getAttribute("href")).toBe("/favicon.svg");

    const p = await publish("A plan read on a phone", ["first", "second"]);
    await d.page.setViewportSize({ width: 390, height: 844 });
    await d.page.goto(`${d.url}/#/plans/${p.plan_id}`);
    await d.page.locator(`[data-step="${p.step_ids[1]}"]`).waitFor();
    expect(await noHorizontalScroll()).toBe(true);
    const widths = await d.page.evaluate(() =>
      ["side", "main"].map((id) => document.getElementById(id)!.getBoundingClientRect().width),
    );
    for (const w of widths) expect(w).toBeLessThanOrEqual(390);
    await d.shot("plan-390px");
    const r = await d.ws.run(["run", join(d.ws.dir, "hello"), "--json"]);
    await d.page.goto(`${d.url}/#/runs/${(JSON.parse(r.stdout) as { run_id: string }).run_id}`);
    await d.page.locator('[data-step-run="summarise"]').waitFor();
    expect(await noHorizontalScroll()).toBe(true);
    await d.page.setViewportSize({ width: 1400, height: 900 });

    const bg = () =>
      d.page.evaluate(() => getComputedStyle(document.getElementById("main")!).backgroundColor);
    await d.page.emulateMedia({ colorScheme: "light" });
    expect(await bg()).toBe("rgb(255, 255, 255)");
    await d.page.emulateMedia({ colorScheme: "dark" });
    expect(await bg()).toBe("rgb(29, 29, 27)");
    const fg = await d.page.evaluate(() => getComputedStyle(document.body).color);
    expect(fg).toBe("rgb(232, 232, 227)");
    await d.shot("run-dark");
    await d.page.emulateMedia({ colorScheme: "light" });
  });
});
