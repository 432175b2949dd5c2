/**
 * The dashboard's run actions, in Debian's Chromium against a built `ratchet serve`: start a run
 * with variables and a group from the form (the values reach the script), and cancel a running run
 * from its page (it ends `cancelled`); a wrong token's refusal is shown and nothing starts.
 */
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../helpers/cli.js";
import { type Dash, openDashboard, TOKEN } from "../web/browser.js";

let d: Dash;

beforeAll(async () => {
  d = await openDashboard("dashboard-actions", {
    setup: (ws) => {
      // `slow`: hello whose greet step sleeps first, so a run stays running until cancelled.
      const slow = join(ws.dir, "slow");
      cpSync(join(ws.dir, "hello"), slow, { recursive: true });
      const wf = join(slow, "workflow.yaml");
      writeFileSync(wf, readFileSync(wf, "utf8").replace("id: hello", "id: slow"));
      const main = join(slow, "learnings", "greet", "main.py");
      writeFileSync(main, `import time\ntime.sleep(120)\n${readFileSync(main, "utf8")}`);
    },
  });
}, 120_000);
afterAll(async () => d?.close());

const runs = () =>
  query<{ run_id: string; status: string; group_name: string | null }>(
    d.ws,
    "SELECT run_id, status, group_name FROM workflow_runs",
  );

describe("dashboard actions", () => {
  it("starts a run with variables and a group from the form; a wrong token starts nothing", async () => {
    await d.page.goto(`${d.url}/#/scripts/hello`);
    await d.page.locator("[data-start-form]").waitFor();
    expect(await d.page.locator('[data-var="NAMES"]').getAttribute("placeholder")).toBe("Ada,Grace,Linus");
    await d.page.fill('[data-var="NAMES"]', "Marie,Alan");
    await d.page.selectOption("[data-group]", "french");
    await d.page.fill("#token", "wrong-token-wrong-token-0000");
    await d.page.dispatchEvent("#token", "change");
    const before = runs().length;
    await d.page.locator('[data-action="start-run"]').click();
    await d.page.locator("#status", { hasText: "start refused (401)" }).waitFor();
    expect(runs().length).toBe(before);

    await d.page.fill("#token", TOKEN);
    await d.page.dispatchEvent("#token", "change");
    await d.page.locator('[data-action="start-run"]').click();
    await d.page.waitForURL(/#\/runs\/run-/);
    const runId = decodeURIComponent(d.page.url().split("#/runs/")[1]!);
    await d.page.locator(`h2[data-run-id="${runId}"] [data-status="passed"]`).waitFor({ timeout: 60_000 });
    const row = runs().find((r) => r.run_id === runId)!;
    expect(row.group_name).toBe("french");
    // The variables reached the script: greet wrote French greetings for the two names.
    const found = execFileSync("grep", ["-rl", "--include=greetings.json", "Marie", d.ws.dir], {
      encoding: "utf8",
    })
      .split("\n")
      .filter((f) => f.includes(runId));
    expect(found.length).toBeGreaterThan(0);
    const greetings = readFileSync(found[0]!, "utf8");
    expect(greetings).toContain("Bonjour");
    expect(greetings).toContain("Alan");
    expect(greetings).not.toContain("Ada");
    await d.shot("run-started-with-vars");
  });

  it("cancels a running run from its page: it ends cancelled", async () => {
    const started = await d.post("/api/runs", { workflow: join(d.ws.dir, "slow") });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const runId = started.body.run_id as string;
    await d.page.goto(`${d.url}/#/runs/${runId}`);
    const cancel = d.page.locator('[data-action="cancel-run"]');
    await cancel.waitFor({ timeout: 30_000 });
    await cancel.click();
    await d.page.locator(`h2[data-run-id="${runId}"] [data-status="cancelled"]`).waitFor({ timeout: 60_000 });
    expect(runs().find((r) => r.run_id === runId)?.status).toBe("cancelled");
    expect(await cancel.count()).toBe(0);
    // Cancelling it again over HTTP does not change the outcome.
    await d.post(`/api/runs/${runId}/cancel`, {});
    expect(runs().find((r) => r.run_id === runId)?.status).toBe("cancelled");
  });
});
