/**
 * The timeline of a plan, in Debian's Chromium against a built `ratchet serve`: steps that ran at
 * the same time get separate lanes, one after another share a lane, a sub-step is drawn under its
 * parent, and a running step's elapsed time ticks without any event.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Dash, openDashboard } from "../web/browser.js";

// The browser's globals, for the functions that run inside the page (page.evaluate).
// biome-ignore lint/suspicious/noExplicitAny: page-side values
declare const document: any;

let d: Dash;
beforeAll(async () => {
  d = await openDashboard("dashboard-timeline");
}, 120_000);
afterAll(async () => d?.close());

async function ok(path: string, body: unknown) {
  const r = await d.post(path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe("dashboard timeline", () => {
  it("draws parallel lanes, children under their parent, and ticks a running step", async () => {
    const pub = await ok("/api/flows/publish-plan", {
      goal: "A plan on a timeline",
      steps: [
        { title: "Left", type: "TEST" },
        { title: "Right", type: "TEST" },
        { title: "Later", type: "TEST" },
      ],
    });
    const [left, right, later] = pub.marker.step_ids as [string, string, string];
    await ok("/api/flows/start-step", { step_id: left });
    await ok("/api/flows/start-step", { step_id: right });
    await ok("/api/flows/complete-step", { step_id: left, summary: "ok" });
    await ok("/api/flows/complete-step", { step_id: right, summary: "ok" });
    await ok("/api/flows/start-step", { step_id: later });
    const dev = await ok("/api/flows/deviate", {
      parent_step_id: later,
      justification: "a retry of the flaky part",
      sub_steps: [{ title: "Retry the flaky part", type: "TEST" }],
    });
    const retry = (dev.marker.step_ids ?? dev.marker.sub_step_ids)[0] as string;
    await ok("/api/flows/start-step", { step_id: retry });

    await d.page.goto(`${d.url}/#/plans/${pub.marker.plan_id}`);
    const tl = d.page.locator("[data-timeline]");
    await tl.waitFor();
    const lane = (id: string) => d.page.locator(`[data-bar="${id}"]`).getAttribute("data-lane");
    expect(await lane(left)).not.toBe(await lane(right));
    // Later started after both ended: it reuses the first lane.
    expect(await lane(later)).toBe("0");
    expect(Number(await tl.getAttribute("data-lanes"))).toBe(2);
    // Bars are placed left to right in start order.
    const x = (id: string) =>
      d.page.locator(`[data-bar="${id}"]`).evaluate((el) => el.getBoundingClientRect().left);
    expect(await x(later)).toBeGreaterThanOrEqual(await x(right));

    const tick = d.page.locator(`[data-elapsed="${later}"][data-running]`);
    await tick.waitFor();
    const first = await tick.textContent();
    await d.page.waitForFunction(
      ([id, t]) => document.querySelector(`[data-elapsed="${id}"]`)?.textContent !== t,
      [later, first] as const,
    );
    // The retry is drawn under its parent, indented.
    const depth = (id: string) =>
      d.page
        .locator(`[data-bar="${id}"]`)
        .evaluate((el) => el.closest(".tl-row")?.getAttribute("data-depth"));
    expect(await depth(later)).toBe("0");
    expect(await depth(retry)).toBe("1");
    const rows = await d.page
      .locator("[data-bar]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-bar")));
    expect(rows.indexOf(retry)).toBe(rows.indexOf(later) + 1);
    // A finished step does not tick.
    expect(await d.page.locator(`[data-elapsed="${left}"][data-running]`).count()).toBe(0);
    await d.shot("plan-timeline");
  });
});
