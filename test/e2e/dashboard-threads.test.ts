/**
 * Threads on the dashboard, in Debian's Chromium against a built `ratchet serve` with the scripted
 * model and a command tool that needs approval: the list and detail follow a thread live; approve,
 * deny, always-approve, inject and cancel from the page, each a real HTTP write with the page's
 * token; a wrong token's refusal is shown and changes nothing.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ScriptedModel, startScriptedModel } from "../../src/testing/scripted-model.js";
import { query, ROOT } from "../helpers/cli.js";
import { type Dash, openDashboard, TOKEN } from "../web/browser.js";

let d: Dash;
let model: ScriptedModel;
let appendFile: string;

const lines = () =>
  existsSync(appendFile) ? readFileSync(appendFile, "utf8").split("\n").filter(Boolean) : [];
const stateOf = (id: string) =>
  query<{ state: string }>(d.ws, "SELECT state FROM threads WHERE thread_id = ?", id)[0]?.state;

/** The model's next two turns: call `append` with `line`, then finish. */
function script(line: string, tool = "append") {
  model.reset({
    turns: [
      { tool_calls: [{ id: `c-${line}`, name: tool, arguments: { line } }] },
      { text: `Finished with ${line}.` },
    ],
  });
}

async function startThread(goal: string): Promise<string> {
  const r = await d.post("/api/threads", { goal });
  expect(r.status).toBe(202);
  return r.body.thread_id as string;
}

async function setToken(t: string) {
  await d.page.fill("#token", t);
  await d.page.dispatchEvent("#token", "change");
}

beforeAll(async () => {
  model = await startScriptedModel({ script: { turns: [{ text: "unused" }] } });
  d = await openDashboard("dashboard-threads", {
    env: {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-000000",
    },
    setup: (ws) => {
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
            note: {
              command: process.execPath,
              args: [join(ROOT, "test/fixtures/threads/append-tool.mjs"), appendFile],
              description: "Notes a line.",
              input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
            },
          },
          threads: {
            policy: {
              default: "allow",
              rules: [
                { action: "append", decision: "require_approval" },
                { action: "note", decision: "require_approval" },
              ],
            },
          },
        }),
      );
    },
  });
}, 120_000);
afterAll(async () => {
  await d?.close();
  await model?.close();
});

describe("dashboard threads", () => {
  it("lists a thread, shows its pending call live, refuses a wrong token, and approves from the page", async () => {
    await d.page.goto(`${d.url}/#/threads`);
    await d.page.locator("#side-list h2", { hasText: "Threads" }).waitFor();
    await d.page.locator(".live.on").waitFor();
    await d.page.evaluate("globalThis.noReload = true");
    script("first");
    const id = await startThread("append the first line");
    // The list and the detail arrive over /events, without a reload.
    await d.page.locator(`[data-thread="${id}"]`).click();
    const approval = d.page.locator("[data-approval]");
    await approval.waitFor({ timeout: 30_000 });
    expect(await approval.locator("pre").textContent()).toContain('"line": "first"');
    expect(await d.page.locator(`[data-thread="${id}"] [data-status="waiting"]`).count()).toBe(1);
    expect(await d.page.locator("[data-budget]").textContent()).toContain("tokens");
    expect(await d.page.locator("[data-checkpoint]").count()).toBe(1);
    await d.shot("thread-waiting");

    await setToken("wrong-token-wrong-token-0000");
    await approval.locator('[data-action="approve"]').click();
    await d.page.locator("#status", { hasText: "approve refused (401)" }).waitFor();
    expect(stateOf(id)).toBe("waiting");
    expect(lines()).toEqual([]);

    await setToken(TOKEN);
    await approval.locator('[data-action="approve"]').click();
    await d.page.locator("#status", { hasText: "approved" }).waitFor();
    await d.page.locator(`h2[data-thread-id="${id}"] [data-status="done"]`).waitFor({ timeout: 30_000 });
    expect(lines()).toEqual(["first"]);
    const call = d.page.locator('[data-call="c-first"]');
    await call.waitFor();
    expect(await call.locator('[data-result="c-first"]').count()).toBe(1);
    expect(await d.page.locator('[data-role="assistant"]', { hasText: "Finished with first." }).count()).toBe(
      1,
    );
    expect(
      await d.page.locator("[data-approval-row] [data-status]").first().getAttribute("data-status"),
    ).toBe("approved");
    expect(await d.page.evaluate("globalThis.noReload")).toBe(true);
    await d.shot("thread-done");
  });

  it("denies a call from the page: the tool never runs", async () => {
    script("second");
    const id = await startThread("append the second line");
    await d.page.goto(`${d.url}/#/threads/${id}`);
    const approval = d.page.locator("[data-approval]");
    await approval.waitFor({ timeout: 30_000 });
    await approval.locator('[data-action="deny"]').click();
    await d.page.locator("#status", { hasText: "denied" }).waitFor();
    await d.page
      .locator(
        `h2[data-thread-id="${id}"] [data-status="done"], h2[data-thread-id="${id}"] [data-status="failed"]`,
      )
      .waitFor({ timeout: 30_000 });
    expect(lines()).toEqual(["first"]);
    expect(
      await d.page.locator("[data-approval-row] [data-status]").first().getAttribute("data-status"),
    ).toBe("denied");
  });

  it("always-approves a call; a second approve of the same call is refused with its message", async () => {
    script("third");
    const id = await startThread("append the third line");
    await d.page.goto(`${d.url}/#/threads/${id}`);
    const approval = d.page.locator("[data-approval]");
    await approval.waitFor({ timeout: 30_000 });
    const approvalId = (await approval.getAttribute("data-approval"))!;
    await approval.locator('[data-action="always-approve"]').click();
    await d.page.locator("#status", { hasText: "always approved" }).waitFor();
    await d.page.locator(`h2[data-thread-id="${id}"] [data-status="done"]`).waitFor({ timeout: 30_000 });
    expect(lines()).toEqual(["first", "third"]);
    expect(await d.page.locator("[data-approval-row]", { hasText: "always" }).count()).toBe(1);
    // A caller that replays the decision gets the refusal, and the tool does not run again.
    const again = await d.post(`/api/threads/${id}/approve`, { approval_id: approvalId });
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(lines()).toEqual(["first", "third"]);
    // Always: the next call of the same action runs without asking.
    script("third-again");
    const next = await startThread("append another line");
    await d.page.goto(`${d.url}/#/threads/${next}`);
    await d.page.locator(`h2[data-thread-id="${next}"] [data-status="done"]`).waitFor({ timeout: 30_000 });
    expect(lines()).toEqual(["first", "third", "third-again"]);
  });

  it("injects a message into a waiting thread and cancels it from the page", async () => {
    script("fourth", "note");
    const id = await startThread("note the fourth line");
    await d.page.goto(`${d.url}/#/threads/${id}`);
    await d.page.locator("[data-approval]").waitFor({ timeout: 30_000 });
    await d.page.locator('[data-action="inject"]').click();
    await d.page.locator("#status", { hasText: "write a message first" }).waitFor();
    await d.page.fill("#inject-text", "please also say hello");
    await d.page.locator('[data-action="inject"]').click();
    await d.page.locator("#status", { hasText: "message queued" }).waitFor();
    const inbox = query<{ n: number }>(
      d.ws,
      "SELECT COUNT(*) AS n FROM thread_inbox WHERE thread_id = ?",
      id,
    )[0]?.n;
    expect(inbox).toBe(1);
    await d.page.locator('[data-action="cancel-thread"]').click();
    await d.page.locator("#status", { hasText: "cancelled" }).waitFor();
    await d.page.locator(`h2[data-thread-id="${id}"] [data-status="failed"]`).waitFor({ timeout: 30_000 });
    expect(stateOf(id)).toBe("failed");
    expect(lines()).toEqual(["first", "third", "third-again"]);
    expect(await d.page.locator('[data-action="cancel-thread"]').count()).toBe(0);
    // Cancelling a finished thread over HTTP is refused, with a message naming it.
    const again = await d.post(`/api/threads/${id}/cancel`, {});
    expect(again.status).toBeGreaterThanOrEqual(400);
  });
});
