/**
 * The dashboard in Debian's Chromium (playwright-core, no downloaded browser), served by the built
 * `ratchet serve`: a plan tree with a parallel branch, a step changing state live while a CLI
 * `step run` executes (no reload), a log opened from the tree, a workflow run's table, a learned
 * script's diff, and a runner task. Screenshots go to test-artifacts/dashboard/.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskArtifacts } from "../../src/runner/index.js";
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
const TOKEN = "dashboard-test-token-0123456789";

let ws: TestWorkspace;
let server: RunningCli;
let url: string;
let context: BrowserContext;
let page: Page;
let profile: string;

async function shot(name: string) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function flow(args: string[], input: unknown) {
  const r = await ws.run([...args, "-"], { input: JSON.stringify(input) });
  if (r.status !== 0) throw new Error(`ratchet ${args.join(" ")}: ${r.stderr}${r.stdout}`);
  return r.marker as { plan_id: string; step_ids: string[] };
}

beforeAll(async () => {
  assertBuilt();
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/ensure-system-deps.sh (npm test does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  ws = await makeWorkspace("ratchet-dash-");
  cpSync(join(ROOT, "examples", "workflows", "hello"), join(ws.dir, "hello"), { recursive: true });
  const runnerDir = join(ws.dir, "runner-out");
  server = startRatchet(
    [
      "serve",
      "--port",
      "0",
      "--token",
      TOKEN,
      "--quiet",
      "--runner-dir",
      runnerDir,
      "--workflow",
      join(ws.dir, "hello"),
    ],
    { cwd: ws.dir, timeoutMs: 300_000 },
  );
  const deadline = Date.now() + 30_000;
  while (!server.stdoutSoFar().includes("\n")) {
    if (Date.now() > deadline) throw new Error(`serve did not start: ${server.stderrSoFar()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  url = JSON.parse(server.stdoutSoFar().split("\n")[0]!).url;
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

describe("dashboard", () => {
  it("shows a plan tree with a parallel branch, a step changing state live, and its log", async () => {
    const pub = await flow(["plan", "publish"], {
      goal: "Ship the release notes",
      steps: [
        { title: "Draft notes", type: "DOCUMENTATION" },
        { title: "Check links", type: "TEST" },
        { title: "Build site", type: "COMMAND" },
      ],
    });
    const [draft, links, build] = pub.step_ids as string[];
    // Draft and links run at the same time: their run times overlap.
    await flow(["step", "start"], { step_id: draft });
    await flow(["step", "start"], { step_id: links });
    await flow(["step", "complete"], { step_id: draft, summary: "notes drafted" });
    await flow(["step", "complete"], { step_id: links, summary: "all links answer" });

    await page.goto(`${url}/#/plans/${pub.plan_id}`);
    await page.locator(`[data-step="${build}"][data-status="PENDING"]`).waitFor();
    expect(await page.locator(".row.parallel").count()).toBe(1);
    expect(await page.locator(`.row.parallel [data-step="${draft}"]`).count()).toBe(1);
    expect(await page.locator(`.row.parallel [data-step="${links}"]`).count()).toBe(1);
    await page.locator(".live.on").waitFor();
    // A flag on the page survives only if the page is never reloaded.
    await page.evaluate("globalThis.noReload = true");

    const run = ws.run(["step", "run", "-"], {
      input: JSON.stringify({
        step_id: build,
        type: "COMMAND",
        command: "echo building; sleep 2; echo site built",
      }),
    });
    await page.locator(`[data-step="${build}"][data-status="IN_PROGRESS"]`).waitFor({ timeout: 15_000 });
    await shot("plan-live-in-progress");
    const done = await run;
    expect(done.status).toBe(0);
    await page.locator(`[data-step="${build}"][data-status="COMPLETED"]`).waitFor({ timeout: 15_000 });
    expect(await page.evaluate("globalThis.noReload")).toBe(true);

    await page.locator(`[data-log="${build}"]`).click();
    const log = page.locator(`pre[data-log-of="${build}"]`).first();
    await log.waitFor();
    expect(await log.textContent()).toContain("site built");
    await shot("plan-tree-and-log");
  });

  it("shows a workflow run with modes, fast path and tokens, and a learned script's diff", async () => {
    const r = await ws.run(["run", join(ws.dir, "hello"), "--json"]);
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout) as { run_id: string };
    const diffs = join(ws.dir, "hello", "learnings", "greet", "diffs");
    mkdirSync(diffs, { recursive: true });
    writeFileSync(
      join(diffs, "v1-to-v2.diff"),
      "--- a/main.py\n+++ b/main.py\n@@ -1,3 +1,3 @@\n import json\n-GREETING = 'Hello'\n+GREETING = 'Hello there'\n print(GREETING)\n",
    );
    await page.goto(`${url}/#/runs/${report.run_id}`);
    await page.locator('[data-step-run="summarise"]').waitFor();
    expect(await page.locator('[data-step-run="greet"] .tag.fast').count()).toBe(1);
    await shot("run-steps");

    await page.goto(`${url}/#/scripts/hello/greet`);
    await page.locator('[data-diff="v1-to-v2.diff"]').click();
    const added = page.locator("pre.diff .diff-add");
    await added.first().waitFor();
    expect(await added.first().textContent()).toContain("Hello there");
    expect(await page.locator(".streak span.ok").count()).toBeGreaterThanOrEqual(1);
    await shot("script-diff");
  });

  it("starts a run with the token from the page and follows it live; a wrong token is refused", async () => {
    // A full load, not a same-document hash change: a late `hashchange` clears the status line,
    // and under load it could land after the refusal was written there.
    await page.goto("about:blank");
    await page.goto(`${url}/#/scripts/hello&token=wrong-token-wrong-token`);
    await page.locator('[data-action="start-run"]').click();
    await page.locator("#status", { hasText: "401" }).waitFor();
    await page.fill("#token", TOKEN);
    await page.dispatchEvent("#token", "change");
    await page.locator('[data-action="start-run"]').click();
    await page.waitForURL(/#\/runs\/run-/);
    await page.locator('[data-step-run="summarise"] [data-status="passed"]').waitFor({ timeout: 30_000 });
    expect(await page.evaluate("sessionStorage.getItem('ratchet.token')")).toBe(TOKEN);
    expect(page.url()).not.toContain("token=");
  });

  it("shows a runner task's rounds, DoD results and patch", async () => {
    const art = new TaskArtifacts(join(ws.dir, "runner-out"), "fix-calc");
    art.reset();
    art.event("dod_run", { label: "before change", passed: false, exit_code: 1, timed_out: false });
    art.round({ round: 1, score: 0.25, dod_passed: false });
    art.event("dod_run", { label: "round 1", passed: false, exit_code: 1, timed_out: false });
    art.round({ round: 2, score: 1, dod_passed: true });
    art.event("dod_run", { label: "round 2", passed: true, exit_code: 0, timed_out: false });
    art.writeText(
      "patch",
      "--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-echo $(($1 - $2))\n+echo $(($1 + $2))\n",
    );
    art.writeJson("result.json", {
      task_id: "fix-calc",
      status: "passed",
      rounds: 2,
      best_score: 1,
      stop_reason: "dod_passed",
      dod: { passed: true, exit_code: 0, output_tail: "3 passed" },
    });
    art.status("passed");
    await page.goto(`${url}/#/runner/fix-calc`);
    await page.locator("pre.diff .diff-add").first().waitFor();
    expect(await page.locator("table tr").count()).toBe(3);
    await shot("runner-task");
  });
});
