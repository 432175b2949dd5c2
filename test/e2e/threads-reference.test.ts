/**
 * The original engine's orchestrator scripts, stored unmodified as orchestrator versions, against
 * the scripted model server, the MCP fixture server and the append tool: a plain answer, a tool
 * call, parallel calls, a denied call, a code step with llm_query and FINAL, skills from
 * `metadata.activation`, and a message injected while the thread waits for an approval. The
 * scripts are read from `<repo>/../shared/specs/reference/ironclaw/` (test inputs, never copied).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import type { ScriptInput } from "../../src/testing/scripted-model-script.js";
import { type Kit, makeKit, ROOT } from "../../src/testing/threads-kit.js";
import { addSkill, montyVm, ThreadService, type ThreadServiceOptions } from "../../src/threads/index.js";

const REFERENCE = join(ROOT, "..", "shared", "specs", "reference", "ironclaw");
const SCRIPTS = ["default.py", "default-7f87d17.py"] as const;
const script = (name: string) => readFileSync(join(REFERENCE, name), "utf8");

let kit: Kit | undefined;
const others: SqliteStore[] = [];
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  for (const s of others.splice(0)) s.close();
});

async function withReference(
  name: string,
  turns: ScriptInput,
  threads?: unknown,
  service?: Partial<ThreadServiceOptions>,
): Promise<Kit> {
  const k = await makeKit(turns, { threads, ...(service ? { service } : {}) });
  k.svc.versions.save(script(name), montyVm);
  expect(k.svc.versions.active().version).toBe(1);
  return k;
}

type Body = {
  messages: { role: string; content: string | null; tool_call_id?: string }[];
  tools?: unknown[];
};
const body = (k: Kit, i: number) => k.model.requests()[i]!.body as Body;
const toolResults = (k: Kit, id: string) =>
  k.svc.threads
    .messages(id)
    .filter((m) => m.role === "tool")
    .map((m) => [m.call_id, m.content, m.is_error]);

describe.each(SCRIPTS)("reference orchestrator %s, stored unmodified", (name) => {
  it("a plain answer: the thread completes with the model's text, the outcome kept as an object", async () => {
    kit = await withReference(name, { turns: [{ text: "Paris is the capital of France." }] });
    const r = await kit.svc.start("What is the capital of France?");
    expect(r.thread.reason ?? "").not.toContain("NameError");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("Paris is the capital of France.");
    expect(JSON.parse(r.thread.final_outcome!)).toMatchObject({
      outcome: "completed",
      response: "Paris is the capital of France.",
    });
    expect(r.thread.orchestrator_version).toBe(1);
    // The goal reached the model as the last user message, and the leased tools were offered.
    const first = body(kit, 0);
    expect(first.messages.at(-1)).toMatchObject({ role: "user", content: "What is the capital of France?" });
    expect((first.tools ?? []).length).toBeGreaterThan(0);
  });

  it("a tool call: the action runs through the checkpoint and its result reaches the model under the call id", async () => {
    kit = await withReference(name, {
      turns: [
        { tool_calls: [{ id: "t1", name: "echo__add", arguments: { a: 2, b: 3 } }] },
        { text: "The sum is 5." },
      ],
    });
    const r = await kit.svc.start("add two and three");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("The sum is 5.");
    expect(toolResults(kit, r.thread.thread_id)).toEqual([["t1", "5", 0]]);
    expect(kit.svc.threads.actions(r.thread.thread_id)).toMatchObject([
      { call_id: "t1", action: "echo__add", status: "succeeded" },
    ]);
    const second = body(kit, 1);
    expect(second.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["t1"]);
  });

  it("parallel tool calls: one result per call id, in order", async () => {
    kit = await withReference(name, {
      turns: [
        {
          tool_calls: [
            { id: "p1", name: "echo__echo", arguments: { text: "one" } },
            { id: "p2", name: "echo__add", arguments: { a: 1, b: 1 } },
            { id: "p3", name: "echo__echo", arguments: { text: "three" } },
          ],
        },
        { text: "All three done." },
      ],
    });
    const r = await kit.svc.start("do three things");
    expect(r.outcome).toBe("completed");
    expect(toolResults(kit, r.thread.thread_id)).toEqual([
      ["p1", "one", 0],
      ["p2", "2", 0],
      ["p3", "three", 0],
    ]);
    expect(
      body(kit, 1)
        .messages.filter((m) => m.role === "tool")
        .map((m) => m.tool_call_id),
    ).toEqual(["p1", "p2", "p3"]);
  });

  it("a call the policy denies: an is_error result under its call id, the tool never runs, the thread goes on", async () => {
    kit = await withReference(
      name,
      {
        turns: [
          { tool_calls: [{ id: "d1", name: "append", arguments: { line: "no" } }] },
          { text: "I was not allowed to append." },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "deny" }] } },
    );
    const r = await kit.svc.start("append a line");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("I was not allowed to append.");
    expect(existsSync(kit.appendFile)).toBe(false);
    expect(toolResults(kit, r.thread.thread_id)).toEqual([["d1", "action append is denied by policy", 1]]);
  });

  it("a call a person denies: is_error under its call id with who and why, the tool never runs", async () => {
    kit = await withReference(
      name,
      {
        turns: [
          { tool_calls: [{ id: "n1", name: "append", arguments: { line: "no" } }] },
          { text: "The append was denied." },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    );
    const running = kit.svc.start("append a line");
    const store = SqliteStore.open(join(kit.dir, "ratchet.db"));
    others.push(store);
    const other = new ThreadService({ store });
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      const t = other.threads.list()[0];
      if (t?.state === "waiting") id = t.thread_id;
      else await new Promise((res) => setTimeout(res, 25));
    }
    other.deny(id!, { by: "reviewer", reason: "not today" });
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("The append was denied.");
    expect(existsSync(kit.appendFile)).toBe(false);
    expect(toolResults(kit, id!)).toEqual([["n1", "action append was denied by reviewer: not today", 1]]);
  });

  it("a code step that uses llm_query and ends with FINAL", async () => {
    kit = await withReference(name, {
      turns: [
        {
          text: "```repl\nword = llm_query('say seven')\nx = 6 * 7\nprint('x is', x, word)\nFINAL('x=' + str(x) + ' ' + word)\n```",
        },
        { text: "seven" },
      ],
    });
    const r = await kit.svc.start("compute six times seven");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("x=42 seven");
    const q = body(kit, 1);
    expect(q.messages.some((m) => m.role === "system")).toBe(true);
    expect(q.messages.at(-1)).toMatchObject({ role: "user", content: "say seven" });
  });

  it("skills from metadata.activation are injected as ## Active Skills and reported", async () => {
    kit = await withReference(name, { turns: [{ text: "Opened." }] });
    addSkill(kit.svc, { name: "github", content: "Use gh for pull requests.", keywords: ["github"] });
    addSkill(kit.svc, { name: "cooking", content: "Salt the water.", keywords: ["recipe"] });
    const r = await kit.svc.start("open a github pull request");
    expect(r.outcome).toBe("completed");
    const system = body(kit, 0)
      .messages.filter((m) => m.role === "system")
      .map((m) => m.content)
      .join("\n");
    expect(system).toContain("## Active Skills");
    expect(system).toContain("Use gh for pull requests.");
    expect(system).not.toContain("Salt the water.");
    // The earlier script only injects; the last one also reports the activation.
    const ev = kit.store
      .listEvents({ entityKind: "thread", entityId: r.thread.thread_id })
      .find((e) => e.type === "thread.skill_activated");
    if (name === "default.py") expect(JSON.parse(ev!.payload)).toEqual({ skill_names: ["github"] });
    else expect(ev).toBeUndefined();
  });

  it("an approval decided by another service; a message injected while waiting reaches the model", async () => {
    kit = await withReference(
      name,
      {
        turns: [
          { tool_calls: [{ id: "a1", name: "append", arguments: { line: "approved line" } }] },
          { match: { contains: "also say thanks" }, text: "Appended, and thanks." },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    );
    const running = kit.svc.start("append a line");
    const store = SqliteStore.open(join(kit.dir, "ratchet.db"));
    others.push(store);
    const other = new ThreadService({ store });
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      const t = other.threads.list()[0];
      if (t?.state === "waiting") id = t.thread_id;
      else await new Promise((res) => setTimeout(res, 25));
    }
    expect(id).toBeDefined();
    other.inject(id!, "also say thanks");
    other.approve(id!);
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("Appended, and thanks.");
    expect(readFileSync(kit.appendFile, "utf8").trim()).toBe("approved line");
    expect(toolResults(kit, id!)).toEqual(
      [["a1", "approved line", 0]].map(([c, , e]) => [c, expect.any(String), e]),
    );
    const last = body(kit, 1).messages;
    expect(last.map((m) => m.content)).toContain("also say thanks");
  });
});

describe("default-7f87d17.py: its need_approval path on a code step's gated call", () => {
  it("pauses, approved from another service: the call runs once and the answer reaches the model", async () => {
    kit = await withReference(
      "default-7f87d17.py",
      {
        turns: [
          { text: '```repl\nr = append(line="old script")\n```' },
          {
            match: { contains: '[append] {"appended":"old script","lines":1}' },
            text: "Old script appended.",
          },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    );
    const running = kit.svc.start("append a line from code");
    const store = SqliteStore.open(join(kit.dir, "ratchet.db"));
    others.push(store);
    const other = new ThreadService({ store });
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      const t = other.threads.list()[0];
      if (t?.state === "waiting") id = t.thread_id;
      else await new Promise((res) => setTimeout(res, 25));
    }
    expect(id).toBeDefined();
    other.approve(id!);
    const r = await running;
    expect(r.thread.final_result).toBe("Old script appended.");
    expect(r.outcome).toBe("completed");
    expect(readFileSync(kit.appendFile, "utf8")).toBe("old script\n");
  });
});

describe("default.py: an approval-gated action inside a code step (pending_gate)", () => {
  const GATED = { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } };
  const CODE = '```repl\nr = append(line="gated line")\nprint("after the call", r)\n```';

  async function waitingThread(k: Kit): Promise<{ other: ThreadService; id: string }> {
    const store = SqliteStore.open(join(k.dir, "ratchet.db"));
    others.push(store);
    const other = new ThreadService({ store });
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      const t = other.threads.list()[0];
      if (t?.state === "waiting") id = t.thread_id;
      else await new Promise((res) => setTimeout(res, 25));
    }
    expect(id).toBeDefined();
    return { other, id: id! };
  }

  it("the code step pauses with pending_gate, the thread waits with the call's arguments; approved, the call runs once and its result reaches the model", async () => {
    kit = await withReference(
      "default.py",
      {
        turns: [
          { text: CODE },
          { match: { contains: '[append] {"appended":"gated line","lines":1}' }, text: "Appended it." },
        ],
      },
      GATED,
    );
    const running = kit.svc.start("append a line from code");
    const { other, id } = await waitingThread(kit);
    const shown = other.show(id);
    expect(shown.pending).toHaveLength(1);
    expect(shown.pending[0]).toMatchObject({ action: "append", args: { line: "gated line" } });
    expect(existsSync(kit.appendFile)).toBe(false);
    // default.py's own gate path ran: it asked for Waiting and ended its run with gate_paused.
    const requested = kit.store
      .listEvents({ entityKind: "thread", entityId: id })
      .filter((e) => e.type === "thread.transition_requested")
      .map((e) => JSON.parse(e.payload) as { to: string; reason: string });
    expect(requested).toContainEqual({ to: "waiting", reason: "gate paused: approval" });
    other.approve(id);
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("Appended it.");
    expect(readFileSync(kit.appendFile, "utf8")).toBe("gated line\n");
    const actions = kit.svc.threads.actions(id);
    expect(actions.map((a) => [a.action, a.status, a.decision])).toEqual([
      ["append", "succeeded", "require_approval"],
    ]);
    // A second approve finds nothing left to decide; the call is not run again.
    expect(() => other.approve(id)).toThrow(/no pending approval|already ended/);
    expect(readFileSync(kit.appendFile, "utf8")).toBe("gated line\n");
  });

  it("denied: the tool never runs, the denial reaches the model as an error result, the thread goes on", async () => {
    kit = await withReference(
      "default.py",
      {
        turns: [
          { text: CODE },
          {
            match: { contains: "[append ERROR] action append was denied by reviewer: no" },
            text: "It was denied.",
          },
        ],
      },
      GATED,
    );
    const running = kit.svc.start("append a line from code");
    const { other, id } = await waitingThread(kit);
    other.deny(id, { by: "reviewer", reason: "no" });
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("It was denied.");
    expect(existsSync(kit.appendFile)).toBe(false);
    expect(kit.svc.threads.actions(id).map((a) => [a.status, a.decision])).toEqual([["denied", "denied"]]);
  });

  it("a script that ignores the gate and ends its run closes it: the call never runs, approving it later is refused", async () => {
    kit = await makeKit({ turns: [{ text: "unused" }] }, { threads: GATED });
    kit.svc.versions.save(
      [
        'r = __execute_code_step__(\'append(line="sneaky")\\nprint("after")\', state)',
        'g = r.get("pending_gate")',
        'FINAL({"outcome": "completed", "response": "gate " + g["request_id"] + " stdout " + repr(r["stdout"])})',
      ].join("\n"),
      montyVm,
    );
    const r = await kit.svc.start("try to get around the approval");
    expect(r.outcome).toBe("completed");
    // The code after the gated call did not run.
    expect(r.thread.final_result).toMatch(/^gate ap-[0-9a-f]+ stdout ''$/);
    const id = r.thread.thread_id;
    const [ap] = kit.svc.threads.approvals(id);
    expect(ap).toMatchObject({ status: "expired", action: "append" });
    expect(kit.svc.threads.actions(id).map((a) => [a.status, a.decision])).toEqual([
      ["refused", "abandoned"],
    ]);
    expect(() => kit!.svc.approve(id, { approvalId: ap!.approval_id })).toThrow(/already expired/);
    expect(existsSync(kit.appendFile)).toBe(false);
  });

  it("expired before anyone decided: it cannot be approved, the call is refused, the tool never runs", async () => {
    kit = await withReference(
      "default.py",
      {
        turns: [{ text: CODE }, { match: { contains: "[append ERROR] the approval" }, text: "It expired." }],
      },
      { ...GATED, approval_ttl_seconds: 1 },
    );
    const running = kit.svc.start("append a line from code");
    const { other, id } = await waitingThread(kit);
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("It expired.");
    expect(() => other.approve(id)).toThrow(/already expired|already ended|expired/);
    expect(existsSync(kit.appendFile)).toBe(false);
  });
});
