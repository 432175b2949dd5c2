// Mission triggers (pure), daily caps, proposals (syntax check + test threads before a version is
// saved), cancel, and the cost budget — through the real engine.
import { afterEach, describe, expect, it } from "vitest";
import { scriptedModelClient } from "../testing/scripted-model-client.js";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { compileThreadsConfig } from "./config.js";
import { missionsFor } from "./missions.js";
import { acceptProposal, listProposals, rejectProposal } from "./proposals.js";
import { ThreadService } from "./service.js";
import type { ThreadRow } from "./thread-store.js";

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const row = (over: Partial<ThreadRow>): ThreadRow =>
  ({ kind: "conversation", step_count: 1, project: null, ...over }) as ThreadRow;

describe("mission triggers", () => {
  it("fire on trace issues, on long successful threads, and on every 5th completed thread of a project", () => {
    const base = { actions: 0, failedActions: 0, completedInProject: 1 };
    expect(missionsFor({ ...base, thread: row({}) })).toEqual([]);
    expect(missionsFor({ ...base, failedActions: 1, actions: 1, thread: row({}) })).toEqual([
      "self-improvement",
    ]);
    expect(missionsFor({ ...base, actions: 3, thread: row({ step_count: 5 }) })).toEqual([
      "playbook-extraction",
    ]);
    expect(missionsFor({ ...base, actions: 2, thread: row({ step_count: 9 }) })).toEqual([]);
    expect(missionsFor({ ...base, completedInProject: 5, thread: row({}) })).toEqual([
      "conversation-insights",
    ]);
    expect(
      missionsFor({ ...base, failedActions: 2, completedInProject: 5, thread: row({ kind: "mission:x" }) }),
    ).toEqual([]);
  });
});

const PROPOSED_OK = `def run_loop():\n    while True:\n        reply = __llm_complete__(None, actions, None)\n        if reply["type"] == "actions":\n            __execute_actions_parallel__(reply["calls"])\n        else:\n            FINAL({"outcome": "completed", "response": "v-next: " + reply["content"]})\n            return\n\nrun_loop()\n`;
const PROPOSED_NO_FINAL = `reply = __llm_complete__(None, actions, None)\n{"outcome": "completed"}\n`;

describe("missions through the engine", () => {
  it("playbook extraction after a long successful thread; conversation insights on the 5th thread of a project", async () => {
    const call = (i: number) => ({
      tool_calls: [{ id: `p${i}`, name: "echo__echo", arguments: { text: `step ${i}` } }],
    });
    kit = await makeKit({
      turns: [
        {
          match: { contains: "Mission playbook-extraction" },
          text: '{"playbooks":[{"title":"echo five times","content":"1. echo 2. echo"}]}',
        },
        {
          match: { contains: "Mission conversation-insights" },
          text: '{"insights":[{"title":"likes echoes","content":"The user asks for echoes."}]}',
        },
        call(1),
        call(2),
        call(3),
        call(4),
        call(5),
        { text: "echoed five times" },
      ],
      default: { text: "ok" },
    });
    const long = await kit.svc.start("echo five times", { project: "p" });
    expect(long.thread.step_count).toBe(6);
    expect(kit.svc.missionReports.map((m) => m.mission)).toEqual(["playbook-extraction"]);
    expect(kit.svc.docs.list("playbook").map((d) => d.title)).toEqual(["echo five times"]);
    for (let i = 2; i <= 5; i++) await kit.svc.start(`small thread ${i}`, { project: "p" });
    expect(kit.svc.missionReports.map((m) => m.mission)).toEqual([
      "playbook-extraction",
      "conversation-insights",
    ]);
    expect(kit.svc.docs.list("insight").map((d) => d.title)).toEqual(["likes echoes"]);
    const kinds = kit.svc.threads.list({ limit: 100 }).map((t) => t.kind);
    expect(kinds.filter((k) => k.startsWith("mission:")).sort()).toEqual([
      "mission:conversation-insights",
      "mission:playbook-extraction",
    ]);
  });
});

describe("daily caps", () => {
  it("a mission over its daily cap is reported as skipped and runs no thread", async () => {
    kit = await makeKit(
      { turns: [{ tool_calls: [{ id: "z1", name: "echo__fail", arguments: {} }] }, { text: "failed" }] },
      { threads: { missions: { daily_cap: 0 } } },
    );
    const r = await kit.svc.start("fail once");
    expect(r.thread.state).toBe("done");
    expect(kit.svc.missionReports).toEqual([
      {
        mission: "self-improvement",
        sourceThreadId: r.thread.thread_id,
        threadId: null,
        documents: [],
        skipped: "daily cap 0 reached",
      },
    ]);
    expect(kit.svc.threads.list().map((t) => t.kind)).toEqual(["conversation"]);
  });
});

describe("proposals", () => {
  it("a mission's orchestrator proposal is saved as a version only when accepted, after the test threads", async () => {
    const answer = (code: string | null) =>
      JSON.stringify({
        skills: [],
        insights: [],
        orchestrator: code ? { code, reason: "simpler loop" } : null,
        prompt: null,
      });
    kit = await makeKit({
      turns: [
        { tool_calls: [{ id: "x1", name: "echo__fail", arguments: {} }] },
        { text: "failed once" },
        { match: { contains: "Mission self-improvement" }, text: answer(PROPOSED_OK) },
        { tool_calls: [{ id: "x2", name: "echo__fail", arguments: {} }] },
        { text: "failed twice" },
        { match: { contains: "Mission self-improvement" }, text: answer("def broken(:\n") },
        { text: "handled by the new version", repeat: 2 },
      ],
    });
    const { svc } = kit;
    await svc.start("first failing thread");
    expect(svc.versions.active().version).toBe(0);
    const [good] = listProposals(svc);
    expect(JSON.parse(good!.meta)).toMatchObject({
      status: "pending",
      target: "orchestrator",
      reason: "simpler loop",
    });
    await svc.start("second failing thread");
    const bad = listProposals(svc).find((p) => p.doc_id !== good!.doc_id)!;
    await expect(acceptProposal(svc, bad.doc_id)).rejects.toMatchObject({ code: "invalid_value" });
    expect(JSON.parse(svc.docs.require(bad.doc_id).meta).status).toBe("rejected");
    expect(svc.versions.active().version).toBe(0);

    const accepted = await acceptProposal(svc, good!.doc_id);
    expect(accepted.version).toBe(1);
    // A version a mission wrote runs only with threads.self_modify on (default off).
    expect(svc.versions.active().version).toBe(0);
    expect(svc.versions.active({ selfModify: true }).version).toBe(1);
    await expect(acceptProposal(svc, good!.doc_id)).rejects.toThrow("was already accepted");
    expect(() => rejectProposal(svc, good!.doc_id, "late")).toThrow("was already accepted");
    // Each decision is one event, written with it (a refused second decision writes none).
    const decided = svc.threads.store.sql.all<{ entity_id: string; payload: string }>(
      "SELECT entity_id, payload FROM events WHERE type = 'proposal.decided' ORDER BY id",
    );
    expect(decided.map((e) => [e.entity_id, JSON.parse(e.payload).status])).toEqual([
      [bad.doc_id, "rejected"],
      [good!.doc_id, "accepted"],
    ]);
    const off = await svc.start("self-modification is off");
    expect(off.thread.orchestrator_version).toBe(0);
    expect(off.thread.orchestrator_why).toBe(
      "the built-in orchestrator; v1 written by a learning mission skipped: threads.self_modify is off",
    );
    const on = new ThreadService({
      store: kit.store,
      config: compileThreadsConfig({ self_modify: true }),
      model: () => scriptedModelClient(kit!.model),
      missions: false,
    });
    const next = await on.start("use the new loop");
    expect(next.thread.orchestrator_version).toBe(1);
    expect(next.thread.orchestrator_why).toBe(
      "the highest version, written by a learning mission (threads.self_modify is on)",
    );
    expect(next.thread.final_result).toBe("v-next: handled by the new version");
  });

  it("test threads refuse an orchestrator that never calls FINAL", async () => {
    const { selfTestOrchestrator } = await import("./proposals.js");
    expect(await selfTestOrchestrator(PROPOSED_OK)).toEqual([]);
    const failures = await selfTestOrchestrator(PROPOSED_NO_FINAL);
    expect(failures[0]).toBe(
      "plain answer: thread failed: the orchestrator returned without calling FINAL (outcome completed)",
    );
  });
});

describe("cancel and budgets", () => {
  it("cancel of a waiting thread fails it at once; a cost budget ends a thread with the reason", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "q1", name: "append", arguments: { line: "x" } }] },
          {
            tool_calls: [{ id: "q2", name: "echo__echo", arguments: { text: "pricey" } }],
            usage: { prompt_tokens: 1000, completion_tokens: 1000 },
          },
        ],
        default: { text: "never" },
      },
      {
        threads: {
          policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
          pricing: { input_per_1k_tokens: 1, output_per_1k_tokens: 2 },
          budget: { max_cost_usd: 2.5 },
        },
        service: { approvalWaitMs: 50 },
      },
    );
    const w = await kit.svc.start("wait for me");
    expect(w.thread.state).toBe("waiting");
    const c = kit.svc.cancel(w.thread.thread_id, "no longer needed");
    expect(c).toMatchObject({ state: "failed", reason: "no longer needed" });
    expect(() => kit!.svc.cancel(w.thread.thread_id)).toThrow("already ended (failed)");
    expect(() => kit!.svc.approve(w.thread.thread_id)).toThrow("already ended (failed)");
    const tool = kit.svc.threads.messages(w.thread.thread_id).filter((m) => m.role === "tool");
    expect(tool.map((m) => [m.call_id, m.content])).toEqual([
      ["q1", "not run: the thread was cancelled (no longer needed)"],
    ]);
    const b = await kit.svc.start("spend");
    expect(b.outcome).toBe("failed");
    expect(b.thread.reason).toBe("budget exhausted: cost $3.0000 of $2.5 used");
  });
});

describe("orchestrator save checks behaviour", () => {
  it("a script that only reaches completed is refused with the first failing check named", async () => {
    const { selfTestOrchestrator } = await import("./proposals.js");
    const onlyCompletes = 'FINAL({"outcome": "completed", "response": "done"})\n';
    expect((await selfTestOrchestrator(onlyCompletes))[0]).toBe(
      'plain answer: the answer is "done", want text containing "42"',
    );
    // Answers right but never runs the tools the model asked for.
    const noTools =
      'r = __llm_complete__(None, actions, None)\nwhile r["type"] == "actions":\n    r = __llm_complete__(None, actions, None)\nFINAL({"outcome": "completed", "response": r["content"]})\n';
    expect((await selfTestOrchestrator(noTools))[0]).toBe(
      "one tool call then an answer: the expected tool selftest_echo did not run",
    );
    // Runs only the first of several calls: the others get "not run" results, and the check names the tools.
    const firstOnly =
      'r = __llm_complete__(None, actions, None)\nwhile r["type"] == "actions":\n    c = r["calls"][0]\n    __execute_action__(c["name"], c["params"], call_id=c["call_id"])\n    r = __llm_complete__(None, actions, None)\nFINAL({"outcome": "completed", "response": r["content"]})\n';
    expect((await selfTestOrchestrator(firstOnly))[0]).toBe(
      "parallel tool calls: tools ran [selftest_echo], want [selftest_echo, selftest_echo]",
    );
  });
});
