/**
 * Group commit (src/threads/ARCHITECTURE.md): the writes of consecutive synchronous host calls
 * share one transaction, and a pure call (`__regex_match__`) has no journal row. A `kill -9` of the
 * driving process lands while such a transaction is open (the script computes between its calls, so
 * one is open nearly all the time); the resume in a new process must redo exactly the writes that
 * were lost with it — every message once, in order, none missing — and compute the pure calls again.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { montyVm, ThreadService } from "../../src/threads/index.js";
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

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const N = 1500;
// Each round: a pure call, a write, some computing (so the thread runs for seconds), a read.
const SCRIPT = [
  "n = 0",
  `while n < ${N}:`,
  '    if __regex_match__("^x[0-9]+$", "x" + str(n)):',
  '        __add_message__("user", "x" + str(n))',
  "    k = 0",
  "    while k < 400:",
  "        k += 1",
  "    __check_signals__()",
  "    n += 1",
  'FINAL({"outcome": "completed", "response": str(n)})',
  "",
].join("\n");

function saveVersion(ws: TestWorkspace): void {
  const store = SqliteStore.open(ws.dbPath);
  try {
    new ThreadService({ store, missions: false }).versions.save(SCRIPT, montyVm);
  } finally {
    store.close();
  }
}

const userMessages = (ws: TestWorkspace) =>
  query<{ content: string }>(ws, "SELECT content FROM thread_messages WHERE role = 'user' ORDER BY id").map(
    (m) => m.content,
  );

describe("group commit across a kill -9", () => {
  it("a resume redoes exactly the writes the open transaction lost, and recomputes pure calls", async () => {
    const ws = await makeWorkspace("ratchet-group-commit-");
    cleanups.push(() => ws.remove());
    saveVersion(ws);
    const running = startRatchet(["thread", "start", "write in a loop"], { cwd: ws.dir });
    cleanups.push(() => {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGKILL");
    });
    await waitFor(() => userMessages(ws).length > 100, "a hundred committed messages");
    running.child.kill("SIGKILL");
    const killed = await running.done;
    expect(killed.signal).toBe("SIGKILL");

    // What the killed process committed is a prefix: the goal, then x0, x1, … without a gap.
    const before = userMessages(ws);
    expect(before.length).toBeLessThan(N + 1);
    expect(before).toEqual([
      "write in a loop",
      ...Array.from({ length: before.length - 1 }, (_, i) => `x${i}`),
    ]);
    // The journal holds batched rows and never a pure call.
    const names = query<{ call_name: string }>(ws, "SELECT call_name FROM thread_journal").map(
      (r) => r.call_name,
    );
    expect(names).toContain("*batch");
    const id = query<{ thread_id: string }>(ws, "SELECT thread_id FROM threads")[0]!.thread_id;
    const journal = await (async () => {
      const store = SqliteStore.open(ws.dbPath);
      try {
        return new ThreadService({ store, missions: false }).threads
          .journalAfter(id, 0)
          .map((j) => j.call_name);
      } finally {
        store.close();
      }
    })();
    expect(journal.length).toBeGreaterThan(0);
    expect(journal).not.toContain("__regex_match__");
    expect(new Set(journal)).toEqual(new Set(["__add_message__", "__check_signals__"]));

    const resumed = await ws.run(["thread", "resume", id, "--json"]);
    expect(resumed.marker).toMatchObject({ outcome: "completed", final_result: String(N) });
    expect(userMessages(ws)).toEqual(["write in a loop", ...Array.from({ length: N }, (_, i) => `x${i}`)]);
    // One `thread.message` event per stored message: the lost batch's events were redone once, too.
    const [events] = query<{ n: number }>(
      ws,
      "SELECT COUNT(*) AS n FROM events WHERE entity_id = ? AND type = 'thread.message'",
      id,
    );
    const [messages] = query<{ n: number }>(
      ws,
      "SELECT COUNT(*) AS n FROM thread_messages WHERE thread_id = ?",
      id,
    );
    expect(events!.n).toBe(messages!.n);
  });

  it("kill -9 while a tool runs (no VM saved at that call): the resume replays to it and does not run it again", async () => {
    const ws = await makeWorkspace("ratchet-group-commit-tool-");
    cleanups.push(() => ws.remove());
    const model = await startScriptedModel({
      script: {
        turns: [
          { tool_calls: [{ id: "t1", name: "slow_append", arguments: { line: "first", hold_ms: 0 } }] },
          { tool_calls: [{ id: "t2", name: "slow_append", arguments: { line: "second" } }] },
          { text: "Done after the interrupted call." },
        ],
      },
    });
    cleanups.push(() => model.close());
    const file = join(ws.dir, "appended.txt");
    writeFileSync(
      join(ws.ratchetDir, "config.json"),
      JSON.stringify({
        customTools: {
          slow_append: {
            command: process.execPath,
            args: [join(ROOT, "test/fixtures/threads/slow-append-tool.mjs"), file],
            description: "Appends a line, answers later.",
            input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
          },
        },
      }),
    );
    const env = {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: "sk-test-000000",
    };
    const lines = () => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
    const running = startRatchet(["thread", "start", "append two lines"], { cwd: ws.dir, env });
    cleanups.push(() => {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGKILL");
    });
    await waitFor(() => lines().length === 2, "the second call's effect");
    running.child.kill("SIGKILL");
    await running.done;
    // The saved VM is older than the second call (it was not saved there: no approval was needed).
    const [cp] = query<{ seq: number; call_name: string }>(
      ws,
      "SELECT seq, call_name FROM thread_checkpoints",
    );
    expect(["__execute_action__", "__execute_actions_parallel__"]).not.toContain(cp!.call_name);
    const [started] = query<{ status: string }>(ws, "SELECT status FROM thread_actions WHERE call_id = 't2'");
    expect(started!.status).toBe("started");
    const id = query<{ thread_id: string }>(ws, "SELECT thread_id FROM threads")[0]!.thread_id;
    const resumed = await ws.run(["thread", "resume", id, "--json"], { env });
    expect(resumed.marker).toMatchObject({
      outcome: "completed",
      final_result: "Done after the interrupted call.",
    });
    expect(lines()).toEqual(["first", "second"]);
    const results = query<{ call_id: string; is_error: number; content: string }>(
      ws,
      "SELECT call_id, is_error, content FROM thread_messages WHERE role = 'tool' ORDER BY id",
    );
    expect(results.map((r) => [r.call_id, r.is_error])).toEqual([
      ["t1", 0],
      ["t2", 1],
    ]);
    expect(results[1]!.content).toContain("was interrupted while it ran");
  });
});
