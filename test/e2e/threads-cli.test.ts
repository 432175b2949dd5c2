/**
 * `ratchet thread …` through the built CLI with the scripted model, the MCP fixture server and a
 * command tool from the workspace config — including a `kill -9` of the process that waits for an
 * approval, and of one in the middle of a model call.
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

vi.setConfig({ testTimeout: 90_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  script: ScriptInput,
): Promise<{ ws: TestWorkspace; env: Record<string, string>; appendFile: string }> {
  const ws = await makeWorkspace("ratchet-threads-");
  cleanups.push(() => ws.remove());
  const model = await startScriptedModel({ script });
  cleanups.push(() => model.close());
  const appendFile = join(ws.dir, "appended.txt");
  writeFileSync(
    join(ws.ratchetDir, "config.json"),
    JSON.stringify({
      mcpServers: {
        echo: { command: process.execPath, args: [join(ROOT, "test/fixtures/mcp/echo-server.mjs")] },
      },
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
  return { ws, env, appendFile };
}

const lines = (f: string) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []);
const threadRow = (ws: TestWorkspace) =>
  query<{ thread_id: string; state: string; driver: string | null }>(ws, "SELECT * FROM threads")[0];

describe("ratchet thread (e2e)", () => {
  it("kill -9 while waiting for an approval: approve in a new process resumes the saved VM; the call runs once", async () => {
    const { ws, env, appendFile } = await setup({
      turns: [
        { tool_calls: [{ id: "k1", name: "echo__echo", arguments: { text: "before" } }] },
        { tool_calls: [{ id: "k2", name: "append", arguments: { line: "exactly once" } }] },
        { text: "Appended after approval." },
      ],
    });
    const waiting = startRatchet(["thread", "start", "append a line after echoing"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (waiting.child.exitCode === null && waiting.child.signalCode === null) waiting.child.kill("SIGKILL");
    });
    await waitFor(
      // The state is written before the line is printed: wait for both.
      () =>
        existsSync(ws.dbPath) &&
        threadRow(ws)?.state === "waiting" &&
        waiting.stdoutSoFar().includes("approval needed: append"),
      "the thread to wait for approval",
    );
    expect(waiting.stdoutSoFar()).toContain("approval needed: append");
    waiting.child.kill("SIGKILL");
    const killed = await waiting.done;
    expect(killed.signal).toBe("SIGKILL");
    const id = threadRow(ws)!.thread_id;

    const list = await ws.run(["thread", "list", "--json"], { env });
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout)[0]).toMatchObject({ thread_id: id, state: "waiting" });
    expect(lines(appendFile)).toEqual([]);

    const approve = await ws.run(["thread", "approve", id, "--json"], { env });
    expect(approve.stderr).toBe("");
    expect(approve.status).toBe(0);
    expect(approve.marker).toMatchObject({
      ok: true,
      thread_id: id,
      outcome: "completed",
      state: "done",
      final_result: "Appended after approval.",
    });
    expect(lines(appendFile)).toEqual(["exactly once"]);
    const results = query<{ call_id: string; n: number }>(
      ws,
      "SELECT call_id, COUNT(*) AS n FROM thread_messages WHERE role = 'tool' GROUP BY call_id ORDER BY call_id",
    );
    expect(results).toEqual([
      { call_id: "k1", n: 1 },
      { call_id: "k2", n: 1 },
    ]);

    const again = await ws.run(["thread", "approve", id], { env });
    expect(again.status).toBe(4);
    expect(again.stderr).toContain("was already approved");
    const resume = await ws.run(["thread", "resume", id], { env });
    expect(resume.status).toBe(4);
    expect(resume.stderr).toContain(`thread ${id} is not resumable from done`);
  });

  it("kill -9 in the middle of a model call: the thread becomes Suspended and resumes from its checkpoint", async () => {
    const { ws, env } = await setup({
      turns: [
        { tool_calls: [{ id: "s1", name: "echo__add", arguments: { a: 1, b: 2 } }] },
        { text: "slow", delay_ms: 30_000 },
        { text: "The answer is 3." },
      ],
    });
    const running = startRatchet(["thread", "start", "add one and two"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGKILL");
    });
    await waitFor(
      () =>
        existsSync(ws.dbPath) &&
        query(ws, "SELECT 1 FROM thread_messages WHERE role = 'tool' AND call_id = 's1'").length === 1,
      "the first tool result",
    );
    await new Promise((r) => setTimeout(r, 300));
    running.child.kill("SIGKILL");
    await running.done;
    const id = threadRow(ws)!.thread_id;
    expect(threadRow(ws)!.state).toBe("running");

    const show = await ws.run(["thread", "show", id, "--json"], { env });
    expect(JSON.parse(show.stdout).thread).toMatchObject({ state: "suspended" });
    const resumed = await ws.run(["thread", "resume", id, "--json"], { env });
    expect(resumed.marker).toMatchObject({ outcome: "completed", final_result: "The answer is 3." });
    expect(query(ws, "SELECT call_id FROM thread_messages WHERE role = 'tool'")).toEqual([{ call_id: "s1" }]);
  });

  it("bad input: unknown thread (3), empty goal (2), deny of a thread without approvals (3)", async () => {
    const { ws, env } = await setup({ turns: [], default: { text: "ok" } });
    const unknown = await ws.run(["thread", "resume", "th-missing"], { env });
    expect(unknown.status).toBe(3);
    expect(unknown.stderr).toContain("thread th-missing not found");
    const empty = await ws.run(["thread", "start", "  "], { env });
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain("goal must be a non-empty text");
    const done = await ws.run(["thread", "start", "hello", "--json"], { env });
    expect(done.status).toBe(0);
    const id = done.marker!.thread_id as string;
    const deny = await ws.run(["thread", "deny", id], { env });
    expect(deny.status).toBe(3);
    expect(deny.stderr).toContain(`thread ${id} has no approval to decide`);
    const cancel = await ws.run(["thread", "cancel", id], { env });
    expect(cancel.status).toBe(4);
    const state = await ws.run(["thread", "list", "--state", "sleeping"], { env });
    expect(state.status).toBe(2);
    expect(state.stderr).toContain(
      'state must be one of created, running, waiting, suspended, completed, done, failed (got "sleeping")',
    );
    writeFileSync(join(ws.dir, "bad.py"), "def run_loop(:\n    pass\n");
    const bad = await ws.run(["orchestrator", "save", "bad.py"], { env });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("bad.py does not parse");
    writeFileSync(join(ws.dir, "nofinal.py"), '{"outcome": "completed"}\n');
    const nofinal = await ws.run(["orchestrator", "save", "nofinal.py"], { env });
    expect(nofinal.status).toBe(8);
    expect(nofinal.stderr).toContain("failed the test threads");
    const versions = await ws.run(["orchestrator", "list", "--json"], { env });
    expect(JSON.parse(versions.stdout).versions).toEqual([
      {
        version: 0,
        source: "builtin",
        origin: "builtin",
        active: true,
        consecutive_failures: 0,
        total_failures: 0,
        disabled_reason: null,
      },
    ]);
  });

  it("chat renders streamed text, tool calls, skills and an inline approval; watch renders them", async () => {
    const { ws, env, appendFile } = await setup({
      turns: [
        {
          text: "Appending now.",
          tool_calls: [{ id: "ch1", name: "append", arguments: { line: "from chat" } }],
        },
        { text: "Appended it." },
        { match: { contains: "thanks" }, text: "You are welcome." },
      ],
    });
    const skill = await ws.run(
      ["skills", "add", "notes", "--content", "Keep notes short.", "--keywords", "append"],
      { env },
    );
    expect(skill.status).toBe(0);
    const chat = await ws.run(["chat"], { env, input: "append a line please\ny\nthanks\n" });
    expect(chat.status).toBe(0);
    expect(chat.stdout).toContain("◈ skills: notes");
    // Piped: no colour codes.
    expect(chat.stdout).not.toContain("\x1b[");
    expect(chat.stdout).toContain('approval needed: append {"line":"from chat"} (call ch1)');
    expect(chat.stdout).toContain("Appending now.");
    expect(chat.stdout).toContain("approval needed: append");
    expect(chat.stdout).toContain("approve? [y]es / [n]o / [a]lways");
    expect(chat.stdout).toContain("✓ append succeeded");
    expect(chat.stdout).toContain("Appended it.");
    expect(chat.stdout).toContain("You are welcome.");
    expect(lines(appendFile)).toEqual(["from chat"]);
    const ids = query<{ thread_id: string; goal: string }>(
      ws,
      "SELECT thread_id, goal FROM threads ORDER BY created_at",
    );
    expect(ids).toHaveLength(2);
    expect(ids[1]!.goal).toContain("assistant: Appended it.");
    const watch = await ws.run(["thread", "watch", ids[0]!.thread_id, "--timeout", "5"], { env });
    expect(watch.status).toBe(0);
    expect(watch.stdout).toContain("✓ append approved");
    expect(watch.stdout).toContain("◈ skills: notes");
  });
});
