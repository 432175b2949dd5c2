// The thread routes called in-process with hono's app.request, over the real engine.
import { existsSync, readFileSync } from "node:fs";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { registerThreadRoutes } from "./http.js";

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe("thread routes", () => {
  it("start, wait for approval, approve, show; errors map to statuses", async () => {
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "h1", name: "append", arguments: { line: "via http" } }] },
          { text: "done over http" },
        ],
      },
      {
        threads: {
          policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
        },
      },
    );
    const drives: Promise<unknown>[] = [];
    const app = new Hono();
    registerThreadRoutes(app, () => kit!.svc, { background: (d) => drives.push(d) });
    const post = (path: string, body?: unknown) =>
      app.request(path, { method: "POST", body: body === undefined ? "" : JSON.stringify(body) });

    const bad = await post("/threads", { goal: "" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("schema_violation");

    const started = await post("/threads", { goal: "append over http" });
    expect(started.status).toBe(202);
    const { thread_id } = (await started.json()) as { thread_id: string };
    for (let i = 0; i < 200 && kit.svc.threads.require(thread_id).state !== "waiting"; i++)
      await new Promise((r) => setTimeout(r, 25));
    const shown = (await (await app.request(`/threads/${thread_id}`)).json()) as {
      thread: { state: string };
      approvals: unknown[];
    };
    expect(shown.thread.state).toBe("waiting");
    expect(shown.approvals).toHaveLength(1);

    const resumeWaiting = await post(`/threads/${thread_id}/approve`, { approval_id: "ap-none" });
    expect(resumeWaiting.status).toBe(404);
    const approved = await post(`/threads/${thread_id}/approve`, { reason: "looks fine" });
    expect(approved.status).toBe(200);
    expect(((await approved.json()) as { approval: { status: string } }).approval.status).toBe("approved");
    await Promise.all(drives);
    expect(kit.svc.threads.require(thread_id).state).toBe("done");
    expect(existsSync(kit.appendFile) && readFileSync(kit.appendFile, "utf8")).toBe("via http\n");

    const again = await post(`/threads/${thread_id}/deny`);
    expect(again.status).toBe(409);
    const resume = await post(`/threads/${thread_id}/resume`);
    expect(resume.status).toBe(409);
    expect(((await resume.json()) as { error: { message: string } }).error.message).toBe(
      `thread ${thread_id} is not resumable from done`,
    );
    expect((await app.request("/threads/th-nope")).status).toBe(404);
    const list = (await (await app.request("/threads?state=done")).json()) as {
      threads: { thread_id: string }[];
    };
    expect(list.threads.map((t) => t.thread_id)).toEqual([thread_id]);
    expect((await app.request("/threads?limit=0")).status).toBe(400);
    expect((await post(`/threads/${thread_id}/cancel`, {})).status).toBe(409);
  });
});
