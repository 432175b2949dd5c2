// Behaviours the original engine's tests pin, through the real engine (SQLite, Monty, the scripted
// model over HTTP, the MCP fixture server): approval gates, grants, max_iterations, the tool-intent
// nudge, failed actions, skill ranking, caps, budget, punctuation folding, learned-skill scaling.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../store/index.js";
import type { ScriptInput } from "../testing/scripted-model-script.js";
import { type Kit, makeKit, ROOT } from "../testing/threads-kit.js";
import { DocKind } from "./documents.js";
import { ThreadService } from "./service.js";
import { addSkill } from "./skills.js";
import { montyVm } from "./vm.js";

let kit: Kit | undefined;
const others: SqliteStore[] = [];
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  for (const s of others.splice(0)) s.close();
});

const APPROVE_APPEND = {
  policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
};
const REFERENCE = join(ROOT, "..", "shared", "specs", "reference", "ironclaw", "default.py");

function otherProcess(k: Kit): ThreadService {
  const store = SqliteStore.open(join(k.dir, "ratchet.db"));
  others.push(store);
  return new ThreadService({ store });
}

const requests = (k: Kit) =>
  k.model.requests().map((r) => r.body as { messages: { role: string; content: string | null }[] });
const systemOf = (k: Kit, i: number) =>
  requests(k)
    [i]!.messages.filter((m) => m.role === "system")
    .map((m) => m.content)
    .join("\n");

describe("approval gates", () => {
  it("a wrong request id does not consume the gate; the right one decides it; a second decision is refused", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "g1", name: "append", arguments: { line: "once" } }] },
          { text: "done" },
        ],
      },
      { threads: APPROVE_APPEND, service: { approvalWaitMs: 0 } },
    );
    const first = await kit.svc.start("append once");
    expect(first.outcome).toBe("waiting");
    const id = first.thread.thread_id;
    expect(() => kit!.svc.approve(id, { approvalId: "ap-wrong" })).toThrow(
      `approval ap-wrong not found on thread ${id}`,
    );
    const [pending] = kit.svc.threads.pendingApprovals(id);
    expect(pending).toMatchObject({ call_id: "g1", status: "pending" });
    expect(kit.svc.approve(id, { approvalId: pending!.approval_id }).approval.status).toBe("approved");
    expect(() => kit!.svc.approve(id, { approvalId: pending!.approval_id })).toThrow(/was already approved/);
    expect((await kit.svc.resume(id)).outcome).toBe("completed");
    expect(readFileSync(kit.appendFile, "utf8").trim()).toBe("once");
  });

  it("two approve calls on one gate from two processes: exactly one succeeds", async () => {
    kit = await makeKit(
      { turns: [{ tool_calls: [{ id: "c1", name: "append", arguments: { line: "x" } }] }, { text: "ok" }] },
      { threads: APPROVE_APPEND, service: { approvalWaitMs: 0 } },
    );
    const first = await kit.svc.start("append");
    const id = first.thread.thread_id;
    const a = otherProcess(kit);
    const b = otherProcess(kit);
    const results = await Promise.allSettled([
      Promise.resolve().then(() => a.approve(id, { by: "a" })),
      Promise.resolve().then(() => b.approve(id, { by: "b" })),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: "illegal_transition" });
    const decided = kit.store
      .listEvents({ entityKind: "thread", entityId: id })
      .filter((e) => e.type === "thread.approval_decided");
    expect(decided).toHaveLength(1);
  });

  it("an expired gate cannot be resolved; resuming ends the call as refused (it never runs)", async () => {
    let now = Date.now();
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "e1", name: "append", arguments: { line: "late" } }] },
          { text: "The approval expired." },
        ],
      },
      {
        threads: { ...APPROVE_APPEND, approval_ttl_seconds: 60 },
        service: { approvalWaitMs: 0, nowMs: () => now },
      },
    );
    const first = await kit.svc.start("append late");
    expect(first.outcome).toBe("waiting");
    const id = first.thread.thread_id;
    now += 61_000;
    expect(() => kit!.svc.approve(id)).toThrow(/expired at .*: it can no longer be decided/);
    expect(kit.svc.threads.pendingApprovals(id)).toHaveLength(1);
    const r = await kit.svc.resume(id);
    expect(r.outcome).toBe("completed");
    expect(kit.svc.threads.approvals(id)[0]).toMatchObject({ status: "expired" });
    const tool = kit.svc.threads.messages(id).filter((m) => m.role === "tool");
    expect(tool.map((m) => [m.call_id, m.is_error])).toEqual([["e1", 1]]);
    expect(tool[0]!.content).toMatch(/expired before anyone decided it/);
    expect(() => readFileSync(kit!.appendFile, "utf8")).toThrow();
  });

  it("revoking an always-approve grant: the next call asks again", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "r1", name: "append", arguments: { line: "one" } }] },
          { text: "first" },
          { tool_calls: [{ id: "r2", name: "append", arguments: { line: "two" } }] },
          { text: "second" },
          { tool_calls: [{ id: "r3", name: "append", arguments: { line: "three" } }] },
        ],
      },
      { threads: APPROVE_APPEND, service: { approvalWaitMs: 0 } },
    );
    const first = await kit.svc.start("one", { project: "p" });
    kit.svc.approve(first.thread.thread_id, { always: true });
    expect((await kit.svc.resume(first.thread.thread_id)).outcome).toBe("completed");
    const second = await kit.svc.start("two", { project: "p" });
    expect(second.outcome).toBe("completed");
    expect(kit.svc.threads.approvals(second.thread.thread_id)).toEqual([]);
    expect(kit.svc.revoke("append", "p")).toEqual({ action: "append", project: "p" });
    expect(() => kit!.svc.revoke("append", "p")).toThrow("no standing grant for action append in project p");
    const third = await kit.svc.start("three", { project: "p" });
    expect(third.outcome).toBe("waiting");
    expect(kit.svc.threads.pendingApprovals(third.thread.thread_id)[0]).toMatchObject({ call_id: "r3" });
  });
});

describe.each(["built-in", "default.py"])("loop behaviours (%s orchestrator)", (which) => {
  async function kitFor(script: ScriptInput, threads?: unknown): Promise<Kit> {
    const k = await makeKit(script, { threads });
    if (which === "default.py") k.svc.versions.save(readFileSync(REFERENCE, "utf8"), montyVm);
    return k;
  }

  it("max_iterations reached: the thread completes with that reason", async () => {
    kit = await kitFor(
      { turns: [], default: { tool_calls: [{ name: "echo__echo", arguments: { text: "again" } }] } },
      { budget: { max_steps: 2 } },
    );
    const r = await kit.svc.start("loop forever");
    expect(r.outcome).toBe("completed");
    expect(r.thread.reason).toBe("max iterations reached");
    expect(JSON.parse(r.thread.final_outcome!)).toMatchObject({ outcome: "max_iterations" });
    expect(kit.model.requests()).toHaveLength(2);
  });

  it("the tool-intent nudge: a reply that only says it will use a tool gets a nudge, then the call", async () => {
    kit = await kitFor({
      turns: [
        { text: "Let me search for that." },
        { tool_calls: [{ id: "n1", name: "echo__echo", arguments: { text: "found" } }] },
        { text: "Found it." },
      ],
    });
    const r = await kit.svc.start("search the docs");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("Found it.");
    const nudge = requests(kit)[1]!.messages.at(-1)!;
    expect(nudge.role).toBe("user");
    expect(nudge.content).toMatch(
      /^You said you would perform an action, but you did not include any tool calls/,
    );
  });

  it("a failed action keeps its call id in the result message and the event", async () => {
    kit = await kitFor({
      turns: [{ tool_calls: [{ id: "f1", name: "echo__fail", arguments: {} }] }, { text: "It failed." }],
    });
    const r = await kit.svc.start("try the failing tool");
    const id = r.thread.thread_id;
    const tool = kit.svc.threads.messages(id).filter((m) => m.role === "tool");
    expect(tool.map((m) => [m.call_id, m.tool_name, m.is_error])).toEqual([["f1", "echo__fail", 1]]);
    const ev = kit.store
      .listEvents({ entityKind: "thread", entityId: id })
      .filter((e) => e.type === "thread.action_completed")
      .map((e) => JSON.parse(e.payload));
    expect(ev).toEqual([expect.objectContaining({ call_id: "f1", action: "echo__fail", status: "failed" })]);
    expect(requests(kit)[1]!.messages.some((m) => m.role === "tool")).toBe(true);
  });

  it("skills: ranked by score, at most three, within the token budget; curly apostrophes fold", async () => {
    kit = await kitFor({ turns: [], default: { text: "ok" } });
    const { svc } = kit;
    // Scores 30 (keyword cap), 20 (pattern), 8 (a phrase with a curly apostrophe in the goal + a
    // tag), 5 (substring), and one too big for the budget.
    addSkill(svc, { name: "capped", content: "CAPPED", keywords: ["deploy", "prod", "release", "ship"] });
    addSkill(svc, { name: "pattern", content: "PATTERN", patterns: ["ticket-\\d+"] });
    addSkill(svc, { name: "ceo", content: "CEO", keywords: ["i'm a ceo"], tags: ["ceo"] });
    addSkill(svc, { name: "fourth", content: "FOURTH", keywords: ["rod"] });
    addSkill(svc, { name: "huge", content: "H".repeat(40_000), keywords: ["deploy", "prod", "release"] });
    const r = await svc.start("I’m a CEO: deploy prod release ship for ticket-7");
    expect(r.outcome).toBe("completed");
    const system = systemOf(kit, 0);
    const order = ["CAPPED", "PATTERN", "CEO"].map((t) => system.indexOf(t));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
    expect(system).not.toContain("FOURTH");
    expect(system).not.toContain("HHHH");
  });

  it("learned skills are scaled by their success rate", async () => {
    kit = await kitFor({ turns: [], default: { text: "ok" } });
    const { svc } = kit;
    const learned = (name: string, ok: number, failed: number) =>
      svc.docs.insert({
        kind: DocKind.Skill,
        title: name,
        content: name.toUpperCase(),
        meta: {
          source: "learned",
          keywords: ["deploy"],
          success_count: ok,
          failure_count: failed,
          usage_count: ok + failed,
        },
      });
    learned("reliable", 4, 0);
    learned("flaky", 1, 3);
    addSkill(svc, { name: "authored", content: "AUTHORED", keywords: ["deploy", "staging"] });
    await svc.start("deploy to staging");
    const system = systemOf(kit, 0);
    // authored: 20; reliable: 10 × 1.0 (both scripts); flaky: 10 scaled down below reliable.
    const at = (t: string) => system.indexOf(t);
    expect(at("AUTHORED")).toBeGreaterThanOrEqual(0);
    expect(at("AUTHORED")).toBeLessThan(at("RELIABLE"));
    if (at("FLAKY") >= 0) expect(at("RELIABLE")).toBeLessThan(at("FLAKY"));
  });
});

describe("resume replays the journal", () => {
  it("writes and reads after the saved VM are answered from the journal: nothing is done twice", async () => {
    const ac = new AbortController();
    kit = await makeKit(
      { turns: [{ text: "first reply" }] },
      {
        service: {
          signal: ac.signal,
          onEvent: (e) => {
            if (e.type === "skills") ac.abort();
          },
        },
      },
    );
    kit.svc.versions.save(
      [
        "r = __llm_complete__(None, actions, None)",
        '__add_message__("user", "after the reply")',
        '__emit_event__("step_completed", step=1)',
        "b = __check_budget__()",
        '__emit_event__("skill_activated", skill_names="a")',
        '__add_message__("user", "after the resume " + str(b["ok"]))',
        'FINAL({"outcome": "completed", "response": r["content"]})',
        "",
      ].join("\n"),
      montyVm,
    );
    const first = await kit.svc.start("journal");
    expect(first.outcome).toBe("suspended");
    const id = first.thread.thread_id;
    const journaled = kit.svc.threads.journalAfter(id, 0).map((j) => j.call_name);
    expect(journaled).toEqual(["__add_message__", "__emit_event__", "__check_budget__", "__emit_event__"]);
    const again = new ThreadService({ store: kit.store, config: kit.svc.config });
    const r = await again.resume(id);
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("first reply");
    expect(r.thread.step_count).toBe(1);
    const users = again.threads
      .messages(id)
      .filter((m) => m.role === "user")
      .map((m) => m.content);
    expect(users).toEqual(["journal", "after the reply", "after the resume True"]);
    const activated = kit.store
      .listEvents({ entityKind: "thread", entityId: id })
      .filter((e) => e.type === "thread.skill_activated");
    expect(activated).toHaveLength(1);
    expect(kit.model.requests()).toHaveLength(1);
  });
});

describe("code steps", () => {
  it("llm_query_batched asks concurrently; rlm_query runs a child thread as a sub-agent", async () => {
    kit = await makeKit({
      turns: [
        {
          text: [
            "```repl",
            'answers = llm_query_batched(["first question", "second question"])',
            'sub = rlm_query("the sub task")',
            'print("state has", len(state))',
            'FINAL(answers[0] + "," + answers[1] + "," + sub)',
            "```",
          ].join("\n"),
        },
        { match: { contains: "first question" }, text: "one" },
        { match: { contains: "second question" }, text: "two" },
        { match: { contains: "the sub task" }, text: "sub done" },
      ],
    });
    const r = await kit.svc.start("ask around");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("one,two,sub done");
    const child = kit.svc.threads.list().find((t) => t.kind === "subagent")!;
    expect(child).toMatchObject({
      parent_thread_id: r.thread.thread_id,
      state: "done",
      final_result: "sub done",
    });
    const ev = kit.store
      .listEvents({ entityKind: "thread", entityId: r.thread.thread_id })
      .find((e) => e.type === "thread.code_step");
    expect(JSON.parse(ev!.payload)).toMatchObject({ error: null, final: true });
  });
});
