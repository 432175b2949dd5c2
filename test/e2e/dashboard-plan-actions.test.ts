/**
 * Review close, retry, re-run and a run's timeline, in Debian's Chromium against a built `ratchet
 * serve`: each button appears only where the ledger's (or the runs') state machine allows the move;
 * a refusal — a breaker, the revision budget, a wrong token — is shown with its message and changes
 * nothing; a re-run keeps the group and the variables it was started with; the run timeline (the
 * plan timeline's component) draws two overlapping step runs in two lanes, a retry under its step,
 * and ticks a running step.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runStoreOf, SqliteStore } from "../../src/store/index.js";
import { query } from "../helpers/cli.js";
import { type Dash, openDashboard, TOKEN } from "../web/browser.js";

// The browser's globals, for the functions that run inside the page (page.evaluate).
// biome-ignore lint/suspicious/noExplicitAny: page-side values
declare const document: any;

let d: Dash;
const one = <T>(sql: string, ...p: unknown[]) => query<T>(d.ws, sql, ...p)[0];
const planStatus = (id: string) =>
  one<{ status: string }>("SELECT status FROM plans WHERE plan_id = ?", id)?.status;
const stepStatus = (id: string) =>
  one<{ status: string }>("SELECT status FROM steps WHERE step_id = ?", id)?.status;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ok(path: string, body: unknown) {
  const r = await d.post(path, body);
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

async function setToken(t: string) {
  await d.page.fill("#token", t);
  await d.page.dispatchEvent("#token", "change");
}

async function waitRun(runId: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const s = one<{ status: string }>("SELECT status FROM workflow_runs WHERE run_id = ?", runId)?.status;
    if (s && s !== "running") return s;
    await sleep(100);
  }
  throw new Error(`run ${runId} did not finish`);
}

/** A plan of project demo whose one step is done: the roll-up hands it to review. */
async function planInReview(goal: string) {
  const pub = await ok("/api/flows/publish-plan", {
    goal,
    project: "demo",
    steps: [{ title: "Do the work", type: "THINKING" }],
  });
  await ok("/api/flows/start-step", { step_id: pub.marker.step_ids[0] });
  await ok("/api/flows/complete-step", { step_id: pub.marker.step_ids[0], summary: "done" });
  return pub.marker as { plan_id: string; step_ids: string[]; review_step_id: string };
}

beforeAll(async () => {
  d = await openDashboard("dashboard-plan-actions", {
    setup: async (ws) => {
      const r = await ws.run(["project", "add", "demo"]);
      if (r.status !== 0) throw new Error(r.stderr);
    },
  });
  await d.page.goto(`${d.url}/#/plans`);
  await setToken(TOKEN);
}, 120_000);
afterAll(async () => d?.close());

describe("dashboard: review close", () => {
  it("passes a review from the plan page once the ledger allows it; a refusal is shown first", async () => {
    const p = await planInReview("Review me");
    // A sub-step under the review step: passing now would leave open work.
    const extra = (
      await ok("/api/flows/deviate", {
        parent_step_id: p.review_step_id,
        justification: "one more check",
        sub_steps: [{ title: "Check the logs", type: "THINKING" }],
      })
    ).result.sub_step_ids[0] as string;
    await d.page.goto(`${d.url}/#/plans/${p.plan_id}`);
    const box = d.page.locator("[data-review-close]");
    await box.waitFor();
    await box.locator("[data-review-summary]").fill("the fix holds");

    await setToken("wrong-token-wrong-token-0000");
    await box.locator('[data-action="review-pass"]').click();
    await d.page.locator("#status", { hasText: "review pass refused (401)" }).waitFor();
    await setToken(TOKEN);
    await box.locator('[data-action="review-pass"]').click();
    await d.page
      .locator("#status", { hasText: /review pass refused \(409\): .*still has open steps/ })
      .waitFor();
    expect(planStatus(p.plan_id)).toBe("IN_PROGRESS");
    expect(stepStatus(p.review_step_id)).toBe("NEEDS_REVIEW");
    await d.shot("plan-review-close-refused");

    await ok("/api/flows/start-step", { step_id: extra });
    await ok("/api/flows/complete-step", { step_id: extra, summary: "clean" });
    // The verdict typed before those live re-renders is still there.
    await d.page.locator(`[data-step="${extra}"][data-status="COMPLETED"]`).waitFor();
    expect(await box.locator("[data-review-summary]").inputValue()).toBe("the fix holds");
    await box.locator('[data-action="review-pass"]').click();
    await d.page.locator("#status", { hasText: "review closed: plan COMPLETED" }).waitFor();
    expect(planStatus(p.plan_id)).toBe("COMPLETED");
    // The box is gone once the plan is closed (live refresh), and the verdict is in the log.
    await d.page.locator("[data-review-close]").waitFor({ state: "detached" });
    const logs = query<{ text: string }>(
      d.ws,
      "SELECT text FROM step_logs WHERE step_id = ?",
      p.review_step_id,
    );
    expect(logs.map((l) => l.text).join("\n")).toContain("[AGENT-REVIEW PASS] the fix holds");
  });

  it("fails a review; a plan not in review has no close box", async () => {
    const p = await planInReview("Review and fail me");
    await d.page.goto(`${d.url}/#/plans/${p.plan_id}`);
    await d.page.locator('[data-review-close] [data-action="review-fail"]').click();
    await d.page.locator("#status", { hasText: "review closed: plan FAILED" }).waitFor();
    expect(planStatus(p.plan_id)).toBe("FAILED");
    await d.page.locator("[data-review-close]").waitFor({ state: "detached" });

    const open = await ok("/api/flows/publish-plan", { goal: "Not in review", steps: ["a"] });
    await d.page.goto(`${d.url}/#/plans/${open.marker.plan_id}`);
    await d.page.locator(`[data-step="${open.marker.step_ids[0]}"]`).waitFor();
    expect(await d.page.locator("[data-review-close]").count()).toBe(0);
  });
});

describe("dashboard: retry", () => {
  it("retries a failed step (re-opening its plan) until the revision budget is used; then offers none", async () => {
    const pub = await ok("/api/flows/publish-plan", {
      goal: "A flaky plan",
      max_revisions: 1,
      steps: [
        { title: "Flaky part", type: "THINKING" },
        { title: "Solid part", type: "THINKING" },
      ],
    });
    const [flaky, solid] = pub.marker.step_ids as [string, string];
    await ok("/api/flows/start-step", { step_id: solid });
    await ok("/api/flows/complete-step", { step_id: solid, summary: "ok" });
    await ok("/api/flows/start-step", { step_id: flaky });
    await ok("/api/flows/fail-step", { step_id: flaky, reason: "timed out talking to the API" });
    expect(planStatus(pub.marker.plan_id)).toBe("FAILED");

    await d.page.goto(`${d.url}/#/plans/${pub.marker.plan_id}`);
    const retry = d.page.locator(`[data-retry="${flaky}"]`);
    await retry.waitFor();
    // Only the failed step offers a retry.
    expect(await d.page.locator("[data-retry]").count()).toBe(1);
    // A live re-render (the events of the writes above) may replace the button under the scroll.
    await retry
      .evaluate((el) => el.scrollIntoView({ block: "center" }))
      .catch(() => retry.scrollIntoViewIfNeeded());
    await d.shot("plan-retry");
    await retry.click();
    await d.page.locator("#status", { hasText: "retry added:" }).waitFor();
    const kid = one<{ step_id: string; status: string; title: string }>(
      "SELECT step_id, status, title FROM steps WHERE parent_step_id = ?",
      flaky,
    )!;
    expect(kid).toMatchObject({ status: "PENDING", title: "Retry: Flaky part" });
    expect(planStatus(pub.marker.plan_id)).toBe("IN_PROGRESS");
    // While the retry is open, no second retry is offered.
    await d.page.locator(`[data-step="${kid.step_id}"]`).waitFor();
    await retry.waitFor({ state: "detached" });

    await ok("/api/flows/start-step", { step_id: kid.step_id });
    await ok("/api/flows/fail-step", { step_id: kid.step_id, reason: "still flaky" });
    expect(planStatus(pub.marker.plan_id)).toBe("FAILED");
    // The budget (1) is used: the page offers nothing, and a determined caller is refused.
    await d.page.locator(`[data-step="${kid.step_id}"][data-status="FAILED"]`).waitFor();
    expect(await d.page.locator("[data-retry]").count()).toBe(0);
    const forced = await d.post("/api/flows/deviate", {
      parent_step_id: flaky,
      justification: "once more",
      sub_steps: ["again"],
    });
    expect(forced.status).toBe(409);
    expect(forced.body.error.code).toBe("revision_budget_exhausted");
  });
});

describe("dashboard: re-run", () => {
  it("re-runs a failed run with the same variables and group; a wrong token starts nothing", async () => {
    await d.page.goto(`${d.url}/#/scripts/hello`);
    await d.page.locator("[data-start-form]").waitFor();
    await d.page.fill('[data-var="NAMES"]', "Zed");
    await d.page.fill('[data-var="LANGUAGE"]', "xx");
    await d.page.selectOption("[data-group]", "german");
    await d.page.locator('[data-action="start-run"]').click();
    await d.page.waitForURL(/#\/runs\/run-/);
    const first = decodeURIComponent(d.page.url().split("#/runs/")[1]!);
    expect(await waitRun(first)).toBe("failed");
    const rerun = d.page.locator('[data-action="rerun"]');
    await rerun.waitFor({ timeout: 30_000 });

    const count = () => one<{ n: number }>("SELECT COUNT(*) AS n FROM workflow_runs")!.n;
    const before = count();
    await setToken("wrong-token-wrong-token-0000");
    await rerun.click();
    await d.page.locator("#status", { hasText: "re-run refused (401)" }).waitFor();
    expect(count()).toBe(before);

    await setToken(TOKEN);
    await rerun.click();
    await d.page.waitForURL((u) => u.hash.startsWith("#/runs/run-") && !u.hash.endsWith(first));
    const second = decodeURIComponent(d.page.url().split("#/runs/")[1]!);
    expect(await waitRun(second)).toBe("failed");
    const rows = query<{ run_id: string; group_name: string; error: string }>(
      d.ws,
      "SELECT r.run_id, r.group_name, s.error FROM workflow_runs r JOIN workflow_step_runs s ON s.run_id = r.run_id AND s.step_id = 'greet' WHERE r.run_id IN (?, ?)",
      first,
      second,
    );
    expect(rows).toHaveLength(2);
    // The same group, and the same variables: language xx fails the same way.
    for (const r of rows) {
      expect(r.group_name).toBe("german");
      expect(r.error).toContain("unsupported language 'xx'");
    }
    // A running or passed run offers no re-run.
    const passed = (await ok("/api/runs", { workflow: join(d.ws.dir, "hello") })).run_id as string;
    expect(await waitRun(passed)).toBe("passed");
    await d.page.goto(`${d.url}/#/runs/${passed}`);
    await d.page.locator(`h2[data-run-id="${passed}"]`).waitFor();
    expect(await d.page.locator('[data-action="rerun"]').count()).toBe(0);
  });
});

describe("dashboard: run timeline", () => {
  it("draws overlapping step runs in two lanes, a retry under its step, and ticks a running step", async () => {
    // A run recorded through the runs area over its ledger plan, with two step runs that overlap.
    const pub = await ok("/api/flows/publish-plan", {
      goal: "run lanes demo",
      steps: ["fetch-a", "fetch-b", "merge"].map((title) => ({ title, type: "THINKING" })),
    });
    const [la, lb, lc] = pub.marker.step_ids as [string, string, string];
    const store = SqliteStore.open(d.ws.dbPath);
    const runs = runStoreOf(store);
    const runId = "run-lanes-demo";
    try {
      runs.startRun(
        {
          run_id: runId,
          workflow_id: "lanes",
          workflow_path: join(d.ws.dir, "lanes"),
          plan_id: pub.marker.plan_id,
          trigger: "manual",
          group_name: null,
          owner: "test",
        },
        [
          { step_id: "fetch-a", ledger_step_id: la, mode: "learn_code" },
          { step_id: "fetch-b", ledger_step_id: lb, mode: "learn_code" },
          { step_id: "merge", ledger_step_id: lc, mode: "learn_code" },
        ],
      );
      const done = { outcome: "passed" as const, fast_path: true, exit_code: 0, error: null };
      runs.startStep(runId, "fetch-a");
      await sleep(30);
      runs.startStep(runId, "fetch-b");
      await sleep(30);
      runs.finishStep(runId, "fetch-a", { ...done, duration_ms: 60 });
      await sleep(30);
      runs.finishStep(runId, "fetch-b", { ...done, duration_ms: 60 });
      await sleep(30);
      runs.startStep(runId, "merge");
    } finally {
      store.close();
    }
    // merge's ledger step takes a retry (a deviation), which is running too.
    await ok("/api/flows/start-step", { step_id: lc });
    const retry = (
      await ok("/api/flows/deviate", {
        parent_step_id: lc,
        justification: "retry the merge",
        sub_steps: [{ title: "Retry the merge", type: "THINKING" }],
      })
    ).result.sub_step_ids[0] as string;
    await ok("/api/flows/start-step", { step_id: retry });

    await d.page.goto(`${d.url}/#/runs/${runId}`);
    const tl = d.page.locator("[data-timeline]");
    await tl.waitFor();
    const lane = (id: string) => d.page.locator(`[data-bar="${id}"]`).getAttribute("data-lane");
    expect(await lane(la)).not.toBe(await lane(lb));
    expect(await lane(lc)).toBe("0");
    expect(Number(await tl.getAttribute("data-lanes"))).toBe(2);
    const depth = (id: string) =>
      d.page
        .locator(`[data-bar="${id}"]`)
        .evaluate((el) => el.closest(".tl-row")?.getAttribute("data-depth"));
    expect(await depth(lc)).toBe("0");
    expect(await depth(retry)).toBe("1");
    const order = await d.page
      .locator("[data-bar]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-bar")));
    expect(order.indexOf(retry)).toBe(order.indexOf(lc) + 1);
    // The running step's elapsed time ticks with no event; finished ones do not.
    const tick = d.page.locator(`[data-elapsed="${lc}"][data-running]`);
    await tick.waitFor();
    const before = await tick.textContent();
    await d.page.waitForFunction(
      ([id, t]) => document.querySelector(`[data-elapsed="${id}"]`)?.textContent !== t,
      [lc, before] as const,
    );
    expect(await d.page.locator(`[data-elapsed="${la}"][data-running]`).count()).toBe(0);
    await d.shot("run-timeline");
  });
});
