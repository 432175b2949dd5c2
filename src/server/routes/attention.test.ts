/**
 * `GET /api/attention` over a real store, in-process: each section filled by the real flows (the
 * ledger's write routes, the runs area, the runner's artifact writer, the thread store), counts
 * beyond the page, what clears an item (a decision, a review close, a passing re-run, a sweep), and
 * bad query parameters (400 naming the field, nothing written).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeServerFixture, type ServerFixture } from "../../../test/helpers/server.js";
import { TaskArtifacts } from "../../runner/index.js";
import { ThreadStore } from "../../threads/index.js";
import { attention } from "./attention.js";

let fx: ServerFixture;
beforeEach(() => {
  fx = makeServerFixture();
});
afterEach(() => fx.dispose());

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
type J = Record<string, any>;
const get = async (path = "/api/attention"): Promise<{ status: number; body: J }> => {
  const r = await fx.req("GET", path, { token: null });
  return { status: r.status, body: (await r.json()) as J };
};
async function flow(op: string, body: unknown): Promise<J> {
  const r = await fx.req("POST", `/api/flows/${op}`, { body });
  const j = (await r.json()) as J;
  expect(r.status, JSON.stringify(j)).toBe(200);
  return j.result;
}

function thread(id: string, state = "waiting") {
  const now = new Date().toISOString();
  const ts = new ThreadStore(fx.ctx.store);
  ts.insertThread({
    thread_id: id,
    goal: `goal of ${id}`,
    project: null,
    kind: "task",
    parent_thread_id: null,
    state,
    model: null,
    orchestrator_version: 1,
    step_count: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    budget: "{}",
    final_result: null,
    reason: null,
    cancel_requested: 0,
    driver: null,
    driver_heartbeat_ms: null,
    started_ms: null,
    created_at: now,
    updated_at: now,
    finished_at: null,
  } as never);
  return ts;
}

function approval(ts: ThreadStore, threadId: string, id: string, extra: Record<string, unknown> = {}) {
  ts.tx(() =>
    ts.insertApproval({
      approval_id: id,
      thread_id: threadId,
      call_id: `call-${id}`,
      action: "append",
      args: JSON.stringify({ line: `line of ${id}`, nested: { n: 1 } }),
      args_hash: "h",
      status: "pending",
      always: 0,
      decided_by: null,
      reason: null,
      created_at: new Date().toISOString(),
      decided_at: null,
      expires_ms: null,
      ...extra,
    }),
  );
}

describe("GET /api/attention", () => {
  it("is empty on a fresh workspace, every section with count 0", async () => {
    const { status, body } = await get();
    expect(status).toBe(200);
    for (const k of ["approvals", "reviews", "failed_runs", "failed_tasks", "stuck_steps"])
      expect(body[k]).toEqual({ count: 0, items: [] });
    expect(body.days).toBe(7);
  });

  it("lists pending approvals with the call and its arguments; decided, expired and ended ones are left out", async () => {
    const ts = thread("th-1");
    approval(ts, "th-1", "ap-1");
    approval(ts, "th-1", "ap-decided", { status: "approved", decided_at: new Date().toISOString() });
    approval(ts, "th-1", "ap-expired", { expires_ms: Date.now() - 1000 });
    // A thread that ended (cancelled while it waited) leaves its request pending: not listed.
    thread("th-ended", "failed");
    approval(ts, "th-ended", "ap-of-ended");
    const { body } = await get();
    expect(body.approvals.count).toBe(1);
    const a = body.approvals.items[0];
    expect(a).toMatchObject({
      approval_id: "ap-1",
      thread_id: "th-1",
      thread_goal: "goal of th-1",
      call_id: "call-ap-1",
      action: "append",
      args: { line: "line of ap-1", nested: { n: 1 } },
    });
  });

  it("lists plans awaiting review until the review is closed", async () => {
    fx.ctx.store.tx(() =>
      fx.ctx.store.addProject({ name: "demo", repo_path: null, created_at: new Date().toISOString() }),
    );
    const plan = await flow("publish-plan", {
      goal: "reviewed plan",
      project: "demo",
      steps: [{ title: "a", type: "THINKING" }],
    });
    await flow("start-step", { step_id: plan.step_ids[0] });
    await flow("complete-step", { step_id: plan.step_ids[0], summary: "done" });
    let { body } = await get();
    expect(body.reviews.count).toBe(1);
    expect(body.reviews.items[0]).toMatchObject({
      plan_id: plan.plan_id,
      goal: "reviewed plan",
      project: "demo",
      review_step_id: plan.review_step_id,
      review_status: "NEEDS_REVIEW",
    });
    await flow("agent-review-close", { plan_id: plan.plan_id, outcome: "pass", summary: "fine" });
    ({ body } = await get());
    expect(body.reviews.count).toBe(0);
  });

  it("lists steps whose lease expired, and not once the sweep failed them", async () => {
    const plan = await flow("publish-plan", {
      goal: "stuck plan",
      steps: [{ title: "hangs", type: "THINKING" }, "b"],
    });
    await flow("start-step", { step_id: plan.step_ids[0], lease_seconds: 1 });
    // Now: the lease is live. Two seconds on: it expired (the clock is an argument, no sleeping).
    const now = attention(fx.ctx, { limit: 50, days: 7, nowMs: Date.now() });
    expect(now.stuck_steps.count).toBe(0);
    const later = attention(fx.ctx, { limit: 50, days: 7, nowMs: Date.now() + 2_000 });
    expect(later.stuck_steps.items).toEqual([
      expect.objectContaining({
        step_id: plan.step_ids[0],
        plan_id: plan.plan_id,
        title: "hangs",
        plan_goal: "stuck plan",
      }),
    ]);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await get()).body.stuck_steps.count).toBe(1);
    await flow("sweep", { plan_id: plan.plan_id });
    expect((await get()).body.stuck_steps.count).toBe(0);
  });

  it("lists recent failed runs until a later run of the workflow passes; old ones fall outside `days`", async () => {
    const runs = fx.ctx.runs;
    const start = (id: string, wf: string, at: string) =>
      fx.ctx.store.tx(() =>
        runs.startRun(
          {
            run_id: id,
            workflow_id: wf,
            workflow_path: `/x/${wf}`,
            plan_id: null,
            trigger: "manual",
            group_name: null,
            owner: "test",
            started_at: at,
          },
          [{ step_id: "greet", ledger_step_id: null, mode: "script" }],
        ),
      );
    const ago = (min: number) => new Date(Date.now() - min * 60_000).toISOString();
    start("run-a", "alpha", ago(30));
    fx.ctx.store.tx(() => {
      runs.finishStep("run-a", "greet", {
        outcome: "script_failed" as never,
        fast_path: true,
        exit_code: 1,
        duration_ms: 5,
        error: "boom",
      });
      runs.finishRun("run-a", "failed", "greet failed");
    });
    start("run-b", "beta", ago(20));
    fx.ctx.store.tx(() => runs.finishRun("run-b", "failed", "x"));
    start("run-old", "gamma", ago(60 * 24 * 10));
    fx.ctx.store.tx(() => runs.finishRun("run-old", "failed", "x"));
    let { body } = await get();
    expect(body.failed_runs.items.map((r: J) => r.run_id)).toEqual(["run-b", "run-a"]);
    expect(body.failed_runs.items[1].failed_step).toEqual({
      step_id: "greet",
      outcome: "script_failed",
      error: "boom",
    });
    expect((await get("/api/attention?days=30")).body.failed_runs.count).toBe(3);
    // A later passing run of alpha clears run-a; beta stays.
    start("run-a2", "alpha", ago(5));
    fx.ctx.store.tx(() => runs.finishRun("run-a2", "passed", null));
    ({ body } = await get());
    expect(body.failed_runs.items.map((r: J) => r.run_id)).toEqual(["run-b"]);
  });

  it("lists failed, refused and errored runner tasks, not passed or running ones", async () => {
    for (const [id, state] of [
      ["t-failed", "failed"],
      ["t-error", "error"],
      ["t-passed", "passed"],
      ["t-running", "running"],
    ] as const) {
      const art = new TaskArtifacts(fx.runnerDir, id);
      art.reset();
      art.status(state);
    }
    const { body } = await get();
    expect(body.failed_tasks.items.map((t: J) => t.task_id).sort()).toEqual(["t-error", "t-failed"]);
  });

  it("counts every match while `limit` caps the items", async () => {
    const ts = thread("th-many");
    for (let i = 0; i < 5; i++) approval(ts, "th-many", `ap-${i}`);
    const { body } = await get("/api/attention?limit=2");
    expect(body.approvals.count).toBe(5);
    expect(body.approvals.items).toHaveLength(2);
  });

  it("answers on a read-only server", async () => {
    const ro = makeServerFixture({ readOnly: true });
    try {
      const r = await ro.req("GET", "/api/attention", { token: null });
      expect(r.status).toBe(200);
    } finally {
      ro.dispose();
    }
  });

  it("refuses a bad limit or days with 400 naming the field, and writes nothing", async () => {
    const before = fx.ctx.store.lastEventId();
    for (const [q, field] of [
      ["limit=0", "limit"],
      ["limit=abc", "limit"],
      ["days=0", "days"],
      ["days=91", "days"],
      ["days=1.5", "days"],
      ["days=-3", "days"],
    ]) {
      const { status, body } = await get(`/api/attention?${q}`);
      expect(status, q).toBe(400);
      expect(body.error.field, q).toBe(field);
    }
    expect(fx.ctx.store.lastEventId()).toBe(before);
  });

  it("is described in the OpenAPI document", async () => {
    const r = await fx.req("GET", "/openapi.json", { token: null });
    const doc = (await r.json()) as J;
    expect(doc.paths["/api/attention"].get.summary).toMatch(/approvals/);
  });
});
