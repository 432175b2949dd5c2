/**
 * Threads through `ratchet serve` (the built CLI, a real HTTP server, the scripted model and a
 * command tool): start a thread over HTTP, see it wait for an approval, approve it over HTTP, and the
 * call runs exactly once; writes without the token are refused with nothing written.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import {
  assertBuilt,
  makeWorkspace,
  query,
  ROOT,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const TOKEN = "serve-threads-test-token-0001";

async function serveWithThreads(): Promise<{ ws: TestWorkspace; url: string; appendFile: string }> {
  const ws = await makeWorkspace("ratchet-serve-threads-");
  cleanups.push(() => ws.remove());
  const model = await startScriptedModel({
    script: {
      turns: [
        { tool_calls: [{ id: "h1", name: "append", arguments: { line: "over http" } }] },
        { text: "Appended after an approval given over HTTP." },
      ],
    },
  });
  cleanups.push(() => model.close());
  const appendFile = join(ws.dir, "appended.txt");
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
      threads: { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    }),
  );
  const serve = startRatchet(["serve", "--port", "0", "--token", TOKEN, "--quiet"], {
    cwd: ws.dir,
    env: {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-000000",
    },
    timeoutMs: 80_000,
  });
  cleanups.push(async () => {
    serve.child.kill("SIGTERM");
    await serve.done;
  });
  await waitFor(() => serve.stdoutSoFar().includes("\n"), "serve to start");
  const { url } = JSON.parse(serve.stdoutSoFar().split("\n")[0] as string) as { url: string };
  return { ws, url, appendFile };
}

const lines = (f: string) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []);
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

describe("threads over ratchet serve", () => {
  it("start over HTTP, wait for the approval, approve over HTTP: the call runs exactly once", async () => {
    const { ws, url, appendFile } = await serveWithThreads();
    const doc = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/api/threads", "/api/threads/{threadId}", "/api/threads/{threadId}/approve"]),
    );

    const refused = await fetch(`${url}/api/threads`, {
      method: "POST",
      body: JSON.stringify({ goal: "append a line" }),
    });
    expect(refused.status).toBe(401);
    expect(((await (await fetch(`${url}/api/threads`)).json()) as { threads: unknown[] }).threads).toEqual(
      [],
    );

    const started = await fetch(`${url}/api/threads`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ goal: "append a line" }),
    });
    expect(started.status).toBe(202);
    const { thread_id: id } = (await started.json()) as { thread_id: string };

    await waitFor(
      () =>
        query<{ state: string }>(ws, "SELECT state FROM threads WHERE thread_id = ?", id)[0]?.state ===
        "waiting",
      "the thread to wait for its approval",
      30_000,
    );
    expect(lines(appendFile)).toEqual([]);
    const shown = (await (await fetch(`${url}/api/threads/${id}`)).json()) as Record<string, unknown>;
    expect(JSON.stringify(shown)).toContain("append");

    const noToken = await fetch(`${url}/api/threads/${id}/approve`, { method: "POST", body: "{}" });
    expect(noToken.status).toBe(401);
    const ghost = await fetch(`${url}/api/threads/th-nope/approve`, {
      method: "POST",
      headers: auth,
      body: "{}",
    });
    expect(ghost.status).toBe(404);

    const approved = await fetch(`${url}/api/threads/${id}/approve`, {
      method: "POST",
      headers: auth,
      body: "{}",
    });
    expect(approved.status).toBeLessThan(300);
    await waitFor(
      () =>
        query<{ state: string }>(ws, "SELECT state FROM threads WHERE thread_id = ?", id)[0]?.state ===
        "done",
      "the thread to finish",
      30_000,
    );
    expect(lines(appendFile)).toEqual(["over http"]);
    const again = await fetch(`${url}/api/threads/${id}/approve`, {
      method: "POST",
      headers: auth,
      body: "{}",
    });
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(lines(appendFile)).toEqual(["over http"]);
  });
});
