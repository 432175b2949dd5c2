// Orchestrator versions, bad input, skills and missions through the real engine.
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { addSkill, listSkills } from "./skills.js";
import { montyVm } from "./vm.js";

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const BROKEN = `def run_loop(goal, config):\n    raise ValueError("broken on purpose")\n\nrun_loop(goal, config)\n`;

describe("orchestrator versions", () => {
  it("the highest version wins; after 3 consecutive failures it falls back to the previous one and says why", async () => {
    kit = await makeKit({ turns: [], default: { text: "fine" } });
    const { svc } = kit;
    expect(svc.versions.active().version).toBe(0);
    svc.versions.save(BROKEN, montyVm);
    expect(svc.versions.active().version).toBe(1);
    for (let i = 1; i <= 3; i++) {
      const r = await svc.start(`attempt ${i}`);
      expect(r.outcome).toBe("failed");
      expect(r.thread.orchestrator_version).toBe(1);
      expect(r.thread.reason).toContain("orchestrator v1 failed: ValueError: broken on purpose");
    }
    expect(svc.versions.active().version).toBe(0);
    const v1 = svc.versions.get(1);
    expect(v1.disabled_reason).toMatch(/^3 consecutive failures; last: ValueError: broken on purpose/);
    const fallback = kit.store
      .listEvents({ entityKind: "orchestrator" })
      .filter((e) => e.type === "orchestrator.fallback");
    expect(fallback).toHaveLength(1);
    expect(JSON.parse(fallback[0]!.payload)).toMatchObject({ version: 1, fallback: 0 });
    const ok = await svc.start("after the fallback");
    expect(ok.outcome).toBe("completed");
    expect(ok.thread.orchestrator_version).toBe(0);
    // Rollback re-enables a lower version and disables the ones above it.
    svc.versions.save(BROKEN.replace("broken", "also broken"), montyVm);
    expect(svc.versions.active().version).toBe(2);
    expect(svc.versions.rollback(0, "bad release").version).toBe(0);
    expect(svc.versions.active().version).toBe(0);
  });

  it("refuses orchestrator code that does not parse, and stores nothing", async () => {
    kit = await makeKit({ turns: [] });
    expect(() => kit!.svc.versions.save("def broken(:\n    pass\n", montyVm)).toThrow(
      /orchestrator code does not parse: .*SyntaxError/,
    );
    expect(kit.svc.versions.list().map((v) => v.version)).toEqual([0]);
  });

  it("a script that loops forever is stopped by the time limit and the thread fails with the reason", async () => {
    kit = await makeKit({ turns: [] }, { service: { limits: { maxDurationSecs: 0.3 } } });
    kit.svc.versions.save("x = 0\nwhile True:\n    x += 1\n", montyVm);
    const r = await kit.svc.start("spin");
    expect(r.outcome).toBe("failed");
    expect(r.thread.reason).toMatch(/^orchestrator v1 stopped by a limit: TimeoutError: time limit exceeded/);
  });

  it("refuses to resume a Running or Done thread, naming its state", async () => {
    kit = await makeKit({ turns: [], default: { text: "done" } });
    const r = await kit.svc.start("quick");
    await expect(kit.svc.resume(r.thread.thread_id)).rejects.toMatchObject({
      code: "illegal_transition",
      message: `thread ${r.thread.thread_id} is not resumable from done`,
    });
    const row = kit.svc.create("not started");
    kit.svc.threads.transition(row.thread_id, "running", {
      patch: { driver: `${process.pid}@nowhere`, driver_heartbeat_ms: Date.now() },
    });
    await expect(kit.svc.resume(row.thread_id)).rejects.toThrow(
      `thread ${row.thread_id} is not resumable from running`,
    );
    expect(() => kit!.svc.approve(row.thread_id)).toThrow(
      `thread ${row.thread_id} has no approval to decide`,
    );
  });

  it("restart recovery fails a Running thread without a checkpoint whose driver is gone", async () => {
    kit = await makeKit({ turns: [] });
    const row = kit.svc.create("orphan");
    // pid 2^22 + 1 is above Linux's pid_max: no such process on this host.
    kit.svc.threads.transition(row.thread_id, "running", { patch: { driver: `4194305@${hostname()}` } });
    const moved = kit.svc.recover();
    expect(moved).toEqual([{ threadId: row.thread_id, from: "running", to: "failed" }]);
    expect(kit.svc.threads.require(row.thread_id).reason).toBe(
      `restart recovery: driver 4194305@${hostname()} is gone`,
    );
  });

  it("unknown names the script calls raise NameError; its own functions are used as defined", async () => {
    kit = await makeKit({ turns: [] });
    kit.svc.versions.save(
      `def helper(x):\n    return "h" + x\n\ntry:\n    not_a_host_function()\n    r = "no error"\nexcept NameError as e:\n    r = str(e)\nFINAL(helper(r))\n{"outcome": "completed"}\n`,
      montyVm,
    );
    const r = await kit.svc.start("names");
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("hname 'not_a_host_function' is not defined");
  });
});

describe("skills", () => {
  it("selects by keyword, tag and pattern, vetoes by excluded keyword, injects them and emits skill_activated", async () => {
    kit = await makeKit({ turns: [], default: { text: "ok" } });
    const { svc } = kit;
    addSkill(svc, {
      name: "github",
      content: "Use gh for pull requests.",
      keywords: ["github", "pull"],
      tags: ["git"],
    });
    addSkill(svc, { name: "linear", content: "Tickets live in Linear.", patterns: ["ticket-\\d+"] });
    addSkill(svc, {
      name: "vetoed",
      content: "Never shown.",
      keywords: ["github"],
      excluded_keywords: ["pull request"],
    });
    addSkill(svc, { name: "unrelated", content: "Cooking tips.", keywords: ["recipe"] });
    expect(() => addSkill(svc, { name: "bad", content: "x", patterns: ["("] })).toThrow(/not a valid regex/);
    const r = await svc.start("Open a github pull request for ticket-42");
    expect(r.outcome).toBe("completed");
    const body = kit.model.requests()[0]!.body as { messages: { role: string; content: string }[] };
    const system = body.messages.find((m) => m.role === "system")!.content;
    expect(system).toContain("## Active Skills");
    expect(system).toContain('<skill name="github">\nUse gh for pull requests.\n</skill>');
    expect(system).toContain('<skill name="linear">');
    expect(system).not.toContain("Never shown");
    expect(system).not.toContain("Cooking");
    const ev = kit.store
      .listEvents({ entityKind: "thread", entityId: r.thread.thread_id })
      .find((e) => e.type === "thread.skill_activated");
    expect(JSON.parse(ev!.payload)).toEqual({ skill_names: ["github", "linear"] });
    const used = listSkills(svc)
      .filter((s) => s.usage_count > 0)
      .map((s) => [s.name, s.success_count]);
    expect(used.sort()).toEqual([
      ["github", 1],
      ["linear", 1],
    ]);
  });
});

describe("missions", () => {
  it("a completed thread with a failed action fires self-improvement, which runs as a thread and writes a skill", async () => {
    kit = await makeKit({
      turns: [
        { tool_calls: [{ id: "f1", name: "echo__fail", arguments: {} }] },
        { text: "The tool failed; giving up." },
        {
          match: { contains: "Mission self-improvement" },
          text: '{"skills":[{"name":"fail-tool","content":"echo__fail always fails: do not call it.","keywords":["fail"]}],"insights":[{"title":"failing tool","content":"echo__fail is broken"}],"orchestrator":null,"prompt":null}',
        },
      ],
    });
    const r = await kit.svc.start("try the fail tool");
    expect(r.outcome).toBe("completed");
    expect(r.thread.state).toBe("done");
    const fired = kit.store.listEvents({ entityKind: "mission" }).filter((e) => e.type === "mission.fired");
    expect(fired.map((e) => JSON.parse(e.payload).mission)).toEqual(["self-improvement"]);
    const report = kit.svc.missionReports.find((m) => m.mission === "self-improvement")!;
    expect(report.sourceThreadId).toBe(r.thread.thread_id);
    const mission = kit.svc.threads.require(report.threadId!);
    expect(mission).toMatchObject({
      kind: "mission:self-improvement",
      parent_thread_id: r.thread.thread_id,
      state: "done",
    });
    expect(listSkills(kit.svc).map((s) => [s.name, s.source])).toEqual([["fail-tool", "learned"]]);
    expect(kit.svc.docs.list("insight").map((d) => d.title)).toEqual(["failing tool"]);
    expect(report.documents).toHaveLength(2);
  });
});
