/**
 * The original engine's orchestrator scripts, saved unmodified with `ratchet orchestrator save`
 * from `<repo>/../shared/specs/reference/ironclaw/`, through the built CLI: a tool call that needs
 * an approval, a message injected with `ratchet thread inject` while the thread waits, a `kill -9`
 * of the waiting process, the approval given from another process — the call runs exactly once
 * and the injected message reaches the model. Then the same injection over `ratchet serve`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import type { ScriptInput } from "../../src/testing/scripted-model-script.js";
import {
  assertBuilt,
  makeWorkspace,
  query,
  ROOT,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000 });
beforeAll(() => assertBuilt());

const REFERENCE = join(ROOT, "..", "shared", "specs", "reference", "ironclaw");
const TOKEN = "threads-reference-token-0001";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const TURNS: ScriptInput = {
  turns: [
    { tool_calls: [{ id: "k1", name: "append", arguments: { line: "exactly once" } }] },
    { match: { contains: "also say thanks" }, text: "Appended, and thanks." },
  ],
};

async function setup(
  scriptName: string,
  turns: ScriptInput = TURNS,
): Promise<{
  ws: TestWorkspace;
  env: Record<string, string>;
  appendFile: string;
  requests: () => unknown[];
}> {
  const ws = await makeWorkspace("ratchet-threads-ref-");
  cleanups.push(() => ws.remove());
  const model = await startScriptedModel({ script: turns });
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
  const env = {
    RATCHET_MODEL: "openai-compatible:scripted",
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: "sk-test-000000",
  };
  const saved = await ws.run(["orchestrator", "save", join(REFERENCE, scriptName)], { env });
  expect(saved.stderr).toBe("");
  expect(saved.status).toBe(0);
  expect(saved.marker).toMatchObject({ ok: true, version: 1 });
  return { ws, env, appendFile, requests: () => model.requests().map((r) => r.body) };
}

const lines = (f: string) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []);
const state = (ws: TestWorkspace) =>
  query<{ thread_id: string; state: string }>(ws, "SELECT * FROM threads")[0];

describe.each(["default.py", "default-7f87d17.py"])("reference orchestrator %s through the CLI", (name) => {
  it("inject while waiting, kill -9, approve from another process: the call runs once, the message reaches the model", async () => {
    const { ws, env, appendFile, requests } = await setup(name);
    const waiting = startRatchet(["thread", "start", "append a line"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (waiting.child.exitCode === null && waiting.child.signalCode === null) waiting.child.kill("SIGKILL");
    });
    await waitFor(
      () =>
        existsSync(ws.dbPath) &&
        state(ws)?.state === "waiting" &&
        waiting.stdoutSoFar().includes("approval needed"),
      "the thread to wait for approval",
    );
    const id = state(ws)!.thread_id;
    const show = await ws.run(["thread", "show", id], { env });
    expect(show.stdout).toContain("waiting for approval");
    expect(show.stdout).toContain('append({"line":"exactly once"}) call k1');
    expect(show.stdout).toMatch(/orchestrator v1 ran: the highest version saved \(by a person\)/);

    const inject = await ws.run(["thread", "inject", id, "also say thanks", "--json"], { env });
    expect(inject.status).toBe(0);
    expect(inject.marker).toMatchObject({ ok: true, thread_id: id, state: "waiting" });
    waiting.child.kill("SIGKILL");
    expect((await waiting.done).signal).toBe("SIGKILL");
    expect(lines(appendFile)).toEqual([]);

    const approve = await ws.run(["thread", "approve", id, "--json"], { env });
    expect(approve.stderr).toBe("");
    expect(approve.marker).toMatchObject({
      ok: true,
      outcome: "completed",
      state: "done",
      final_result: "Appended, and thanks.",
    });
    expect(lines(appendFile)).toEqual(["exactly once"]);
    expect(
      query(ws, "SELECT call_id, COUNT(*) AS n FROM thread_messages WHERE role = 'tool' GROUP BY call_id"),
    ).toEqual([{ call_id: "k1", n: 1 }]);
    const last = requests().at(-1) as { messages: { content: string | null }[] };
    expect(last.messages.map((m) => m.content)).toContain("also say thanks");
    const shown = await ws.run(["thread", "show", id, "--json"], { env });
    expect(JSON.parse(shown.stdout)).toMatchObject({
      outcome: { outcome: "completed", response: "Appended, and thanks." },
      orchestrator: { version: 1, why: "the highest version saved (by a person)" },
      pending: [],
    });
  });
});

describe("default.py: a code step's gated call (pending_gate) through the CLI", () => {
  it("waits with the call's arguments in `thread show`, kill -9, approve from another process: the call runs once, its result reaches the model", async () => {
    const { ws, env, appendFile, requests } = await setup("default.py", {
      turns: [
        { text: '```repl\nr = append(line="from code")\nprint("after", r)\n```' },
        { match: { contains: '[append] {"appended":"from code","lines":1}' }, text: "Appended from code." },
      ],
    });
    const waiting = startRatchet(["thread", "start", "append a line from code"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (waiting.child.exitCode === null && waiting.child.signalCode === null) waiting.child.kill("SIGKILL");
    });
    await waitFor(
      () =>
        existsSync(ws.dbPath) &&
        state(ws)?.state === "waiting" &&
        waiting.stdoutSoFar().includes("approval needed"),
      "the thread to wait for the code step's gate",
    );
    const id = state(ws)!.thread_id;
    const show = await ws.run(["thread", "show", id], { env });
    expect(show.stdout).toContain("waiting for approval");
    expect(show.stdout).toMatch(/append\(\{"line":"from code"\}\) call code-\d+-1/);
    waiting.child.kill("SIGKILL");
    expect((await waiting.done).signal).toBe("SIGKILL");
    expect(lines(appendFile)).toEqual([]);

    const approve = await ws.run(["thread", "approve", id, "--json"], { env });
    expect(approve.stderr).toBe("");
    expect(approve.marker).toMatchObject({
      ok: true,
      outcome: "completed",
      final_result: "Appended from code.",
    });
    expect(lines(appendFile)).toEqual(["from code"]);
    expect(query(ws, "SELECT action, status, COUNT(*) AS n FROM thread_actions GROUP BY call_id")).toEqual([
      { action: "append", status: "succeeded", n: 1 },
    ]);
    const last = requests().at(-1) as { messages: { content: string | null }[] };
    expect(last.messages.map((m) => m.content)).toContain('[append] {"appended":"from code","lines":1}');
    // Approving again: nothing left to decide, nothing runs again.
    const again = await ws.run(["thread", "approve", id, "--json"], { env });
    expect(again.status).not.toBe(0);
    expect(lines(appendFile)).toEqual(["from code"]);
  });

  it("kill -9 while waiting, deny from another process: the tool never runs, the denial reaches the model", async () => {
    const { ws, env, appendFile } = await setup("default.py", {
      turns: [
        { text: '```repl\nr = append(line="never")\n```' },
        {
          match: { contains: "[append ERROR] action append was denied" },
          text: "Denied, so nothing appended.",
        },
      ],
    });
    const waiting = startRatchet(["thread", "start", "append a line from code"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (waiting.child.exitCode === null && waiting.child.signalCode === null) waiting.child.kill("SIGKILL");
    });
    await waitFor(
      () =>
        existsSync(ws.dbPath) &&
        state(ws)?.state === "waiting" &&
        waiting.stdoutSoFar().includes("approval needed"),
      "the thread to wait for the code step's gate",
    );
    const id = state(ws)!.thread_id;
    waiting.child.kill("SIGKILL");
    await waiting.done;
    const deny = await ws.run(["thread", "deny", id, "--json"], { env });
    expect(deny.stderr).toBe("");
    expect(deny.marker).toMatchObject({
      ok: true,
      outcome: "completed",
      final_result: "Denied, so nothing appended.",
    });
    expect(lines(appendFile)).toEqual([]);
  });
});

describe("one gate, two deciders", () => {
  it("two `thread approve` processes at once on one gate: exactly one succeeds, the call runs once", async () => {
    const { ws, env, appendFile } = await setup("default.py");
    const waiting = startRatchet(["thread", "start", "append a line", "--json"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (waiting.child.exitCode === null && waiting.child.signalCode === null) waiting.child.kill("SIGKILL");
    });
    await waitFor(() => existsSync(ws.dbPath) && state(ws)?.state === "waiting", "the thread to wait");
    const id = state(ws)!.thread_id;
    expect((await ws.run(["thread", "inject", id, "also say thanks"], { env })).status).toBe(0);
    const deciders = [0, 1].map(() =>
      startRatchet(["thread", "approve", id, "--no-resume", "--json"], { cwd: ws.dir, env }),
    );
    const results = await Promise.all(deciders.map((d) => d.done));
    expect(results.map((r) => r.status).sort()).toEqual([0, 4]);
    expect(results.find((r) => r.status === 4)!.stderr).toMatch(/already approved|no pending approval/);
    const end = await waiting.done;
    expect(end.status).toBe(0);
    expect(lines(appendFile)).toEqual(["exactly once"]);
  });
});

describe("inject over HTTP", () => {
  it("POST /api/threads/:id/inject reaches a waiting thread run by the original's script", async () => {
    const { ws, env, appendFile, requests } = await setup("default.py");
    const serve = startRatchet(["serve", "--port", "0", "--token", TOKEN, "--quiet"], {
      cwd: ws.dir,
      env,
      timeoutMs: 100_000,
    });
    cleanups.push(async () => {
      serve.child.kill("SIGTERM");
      await serve.done;
    });
    await waitFor(() => serve.stdoutSoFar().includes("\n"), "serve to start");
    const { url } = JSON.parse(serve.stdoutSoFar().split("\n")[0] as string) as { url: string };
    const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const started = await fetch(`${url}/api/threads`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ goal: "append a line" }),
    });
    const { thread_id: id } = (await started.json()) as { thread_id: string };
    await waitFor(() => state(ws)?.state === "waiting", "the thread to wait", 30_000);
    const bad = await fetch(`${url}/api/threads/${id}/inject`, { method: "POST", headers: auth, body: "{}" });
    expect(bad.status).toBe(400);
    const injected = await fetch(`${url}/api/threads/${id}/inject`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ message: "also say thanks" }),
    });
    expect(injected.status).toBe(202);
    const approved = await fetch(`${url}/api/threads/${id}/approve`, {
      method: "POST",
      headers: auth,
      body: "{}",
    });
    expect(approved.status).toBe(200);
    await waitFor(() => state(ws)?.state === "done", "the thread to finish", 30_000);
    expect(lines(appendFile)).toEqual(["exactly once"]);
    const last = requests().at(-1) as { messages: { content: string | null }[] };
    expect(last.messages.map((m) => m.content)).toContain("also say thanks");
  });
});
