/**
 * The "Needs attention" landing page, in Debian's Chromium against a built `ratchet serve` with the
 * scripted model: every section filled by the real thing (a thread asking to run a command tool, a
 * plan handed to review by the ledger, a workflow run that failed, a runner task's artifacts, a step
 * whose lease ran out), counts, live updates without a reload, and each card's action — approve,
 * deny, pass the review, re-run, sweep — as a real HTTP write with the page's token; a wrong token's
 * refusal is shown and changes nothing.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskArtifacts } from "../../src/runner/index.js";
import { type ScriptedModel, startScriptedModel } from "../../src/testing/scripted-model.js";
import { query, ROOT } from "../helpers/cli.js";
import { type Dash, openDashboard, TOKEN } from "../web/browser.js";

let d: Dash;
let model: ScriptedModel;
let appendFile: string;

const lines = () =>
  existsSync(appendFile) ? readFileSync(appendFile, "utf8").split("\n").filter(Boolean) : [];
const one = <T>(sql: string, ...p: unknown[]) => query<T>(d.ws, sql, ...p)[0];
const stateOf = (id: string) =>
  one<{ state: string }>("SELECT state FROM threads WHERE thread_id = ?", id)?.state;

function script(line: string) {
  model.reset({
    turns: [
      { tool_calls: [{ id: `c-${line}`, name: "append", arguments: { line } }] },
      { text: `Finished with ${line}.` },
    ],
  });
}

async function ok(path: string, body: unknown) {
  const r = await d.post(path, body);
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

async function setToken(t: string) {
  await d.page.fill("#token", t);
  await d.page.dispatchEvent("#token", "change");
}

const section = (key: string) => d.page.locator(`[data-section="${key}"]`);
const countOf = (key: string, n: number) =>
  d.page.locator(`[data-section="${key}"][data-count="${n}"]`).waitFor({ timeout: 60_000 });

async function waitRun(runId: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const s = one<{ status: string }>("SELECT status FROM workflow_runs WHERE run_id = ?", runId)?.status;
    if (s && s !== "running") return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${runId} did not finish`);
}

beforeAll(async () => {
  model = await startScriptedModel({ script: { turns: [{ text: "unused" }] } });
  d = await openDashboard("dashboard-attention", {
    env: {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-000000",
    },
    setup: async (ws) => {
      appendFile = join(ws.dir, "appended.txt");
      writeFileSync(
        join(ws.ratchetDir, "config.json"),
        JSON.stringify({
          customTools: {
            append: {
              command: process.execPath,
              args: [join(ROOT, "test/fixtures/threads/append-tool.mjs"), appendFile],
              description: "Appends a line.",
              input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
            },
          },
          threads: {
            policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
          },
        }),
      );
      const r = await ws.run(["project", "add", "demo"]);
      if (r.status !== 0) throw new Error(r.stderr);
    },
  });
}, 120_000);
afterAll(async () => {
  await d?.close();
  await model?.close();
});

describe("dashboard: needs attention", () => {
  let threadId: string;
  let reviewPlan: string;
  let failedRun: string;
  let stuckStep: string;

  it("is the landing page; each section fills live with its count and the call's arguments", async () => {
    await d.page.goto(`${d.url}/`);
    await d.page.locator('[data-view="attention"]').waitFor();
    await d.page.locator(".live.on").waitFor();
    for (const k of ["approvals", "reviews", "failed_runs", "failed_tasks", "stuck_steps"])
      expect(await section(k).getAttribute("data-count"), k).toBe("0");
    expect(await d.page.locator("#main h2").textContent()).toBe("Nothing needs attention");
    await d.page.evaluate("globalThis.noReload = true");

    // A runner task that failed (its artifacts, as the runner writes them).
    const art = new TaskArtifacts(join(d.ws.dir, "runner-out"), "fix-flaky");
    art.reset();
    art.round({ round: 1, score: 0.2, dod_passed: false });
    art.writeJson("result.json", {
      task_id: "fix-flaky",
      status: "failed",
      rounds: 1,
      stop_reason: "max_rounds",
    });
    art.status("failed");
    // A thread whose command tool call waits for approval.
    script("first");
    threadId = (await ok("/api/threads", { goal: "append the first line" })).thread_id;
    // A plan handed to review by the ledger's roll-up.
    const pub = await ok("/api/flows/publish-plan", {
      goal: "Ship the login fix",
      project: "demo",
      steps: [{ title: "Fix it", type: "THINKING" }],
    });
    reviewPlan = pub.marker.plan_id;
    await ok("/api/flows/start-step", { step_id: pub.marker.step_ids[0] });
    await ok("/api/flows/complete-step", { step_id: pub.marker.step_ids[0], summary: "fixed" });
    // A workflow run that fails (an unsupported language), in the group german.
    const run = await ok("/api/runs", {
      workflow: join(d.ws.dir, "hello"),
      vars: { LANGUAGE: "xx" },
      group: "german",
    });
    failedRun = run.run_id;
    expect(await waitRun(failedRun)).toBe("failed");
    // A step whose lease runs out.
    const stuck = await ok("/api/flows/publish-plan", {
      goal: "A plan whose agent went away",
      steps: [{ title: "Wait for the agent", type: "THINKING" }, "then this"],
    });
    stuckStep = stuck.marker.step_ids[0];
    await ok("/api/flows/start-step", { step_id: stuckStep, lease_seconds: 1 });
    await new Promise((r) => setTimeout(r, 1_200));
    // Nothing is written when a lease runs out: the next event (any) re-reads the page.
    await ok("/api/flows/record-metric", {
      name: "probe",
      value: 1,
      plan_id: stuck.marker.plan_id,
      project: "demo",
    });

    for (const k of ["approvals", "reviews", "failed_runs", "failed_tasks", "stuck_steps"])
      await countOf(k, 1);
    expect(await d.page.locator("#attention-count").textContent()).toBe("5");
    expect(await d.page.locator("#main h2").first().textContent()).toBe("Needs attention (5)");

    const card = d.page.locator(`[data-section="approvals"] [data-approval]`);
    expect(await card.locator("[data-call-name]").textContent()).toBe("append");
    const shown = JSON.parse((await card.locator("[data-call-args]").textContent())!);
    // The arguments are the ones the thread's own page reads (the same redaction, none added).
    const detail = (await (await fetch(`${d.url}/api/threads/${threadId}`)).json()) as {
      pending: { args: unknown }[];
    };
    expect(shown).toEqual(detail.pending[0]?.args);
    expect(shown).toEqual({ line: "first" });
    expect(await section("reviews").textContent()).toContain("Ship the login fix");
    expect(await section("failed_runs").locator(`[data-failed-run="${failedRun}"]`).textContent()).toContain(
      "unsupported language",
    );
    expect(await section("failed_tasks").locator('[data-failed-task="fix-flaky"]').count()).toBe(1);
    expect(await section("stuck_steps").locator(`[data-stuck="${stuckStep}"]`).textContent()).toContain(
      "Wait for the agent",
    );
    // The side list sums up the sections.
    expect(await d.page.locator('#side-list [data-jump="approvals"] .count').textContent()).toBe("1");
    expect(await d.page.evaluate("globalThis.noReload")).toBe(true);
    await d.shot("attention");
  });

  it("approves from the landing page (a wrong token is refused first) and denies the next call", async () => {
    const card = () => d.page.locator(`[data-section="approvals"] [data-approval]`);
    await setToken("wrong-token-wrong-token-0000");
    await card().locator('[data-action="approve"]').click();
    await d.page.locator("#status", { hasText: "approve refused (401)" }).waitFor();
    expect(lines()).toEqual([]);
    expect(one<{ state: string }>("SELECT state FROM threads WHERE thread_id = ?", threadId)?.state).toBe(
      "waiting",
    );

    await setToken(TOKEN);
    await card().locator('[data-action="approve"]').click();
    await d.page.locator("#status", { hasText: "approved" }).waitFor();
    await countOf("approvals", 0);
    for (let i = 0; i < 300 && lines().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(lines()).toEqual(["first"]);
    // The thread finishes (its last model turn) before the model gets the next script.
    for (let i = 0; i < 300 && stateOf(threadId) !== "done"; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(stateOf(threadId)).toBe("done");

    script("second");
    const next = (await ok("/api/threads", { goal: "append the second line" })).thread_id;
    await countOf("approvals", 1);
    await card().locator('[data-action="deny"]').click();
    await d.page.locator("#status", { hasText: "denied" }).waitFor();
    await countOf("approvals", 0);
    const decided = one<{ status: string }>(
      "SELECT status FROM thread_approvals WHERE thread_id = ? ORDER BY created_at DESC",
      next,
    );
    expect(decided?.status).toBe("denied");
    expect(lines()).toEqual(["first"]);
  });

  it("passes the review, re-runs the failed run and sweeps the stuck step from their cards", async () => {
    await section("reviews").locator('[data-action="review-pass"]').click();
    await d.page.locator("#status", { hasText: "review closed: plan COMPLETED" }).waitFor();
    await countOf("reviews", 0);
    expect(one<{ status: string }>("SELECT status FROM plans WHERE plan_id = ?", reviewPlan)?.status).toBe(
      "COMPLETED",
    );

    await section("stuck_steps").locator('[data-action="sweep"]').click();
    await d.page.locator("#status", { hasText: "swept" }).waitFor();
    await countOf("stuck_steps", 0);
    expect(one<{ status: string }>("SELECT status FROM steps WHERE step_id = ?", stuckStep)?.status).toBe(
      "FAILED",
    );

    // The run was started over HTTP, not from this page: the re-run keeps its group (german) and
    // uses the workflow's default variables, so it passes, and a later pass clears the failed run.
    await section("failed_runs").locator('[data-action="rerun"]').click();
    await d.page.waitForURL(/#\/runs\/run-/);
    const rerun = decodeURIComponent(d.page.url().split("#/runs/")[1]!);
    expect(rerun).not.toBe(failedRun);
    await d.page.locator(`h2[data-run-id="${rerun}"] [data-status="passed"]`).waitFor({ timeout: 60_000 });
    expect(
      one<{ group_name: string }>("SELECT group_name FROM workflow_runs WHERE run_id = ?", rerun)?.group_name,
    ).toBe("german");
    await d.page.goto(`${d.url}/#/`);
    await countOf("failed_runs", 0);
    // What is left: the runner task (it has no write action; its card opens it).
    expect(await d.page.locator("#attention-count").textContent()).toBe("1");
    await section("failed_tasks").locator('a[href="#/runner/fix-flaky"]').first().click();
    await d.page.waitForURL(/#\/runner\/fix-flaky/);
  });
});
