// Approvals through the real engine: the driver waits with the VM paused and saved; a decision
// recorded by another service on the same database (as another process would) lets it go on.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../store/index.js";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { ThreadService } from "./service.js";

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

/** A second service on the same database file: the "other process" that decides. */
function otherProcess(k: Kit): ThreadService {
  const store = SqliteStore.open(join(k.dir, "ratchet.db"));
  others.push(store);
  return new ThreadService({ store });
}

async function waitForState(
  svc: ThreadService,
  id: () => string | undefined,
  state: string,
): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const t = id();
    if (t && svc.threads.get(t)?.state === state) return t;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`thread never reached ${state}`);
}

const lines = (k: Kit) =>
  existsSync(k.appendFile) ? readFileSync(k.appendFile, "utf8").split("\n").filter(Boolean) : [];

describe("approvals", () => {
  it("approved: the waiting driver runs that call exactly once and the thread completes", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "a1", name: "append", arguments: { line: "approved line" } }] },
          { text: "Appended." },
        ],
      },
      { threads: APPROVE_APPEND },
    );
    const running = kit.svc.start("append a line");
    const other = otherProcess(kit);
    const id = await waitForState(other, () => other.threads.list()[0]?.thread_id, "waiting");
    const detail = other.show(id);
    expect(detail.approvals).toHaveLength(1);
    expect(detail.approvals[0]).toMatchObject({ call_id: "a1", action: "append", status: "pending" });
    expect(detail.checkpoint?.call).toBe("__execute_actions_parallel__");
    expect(lines(kit)).toEqual([]);
    const r1 = other.approve(id);
    expect(r1.driven).toBe(true);
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(lines(kit)).toEqual(["approved line"]);
    const tool = kit.svc.threads.messages(id).filter((m) => m.role === "tool");
    expect(tool.map((m) => m.call_id)).toEqual(["a1"]);
    // Deciding again is refused and names the earlier decision.
    expect(() => other.approve(id)).toThrow(/already approved/);
    expect(() => other.approve(id, { approvalId: "ap-nope" })).toThrow(/approval ap-nope not found/);
  });

  it("denied: the script catches the error, the call never runs, and it has one error result", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "d1", name: "append", arguments: { line: "nope" } }] },
          { text: "The append was denied, so I stopped." },
        ],
      },
      { threads: APPROVE_APPEND },
    );
    const running = kit.svc.start("append a line");
    const other = otherProcess(kit);
    const id = await waitForState(other, () => other.threads.list()[0]?.thread_id, "waiting");
    other.deny(id, { reason: "not today" });
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(r.thread.final_result).toBe("The append was denied, so I stopped.");
    expect(lines(kit)).toEqual([]);
    const tool = kit.svc.threads.messages(id).filter((m) => m.role === "tool");
    expect(tool).toHaveLength(1);
    expect(tool[0]!.content).toMatch(/^action append was denied by .*: not today$/);
    expect(tool[0]).toMatchObject({ call_id: "d1", is_error: 1 });
    const done = kit.store
      .listEvents({ entityKind: "thread", entityId: id })
      .filter((e) => e.type === "thread.action_completed")
      .map((e) => JSON.parse(e.payload) as { call_id: string; status: string });
    expect(done).toEqual([expect.objectContaining({ call_id: "d1", status: "denied" })]);
  });

  it("always: a standing grant lets the next thread of the project call the action without asking", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "g1", name: "append", arguments: { line: "one" } }] },
          { text: "first done" },
          { tool_calls: [{ id: "g2", name: "append", arguments: { line: "two" } }] },
          { text: "second done" },
        ],
      },
      { threads: APPROVE_APPEND },
    );
    const running = kit.svc.start("append one", { project: "p1" });
    const other = otherProcess(kit);
    const id = await waitForState(other, () => other.threads.list()[0]?.thread_id, "waiting");
    other.approve(id, { always: true });
    expect((await running).outcome).toBe("completed");
    const second = await kit.svc.start("append two", { project: "p1" });
    expect(second.outcome).toBe("completed");
    expect(kit.svc.threads.approvals(second.thread.thread_id)).toEqual([]);
    expect(kit.svc.threads.actions(second.thread.thread_id)[0]).toMatchObject({
      decision: "granted",
      status: "succeeded",
    });
    expect(lines(kit)).toEqual(["one", "two"]);
  });

  it("a driver that lets go leaves the thread Waiting; resume after approval runs the call once", async () => {
    kit = await makeKit(
      {
        turns: [{ tool_calls: [{ id: "w1", name: "append", arguments: { line: "later" } }] }, { text: "ok" }],
      },
      { threads: APPROVE_APPEND, service: { approvalWaitMs: 100 } },
    );
    const first = await kit.svc.start("append later");
    expect(first.outcome).toBe("waiting");
    expect(first.thread.state).toBe("waiting");
    expect(first.thread.driver).toBe(null);
    await expect(kit.svc.resume("th-unknown")).rejects.toThrow(/thread th-unknown not found/);
    kit.svc.approve(first.thread.thread_id);
    const r = await kit.svc.resume(first.thread.thread_id);
    expect(r.outcome).toBe("completed");
    expect(lines(kit)).toEqual(["later"]);
    await expect(kit.svc.resume(first.thread.thread_id)).rejects.toThrow(
      `thread ${first.thread.thread_id} is not resumable from done`,
    );
  });
});
