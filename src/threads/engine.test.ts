// The engine through real parts: SQLite, Monty, the scripted model over HTTP, the MCP fixture
// server and a command tool through the bridge's registry.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModelClient } from "../testing/scripted-model-client.js";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { ThreadService } from "./service.js";

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const usage = (p: number, c: number) => ({ prompt_tokens: p, completion_tokens: c });

function resultsPerCall(k: Kit, threadId: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of k.svc.threads.messages(threadId)) {
    if (m.role === "assistant" && m.tool_calls)
      for (const c of JSON.parse(m.tool_calls) as { id: string }[]) counts.set(c.id, counts.get(c.id) ?? 0);
    if (m.role === "tool" && m.call_id) counts.set(m.call_id, (counts.get(m.call_id) ?? 0) + 1);
  }
  return counts;
}

describe("a thread", () => {
  it("runs several steps with tool calls through a real MCP server, one result per call, in order", async () => {
    kit = await makeKit({
      turns: [
        {
          tool_calls: [
            { id: "c1", name: "echo__add", arguments: { a: 2, b: 3 } },
            { id: "c2", name: "echo__echo", arguments: { text: "hello" } },
          ],
          usage: usage(10, 5),
        },
        { tool_calls: [{ id: "c3", name: "echo__echo", arguments: { text: "again" } }], usage: usage(20, 5) },
        { text: "The sum is 5.", usage: usage(30, 5) },
      ],
    });
    const r = await kit.svc.start("add two and three");
    expect(r.outcome).toBe("completed");
    expect(r.thread.state).toBe("done");
    expect(r.thread.final_result).toBe("The sum is 5.");
    expect(r.thread.step_count).toBe(3);
    expect(r.thread.input_tokens).toBe(60);
    expect(r.thread.output_tokens).toBe(15);
    const counts = resultsPerCall(kit, r.thread.thread_id);
    expect([...counts.entries()]).toEqual([
      ["c1", 1],
      ["c2", 1],
      ["c3", 1],
    ]);
    const tools = kit.svc.threads.messages(r.thread.thread_id).filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.call_id, m.content])).toEqual([
      ["c1", "5"],
      ["c2", "hello"],
      ["c3", "again"],
    ]);
    // The model saw the results under the provider's call ids.
    const third = kit.model.requests()[2]!.body as { messages: { role: string; tool_call_id?: string }[] };
    expect(third.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual([
      "c1",
      "c2",
      "c3",
    ]);
    const types = kit.store
      .listEvents({ entityKind: "thread", entityId: r.thread.thread_id })
      .map((e) => e.type);
    expect(types).toContain("thread.state_changed");
    expect(types.filter((t) => t === "thread.step_completed")).toHaveLength(3);
    expect(kit.svc.show(r.thread.thread_id).checkpoint?.script_state).toMatchObject({ step: 3 });
  });

  it("runs a code step in a nested VM and counts the tokens spent inside it", async () => {
    kit = await makeKit({
      turns: [
        {
          text: "Let me compute.\n```python\nword = llm_query('say seven')\nx = 6 * 7\nprint('x is', x, word)\nFINAL(x)\n```",
          usage: usage(10, 10),
        },
        { text: "seven", usage: usage(3, 4) },
      ],
    });
    const r = await kit.svc.start("compute six times seven");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("42");
    expect(r.thread.input_tokens + r.thread.output_tokens).toBe(27);
    const msgs = kit.svc.threads.messages(r.thread.thread_id);
    expect(msgs.at(-1)?.content).toContain("x is 42 seven");
  });

  it("fails with the reason when a budget is used up", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "b1", name: "echo__echo", arguments: { text: "x" } }], usage: usage(80, 40) },
        ],
        default: { text: "never" },
      },
      { threads: { budget: { max_tokens: 100 } } },
    );
    const r = await kit.svc.start("burn tokens");
    expect(r.outcome).toBe("failed");
    expect(r.thread.reason).toMatch(/^budget exhausted: tokens 120 of 100 used/);
    expect(kit.model.requests()).toHaveLength(1);
  });

  it("records a denial by policy as the call's one result and the script goes on", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "d1", name: "append", arguments: { line: "no" } }] },
          { text: "I could not append." },
        ],
      },
      { threads: { policy: { default: "allow", rules: [{ action: "app*", decision: "deny" }] } } },
    );
    const r = await kit.svc.start("append a line");
    expect(r.outcome).toBe("completed");
    expect(() => readFileSync(kit!.appendFile, "utf8")).toThrow();
    const tool = kit.svc.threads.messages(r.thread.thread_id).filter((m) => m.role === "tool");
    expect(tool).toHaveLength(1);
    expect(tool[0]).toMatchObject({
      call_id: "d1",
      is_error: 1,
      content: "action append is denied by policy",
    });
  });

  it("an interrupted driver suspends the thread; resume continues from the checkpoint", async () => {
    const ac = new AbortController();
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "i1", name: "echo__echo", arguments: { text: "first" } }] },
          { text: "slow", delay_ms: 20_000 },
          { text: "finished after resume" },
        ],
      },
      { service: { signal: ac.signal } },
    );
    const running = kit.svc.start("be interrupted");
    for (let i = 0; i < 400 && kit.model.requests().length < 2; i++)
      await new Promise((r) => setTimeout(r, 25));
    ac.abort();
    const r = await running;
    expect(r.outcome).toBe("suspended");
    expect(r.thread).toMatchObject({ state: "suspended", reason: "interrupted: resume it to continue" });
    const model = kit.model;
    const again = new ThreadService({
      store: kit.store,
      config: kit.svc.config,
      model: () => scriptedModelClient(model),
    });
    const resumed = await again.resume(r.thread.thread_id);
    expect(resumed.outcome).toBe("completed");
    expect(resumed.thread.final_result).toBe("finished after resume");
    expect(
      again.threads
        .messages(r.thread.thread_id)
        .filter((m) => m.role === "tool")
        .map((m) => m.call_id),
    ).toEqual(["i1"]);
  });

  it("a code step calls actions through the same checkpoint; one that needs an approval is refused there", async () => {
    kit = await makeKit(
      {
        turns: [
          {
            text: [
              "```python",
              "total = echo__add(a=20, b=22)",
              "try:",
              "    append(line='from code')",
              "except PermissionError as e:",
              "    print('refused:', e)",
              "FINAL(total)",
              "```",
            ].join("\n"),
          },
        ],
      },
      {
        threads: {
          policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
        },
      },
    );
    const r = await kit.svc.start("add in code");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("42");
    const acts = kit.svc.threads
      .actions(r.thread.thread_id)
      .map((a) => [a.call_id.replace(/\d+/g, "N"), a.action, a.status]);
    expect(acts).toEqual([
      ["code-N-N", "echo__add", "succeeded"],
      ["code-N-N", "append", "refused"],
    ]);
    expect(kit.svc.threads.messages(r.thread.thread_id).filter((m) => m.role === "tool")).toEqual([]);
    expect(kit.svc.threads.messages(r.thread.thread_id).at(-1)?.content).toContain(
      "refused: action append needs an approval: ask for it as a tool call, not from a code step",
    );
  });
});
