/**
 * Every route of the server, called in-process over a real store: reads, write flows with the
 * CLI's results and markers, auth failures (nothing written), bad bodies (400 naming the field),
 * unknown ids (404), refusals (409), read-only mode, pagination, and path-traversal attempts on the
 * blob and file routes.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeServerFixture, type ServerFixture, TOKEN } from "../../test/helpers/server.js";
import { OP_NAMES } from "../ledger/index.js";
import { TaskArtifacts } from "../runner/index.js";
import { registerThreadRoutes, threadOpenApiPaths } from "../threads/http.js";
import { createServerApp, type RouteGroup } from "./index.js";

let fx: ServerFixture;
beforeEach(() => {
  fx = makeServerFixture();
});
afterEach(() => fx.dispose());

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
const json = async (r: Response) => (await r.json()) as Record<string, any>;
const counts = () => ({
  plans: (fx.ctx.store.db.prepare("SELECT COUNT(*) AS n FROM plans").get() as { n: number }).n,
  events: fx.ctx.store.lastEventId(),
});

async function publish(goal = "ship it", types = ["THINKING", "COMMAND"]) {
  const r = await fx.req("POST", "/api/flows/publish-plan", {
    body: { goal, steps: types.map((type, i) => ({ title: `step ${i + 1}`, type })) },
  });
  expect(r.status).toBe(200);
  return (await json(r)).result as { plan_id: string; step_ids: string[]; review_step_id: string };
}

describe("auth", () => {
  it("refuses writes with no token or a wrong token (401) and writes nothing", async () => {
    const before = counts();
    for (const token of [null, "wrong-token-wrong-token", ""]) {
      const r = await fx.req("POST", "/api/flows/publish-plan", {
        token,
        body: { goal: "g", steps: [{ title: "t", type: "THINKING" }] },
      });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toMatch(/Bearer/);
      expect((await json(r)).error.code).toBe("unauthorized");
    }
    const run = await fx.req("POST", "/api/runs", { token: null, body: { workflow: fx.helloDir } });
    expect(run.status).toBe(401);
    const mcp = await fx.req("POST", "/mcp", { token: "nope-nope-nope-nope", body: {} });
    expect(mcp.status).toBe(401);
    expect(counts()).toEqual(before);
  });

  it("serves reads without a token", async () => {
    expect((await fx.req("GET", "/api/plans", { token: null })).status).toBe(200);
    expect((await fx.req("GET", "/api/health", { token: null })).status).toBe(200);
  });

  it("read-only mode refuses every write with 403 and writes nothing", async () => {
    const ro = makeServerFixture({ readOnly: true });
    try {
      const r = await ro.req("POST", "/api/flows/publish-plan", {
        body: { goal: "g", steps: [{ title: "t", type: "THINKING" }] },
      });
      expect(r.status).toBe(403);
      expect((await json(r)).error.code).toBe("read_only");
      expect((await ro.req("POST", "/api/runs", { body: { workflow: ro.helloDir } })).status).toBe(403);
      expect(ro.ctx.store.lastEventId()).toBe(0);
    } finally {
      ro.dispose();
    }
  });
});

describe("write flows", () => {
  it("a batch (step apply) through POST /api/flows/apply, with {{label.path}} references", async () => {
    const r = await fx.req("POST", "/api/flows/apply", {
      body: {
        ops: [
          { op: "publish-plan", as: "p", goal: "batch", steps: ["a"] },
          { op: "start-step", step_id: "{{p.step_ids.0}}" },
          { op: "complete-step", step_id: "{{p.step_ids.0}}", summary: "done" },
          { op: "start-step", step_id: "nope" },
        ],
      },
    });
    const body = await json(r);
    expect(body).toMatchObject({ ok: false, op: "apply", applied: 3, failed: 1, exit_status: 3 });
    expect(body.lines[2]).toMatchObject({ line: 3, ok: true, op: "complete-step", plan_status: "COMPLETED" });
    expect(body.lines[3]).toMatchObject({ line: 4, ok: false, op: "start-step", exit_status: 3 });
  });

  it("publish, start, complete through REST with the CLI's result and marker; reads follow", async () => {
    const plan = await publish();
    expect(plan.plan_id).toMatch(/./);
    const s1 = plan.step_ids[0]!;
    const start = await json(await fx.req("POST", "/api/flows/start-step", { body: { step_id: s1 } }));
    expect(start.marker).toMatchObject({ ok: true, op: "start-step" });
    const done = await json(
      await fx.req("POST", "/api/flows/complete-step", {
        body: { step_id: s1, summary: "thought it through" },
      }),
    );
    expect(done).toMatchObject({ ok: true, op: "complete-step", marker: { ok: true, op: "complete-step" } });

    const view = await json(await fx.req("GET", `/api/plans/${plan.plan_id}`));
    expect(view.plan.plan_id).toBe(plan.plan_id);
    expect(view.steps.map((s: { step_id: string }) => s.step_id)).toEqual([
      ...plan.step_ids,
      plan.review_step_id,
    ]);
    expect(view.steps[0].status).toBe("COMPLETED");
    const step = await json(await fx.req("GET", `/api/steps/${s1}`));
    expect(step.step.summary).toBe("thought it through");
  });

  it("run-step runs the command and keeps the full log in a blob served by /api/blobs and /api/steps", async () => {
    const plan = await publish("log", ["COMMAND"]);
    const cmd = "for i in $(seq 1 4000); do echo line-$i; done";
    const r = await json(
      await fx.req("POST", "/api/flows/run-step", {
        body: { step_id: plan.step_ids[0], type: "COMMAND", command: cmd },
      }),
    );
    expect(r.ok).toBe(true);
    expect(r.result.exit_code).toBe(0);
    const step = await json(await fx.req("GET", `/api/steps/${plan.step_ids[0]}`));
    const cut = step.logs.find((l: { truncated: number }) => l.truncated === 1);
    expect(cut).toBeDefined();
    expect(cut.full).toContain("line-1\n");
    expect(cut.full).toContain("line-4000");
    const blob = await fx.req("GET", `/api/blobs/${cut.blob}`);
    expect(blob.status).toBe(200);
    expect(await blob.text()).toBe(cut.full);
  });

  it("bad bodies get 400 naming the field, and nothing is written", async () => {
    const before = counts();
    const cases: [string, string | undefined, unknown, string][] = [
      ["publish-plan", "{not json", undefined, "body"],
      ["publish-plan", "", undefined, "body"],
      ["publish-plan", undefined, { goal: "g" }, "steps"],
      ["publish-plan", undefined, { goal: "g", steps: [{ title: "t", type: "NOPE" }] }, "steps[0].type"],
      ["publish-plan", undefined, { goal: "g", steps: [{ title: "t", type: "CODE" }], extra: 1 }, "extra"],
      ["start-step", undefined, { step_id: 7 }, "step_id"],
    ];
    for (const [op, raw, body, field] of cases) {
      const r = await fx.req("POST", `/api/flows/${op}`, raw !== undefined ? { raw } : { body });
      expect(r.status, `${op} ${raw ?? JSON.stringify(body)}`).toBe(400);
      const b = await json(r);
      expect(b.error.field).toBe(field);
      expect(b.marker ?? { ok: false }).toMatchObject({ ok: false });
    }
    expect(counts()).toEqual(before);
  });

  it("refusals map to 409 with accepted:false, complete on COMMAND too; unknown ids 404", async () => {
    const plan = await publish();
    const [thinking, command] = plan.step_ids;
    const early = await fx.req("POST", "/api/flows/complete-step", { body: { step_id: thinking } });
    expect(early.status).toBe(409);
    const eb = await json(early);
    expect(eb.error.code).toBe("illegal_transition");
    expect(eb.marker).toMatchObject({ ok: false, accepted: false, op: "complete-step" });
    await fx.req("POST", "/api/flows/start-step", { body: { step_id: command } });
    const onCommand = await fx.req("POST", "/api/flows/complete-step", { body: { step_id: command } });
    expect(onCommand.status).toBe(409);
    expect((await json(onCommand)).error.code).toBe("complete_on_command");
    const missing = await fx.req("POST", "/api/flows/start-step", { body: { step_id: "NOPE-1" } });
    expect(missing.status).toBe(404);
    expect((await json(missing)).marker.ok).toBe(false);
    expect((await fx.req("POST", "/api/flows/no-such-flow", { body: {} })).status).toBe(404);
  });

  it("every write flow has a route (an empty body is 400 except for sweep)", async () => {
    for (const op of OP_NAMES) {
      const r = await fx.req("POST", `/api/flows/${op}`, { raw: "" });
      expect(r.status, op).toBe(op === "sweep" ? 200 : 400);
    }
  });
});

describe("reads", () => {
  it("unknown ids are 404", async () => {
    for (const path of [
      "/api/plans/NOPE",
      "/api/steps/NOPE-1",
      "/api/runs/run-20260101000000-abcdef",
      "/api/workflows/nope",
      "/api/workflows/hello/scripts/nope",
      "/api/workflows/hello/scripts/greet/diffs/v9.diff",
      "/api/runner/tasks/nope",
      "/api/runner/tasks/nope/patch",
      `/api/blobs/${"a".repeat(64)}`,
      "/api/nope",
      "/nope.html",
    ]) {
      const r = await fx.req("GET", path);
      expect(r.status, path).toBe(404);
      expect((await json(r)).ok).toBe(false);
    }
  });

  it("plans page by cursor without repeats; bad limit and cursor are 400", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await publish(`plan ${i}`, ["THINKING"])).plan_id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : "";
      const p = await json(await fx.req("GET", `/api/plans?limit=2${q}`));
      expect(p.items.length).toBeLessThanOrEqual(2);
      seen.push(...p.items.map((x: { plan_id: string }) => x.plan_id));
      cursor = p.next_cursor;
    } while (cursor);
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(new Set(seen).size).toBe(5);
    const badLimit = await fx.req("GET", "/api/plans?limit=0");
    expect(badLimit.status).toBe(400);
    expect((await json(badLimit)).error.field).toBe("limit");
    const badCursor = await fx.req("GET", "/api/plans?cursor=zzz");
    expect((await json(badCursor)).error.field).toBe("cursor");
    const badStatus = await fx.req("GET", "/api/plans?status=NOPE");
    expect((await json(badStatus)).error.field).toBe("status");
  });

  it("metrics list newest first with a cursor", async () => {
    const plan = await publish();
    // A metric names a project (the original's rule).
    fx.ctx.store.tx(() =>
      fx.ctx.store.addProject({ name: "demo", repo_path: null, created_at: "2026-01-01T00:00:00Z" }),
    );
    for (let i = 0; i < 3; i++)
      await fx.req("POST", "/api/flows/record-metric", {
        body: { name: "latency", value: i, plan_id: plan.plan_id, project: "demo" },
      });
    const p1 = await json(await fx.req("GET", "/api/metrics?limit=2&name=latency"));
    expect(p1.items.map((m: { value: number }) => m.value)).toEqual([2, 1]);
    const p2 = await json(await fx.req("GET", `/api/metrics?limit=2&name=latency&cursor=${p1.next_cursor}`));
    expect(p2.items.map((m: { value: number }) => m.value)).toEqual([0]);
    expect(p2.next_cursor).toBeNull();
  });

  it("projects, flows, health and the OpenAPI document, which names every route", async () => {
    expect((await json(await fx.req("GET", "/api/projects"))).items).toEqual([]);
    expect((await json(await fx.req("GET", "/api/flows"))).ops).toEqual(OP_NAMES);
    expect((await json(await fx.req("GET", "/api/health"))).ok).toBe(true);
    const doc = await json(await fx.req("GET", "/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    const documented = Object.keys(doc.paths).map((p) => p.replace(/\{(\w+)\}/g, ":$1"));
    for (const r of fx.app.routes) {
      if (r.method === "ALL" && r.path === "/*") continue;
      if (["/", "/index.html", "/app.js", "/app.css", "/favicon.svg", "/favicon.ico"].includes(r.path))
        continue;
      const path = r.path === "/api/flows/:op" ? "/api/flows/publish-plan" : r.path;
      if (r.path === "/mcp" || documented.includes(path)) continue;
      throw new Error(`route ${r.method} ${r.path} is not in /openapi.json`);
    }
  });
});

describe("path traversal", () => {
  it("blob, diff, patch and static routes serve only what they list", async () => {
    const secret = join(fx.dir, "secret.txt");
    writeFileSync(secret, "top secret");
    const diffs = join(fx.helloDir, "learnings", "greet", "diffs");
    mkdirSync(diffs, { recursive: true });
    writeFileSync(join(diffs, "v1-to-v2.diff"), "--- a\n+++ b\n");
    symlinkSync(secret, join(diffs, "escape.diff"));
    new TaskArtifacts(fx.runnerDir, "t1").status("passed");
    symlinkSync(secret, join(fx.runnerDir, "t1.patch"));
    const attempts = [
      "/api/blobs/..%2F..%2Fsecret.txt",
      "/api/blobs/../../secret.txt",
      "/api/workflows/hello/scripts/greet/diffs/..%2F..%2F..%2F..%2Fsecret.txt",
      "/api/workflows/hello/scripts/greet/diffs/escape.diff",
      "/api/workflows/hello/scripts/..%2Fgreet/diffs/v1-to-v2.diff",
      "/api/workflows/hello/scripts/greet%2F..%2F..%2F..%2F..%2F/diffs/secret.txt",
      "/api/runner/tasks/..%2Fsecret/patch",
      "/api/runner/tasks/t1/patch",
      "/..%2Fpackage.json",
      "/%2e%2e/%2e%2e/secret.txt",
    ];
    for (const path of attempts) {
      const r = await fx.req("GET", path);
      expect([400, 404], path).toContain(r.status);
      expect(await r.text(), path).not.toContain("top secret");
    }
    const ok = await fx.req("GET", "/api/workflows/hello/scripts/greet/diffs/v1-to-v2.diff");
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("+++ b");
  });
});

describe("workflows, runs and runner tasks", () => {
  it("starts a run (202), lists it, shows each step's mode, fast path, tokens and outcome", async () => {
    const bad = await fx.req("POST", "/api/runs", { body: { workflow: fx.helloDir, trigger: "cron" } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.field).toBe("trigger");
    expect((await json(await fx.req("POST", "/api/runs", { body: {} }))).error.field).toBe("workflow");
    expect((await fx.req("POST", "/api/runs", { body: { workflow: "nope/flow.yaml" } })).status).toBe(404);

    const r = await fx.req("POST", "/api/runs", {
      body: { workflow: fx.helloDir, vars: { names: "Ada,Grace" } },
    });
    expect(r.status).toBe(202);
    const started = await json(r);
    expect(started).toMatchObject({ ok: true, op: "run-start", workflow_id: "hello" });
    const deadline = Date.now() + 30_000;
    // biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
    let shown: Record<string, any>;
    for (;;) {
      shown = await json(await fx.req("GET", `/api/runs/${started.run_id}`));
      if (shown.run.status !== "running" || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(shown.run.status).toBe("passed");
    expect(shown.steps.map((s: { step_id: string }) => s.step_id)).toEqual(["greet", "summarise"]);
    for (const s of shown.steps)
      expect(s).toMatchObject({ mode: "learn_code", fast_path: 1, tokens: 0, outcome: "passed" });

    const list = await json(await fx.req("GET", "/api/runs?workflow_id=hello"));
    expect(list.items[0].run_id).toBe(started.run_id);
    const wfs = await json(await fx.req("GET", "/api/workflows"));
    expect(wfs.items.map((w: { workflow_id: string }) => w.workflow_id)).toEqual(["hello"]);
    const wf = await json(await fx.req("GET", "/api/workflows/hello"));
    expect(wf.steps[0]).toMatchObject({
      step_id: "greet",
      mode: "learn_code",
      script: { language: "python" },
    });
    const script = await json(await fx.req("GET", "/api/workflows/hello/scripts/greet"));
    expect(script.source).toContain("greet");
    expect(script.metadata.total_runs).toBe(1);
    expect(script.metadata.current_streak).toBe(1);
    expect(script.evidence.successes).toBe(1);
    const plan = await json(await fx.req("GET", `/api/plans/${started.plan_id}`));
    expect(plan.steps.length).toBeGreaterThanOrEqual(2);
  });

  it("runner tasks: list, detail with rounds and DoD runs, patch", async () => {
    const art = new TaskArtifacts(fx.runnerDir, "fix-calc");
    art.reset();
    art.event("task_started", { title: "Fix calc" });
    art.event("dod_run", { label: "before", passed: false, exit_code: 1 });
    art.round({ round: 1, score: 1, dod_passed: true });
    art.event("dod_run", { label: "round 1", passed: true, exit_code: 0 });
    art.writeText("patch", "--- a/calc.sh\n+++ b/calc.sh\n@@ -1 +1 @@\n-a-b\n+a+b\n");
    art.writeJson("result.json", {
      task_id: "fix-calc",
      status: "passed",
      rounds: 1,
      best_score: 1,
      stop_reason: "dod_passed",
      dod: { passed: true, exit_code: 0 },
    });
    art.status("passed");
    const list = await json(await fx.req("GET", "/api/runner/tasks"));
    expect(list.items).toEqual([
      expect.objectContaining({ task_id: "fix-calc", state: "passed", rounds: 1, dod_passed: true }),
    ]);
    const detail = await json(await fx.req("GET", "/api/runner/tasks/fix-calc"));
    expect(detail.rounds_log).toEqual([{ round: 1, score: 1, dod_passed: true }]);
    expect(detail.dod_runs.map((d: { passed: boolean }) => d.passed)).toEqual([false, true]);
    expect(detail.has_patch).toBe(true);
    const patch = await fx.req("GET", "/api/runner/tasks/fix-calc/patch");
    expect(await patch.text()).toContain("+a+b");
  });
});

describe("extra route groups", () => {
  it("mount with the same token guard, read-only mode and error mapping", async () => {
    const calls: string[] = [];
    const approvals: RouteGroup = (app, { write, ctx }) => {
      app.post("/api/threads/:id/approve", write, (c) => {
        calls.push(c.req.param("id"));
        return c.json({ ok: true, last_event_id: ctx.store.lastEventId() });
      });
    };
    const app = createServerApp({ ctx: fx.ctx, token: TOKEN, extraRoutes: [approvals] });
    const denied = await app.request("/api/threads/t1/approve", { method: "POST" });
    expect(denied.status).toBe(401);
    expect(calls).toEqual([]);
    const ok = await app.request("/api/threads/t1/approve", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.status).toBe(200);
    expect(calls).toEqual(["t1"]);
    const ro = createServerApp({ ctx: fx.ctx, token: TOKEN, readOnly: true, extraRoutes: [approvals] });
    const refused = await ro.request("/api/threads/t2/approve", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(refused.status).toBe(403);
    expect(calls).toEqual(["t1"]);
  });

  it("describe their routes in /openapi.json: every thread route is there with its method and body schema", async () => {
    const prefix = "/api/threads";
    const threads: RouteGroup = (app, kit) => {
      registerThreadRoutes(
        app as unknown as Hono,
        () => {
          throw new Error("no request reaches the service in this test");
        },
        { prefix },
      );
      kit.describe(threadOpenApiPaths(prefix));
    };
    const app = createServerApp({ ctx: fx.ctx, token: TOKEN, extraRoutes: [threads] });
    const doc = (await (await app.request("/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>
      >;
    };
    const threadRoutes = app.routes.filter((r) => r.path.startsWith(prefix) && r.method !== "ALL");
    expect(threadRoutes.length).toBeGreaterThanOrEqual(7);
    for (const r of threadRoutes) {
      const path = r.path.replace(/:id\b/, "{threadId}");
      expect(doc.paths[path]?.[r.method.toLowerCase()], `${r.method} ${r.path}`).toBeDefined();
    }
    const approve = doc.paths[`${prefix}/{threadId}/approve`]?.post?.requestBody?.content["application/json"];
    expect(approve?.schema).toMatchObject({
      type: "object",
      properties: { approval_id: { type: "string" }, always: { type: "boolean" } },
      additionalProperties: false,
    });
    expect(doc.paths["/api/plans"]).toBeDefined();
  });
});
