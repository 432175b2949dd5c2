/**
 * The MCP tools added for everyday use, with the official SDK client over streamable HTTP (the
 * real server) and stdio (`bin/ratchet.js mcp`): every input property described, `list_runs`
 * paging and filtering, `list_plans` refusing what `GET /api/plans` refuses with the same error,
 * `step_apply` and its old name `apply_ops`, and a thread's approval gate decided with
 * `approve` / `deny` (the scripted model drives the thread).
 */
import { existsSync, readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, waitFor } from "../../test/helpers/cli.js";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { runStoreOf } from "../workflow/index.js";
import { type RunningServer, startServer } from "./index.js";

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
type ToolReply = { structuredContent?: Record<string, any>; isError?: boolean };
const call = async (c: Client, name: string, args: Record<string, unknown>) =>
  (await c.callTool({ name, arguments: args })) as ToolReply;

let fx: Awaited<ReturnType<typeof listenFixture>> | undefined;
let kit: Kit | undefined;
let server: RunningServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  server = undefined;
  await kit?.close();
  kit = undefined;
  await fx?.dispose();
  fx = undefined;
});

async function httpClient(url: string): Promise<Client> {
  const client = new Client({ name: "ratchet-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  clients.push(client);
  return client;
}

async function stdioClient(dbPath: string): Promise<Client> {
  const client = new Client({ name: "ratchet-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--db", dbPath, "mcp"],
      stderr: "pipe",
    }),
  );
  clients.push(client);
  return client;
}

/** Every property of a JSON Schema (nested objects and array items too), with its path. */
function properties(schema: unknown, path = ""): { path: string; prop: Record<string, unknown> }[] {
  if (schema === null || typeof schema !== "object") return [];
  const s = schema as { properties?: Record<string, Record<string, unknown>>; items?: unknown };
  const out: { path: string; prop: Record<string, unknown> }[] = [];
  for (const [k, v] of Object.entries(s.properties ?? {}))
    out.push({ path: `${path}${k}`, prop: v }, ...properties(v, `${path}${k}.`));
  if (s.items) out.push(...properties(s.items, `${path}[].`));
  return out;
}

describe("MCP tool schemas", () => {
  it("describe every input property of every tool, over both transports", async () => {
    fx = await listenFixture();
    for (const client of [await httpClient(fx.server.url), await stdioClient(fx.workspace.dbPath)]) {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of [
        "list_runs",
        "start_thread",
        "approve",
        "deny",
        "step_apply",
        "apply_ops",
        "get_thread",
      ])
        expect(names).toContain(n);
      const undescribed = tools.flatMap((t) =>
        properties(t.inputSchema)
          .filter((p) => typeof p.prop.description !== "string" || p.prop.description.trim() === "")
          .map((p) => `${t.name}.${p.path}`),
      );
      expect(undescribed).toEqual([]);
      // The walk saw real schemas (not an empty list that passes trivially).
      expect(tools.reduce((n, t) => n + properties(t.inputSchema).length, 0)).toBeGreaterThan(50);
    }
  });
});

describe("list_runs and list_plans", () => {
  it("pages runs newest first by cursor and filters by status", async () => {
    fx = await listenFixture();
    const runs = runStoreOf(fx.server.ctx.store);
    for (const [i, id] of ["run-a", "run-b", "run-c"].entries())
      runs.startRun(
        {
          run_id: id,
          workflow_id: "wf",
          workflow_path: "/x",
          plan_id: null,
          trigger: "manual",
          group_name: null,
          owner: `1@elsewhere`,
          started_at: `2026-01-0${i + 1}T00:00:00.000Z`,
        },
        [],
      );
    runs.finishRun("run-b", "passed", null);
    const client = await httpClient(fx.server.url);
    const first = await call(client, "list_runs", { limit: 2 });
    expect(first.structuredContent!.items.map((r: { run_id: string }) => r.run_id)).toEqual([
      "run-c",
      "run-b",
    ]);
    const second = await call(client, "list_runs", {
      limit: 2,
      cursor: first.structuredContent!.next_cursor,
    });
    expect(second.structuredContent!.items.map((r: { run_id: string }) => r.run_id)).toEqual(["run-a"]);
    expect(second.structuredContent!.next_cursor).toBeNull();
    const passed = await call(client, "list_runs", { status: "passed" });
    expect(passed.structuredContent!.items.map((r: { run_id: string }) => r.run_id)).toEqual(["run-b"]);
    const notRunning = await call(client, "cancel_run", { run_id: "run-b" });
    expect(notRunning.structuredContent!.error.code).toBe("illegal_transition");
    expect((await call(client, "cancel_run", { run_id: "run-zzz" })).structuredContent!.error.code).toBe(
      "not_found",
    );
    const bad = await call(client, "list_runs", { status: "done" });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent!.error.field).toBe("status");
  });

  it("list_plans refuses what GET /api/plans refuses, with the same code, field and message", async () => {
    fx = await listenFixture();
    const client = await httpClient(fx.server.url);
    const cases: [Record<string, unknown>, string][] = [
      [{ limit: 0 }, "limit=0"],
      [{ limit: 501 }, "limit=501"],
      [{ limit: "ten" }, "limit=ten"],
      [{ status: "DONE" }, "status=DONE"],
      [{ cursor: "not-a-cursor" }, "cursor=not-a-cursor"],
    ];
    for (const [args, query] of cases) {
      const rest = (await (await fetch(`${fx.server.url}/api/plans?${query}`)).json()) as {
        error: { code: string; message: string; field: string };
      };
      const mcp = await call(client, "list_plans", args);
      expect(mcp.isError, query).toBe(true);
      expect(mcp.structuredContent!.error, query).toEqual(rest.error);
    }
    // What a query string cannot say: wrong JSON types, unknown fields.
    for (const [args, field] of [
      [{ cursor: 5 }, "cursor"],
      [{ kind: ["x"] }, "kind"],
      [{ limit: 1.5 }, "limit"],
      [{ page: 2 }, "page"],
    ] as const) {
      const r = await call(client, "list_plans", args);
      expect(r.isError, field).toBe(true);
      expect(r.structuredContent!.error.field).toBe(field);
    }
  });
});

describe("step_apply", () => {
  it("applies a batch with labels, and apply_ops is the same tool", async () => {
    fx = await listenFixture();
    const client = await httpClient(fx.server.url);
    for (const name of ["step_apply", "apply_ops"]) {
      const r = await call(client, name, {
        ops: [
          { op: "publish-plan", as: "p", goal: `batch ${name}`, steps: [{ title: "t", type: "THINKING" }] },
          { op: "start-step", step_id: "{{p.step_ids.0}}" },
          { op: "complete-step", step_id: "{{p.step_ids.0}}", summary: "done" },
        ],
      });
      expect(r.isError, name).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ applied: 3, failed: 0, exit_status: 0 });
    }
    const bad = await call(client, "step_apply", { ops: "nope" });
    expect(bad.structuredContent!.error.field).toBe("ops");
    const stop = await call(client, "step_apply", {
      ops: [
        { op: "start-step", step_id: "st-missing" },
        { op: "publish-plan", goal: "g", steps: [] },
      ],
      stop_on_error: true,
    });
    expect(stop.structuredContent).toMatchObject({ applied: 0, failed: 1 });
    expect(stop.structuredContent!.exit_status).toBe(3);
  });
});

describe("threads over MCP", () => {
  it("start_thread waits at the approval gate; approve runs the call, deny refuses it", async () => {
    fx = await listenFixture();
    kit = await makeKit(
      {
        turns: [
          { tool_calls: [{ id: "a1", name: "append", arguments: { line: "approved line" } }] },
          { text: "appended" },
          { tool_calls: [{ id: "d1", name: "append", arguments: { line: "denied line" } }] },
          { text: "denied, stopped" },
        ],
      },
      {
        dir: fx.workspace.dir,
        threads: {
          policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
        },
      },
    );
    const k = kit;
    server = await startServer({ workspace: fx.workspace, port: 0, token: TOKEN, threads: () => k.svc });
    const client = await httpClient(server.url);
    const state = (id: string) => k.svc.threads.require(id).state;

    const started = await call(client, "start_thread", { goal: "append a line" });
    expect(started.isError).toBeFalsy();
    const a = started.structuredContent!.thread_id as string;
    await waitFor(() => state(a) === "waiting", `thread a waiting`);
    const shown = await call(client, "get_thread", { thread_id: a });
    expect(shown.structuredContent!.approvals).toHaveLength(1);
    const ok = await call(client, "approve", { thread_id: a, reason: "fine" });
    expect(ok.structuredContent).toMatchObject({ ok: true, approval: { status: "approved" } });
    await waitFor(() => state(a) === "done", `thread a done`);
    expect(readFileSync(k.appendFile, "utf8")).toBe("approved line\n");
    // Deciding it again is refused by the approval's state machine.
    const again = await call(client, "deny", { thread_id: a });
    expect(again.isError).toBe(true);
    expect(again.structuredContent!.error.code).toBe("illegal_transition");

    const b = (await call(client, "start_thread", { goal: "append another" })).structuredContent!
      .thread_id as string;
    await waitFor(() => state(b) === "waiting", `thread b waiting`);
    const no = await call(client, "deny", { thread_id: b, reason: "not today" });
    expect(no.structuredContent).toMatchObject({ ok: true, approval: { status: "denied" } });
    await waitFor(() => state(b) === "done", `thread b done`);
    expect(readFileSync(k.appendFile, "utf8")).toBe("approved line\n");

    for (const [args, field] of [
      [{ thread_id: "th-nope" }, undefined],
      [{ thread_id: a, always: "yes" }, "always"],
      [{ thread_id: a, extra: 1 }, "extra"],
      [{}, "thread_id"],
    ] as const) {
      const r = await call(client, "approve", args);
      expect(r.isError).toBe(true);
      if (field) expect(r.structuredContent!.error.field).toBe(field);
      else expect(r.structuredContent!.error.code).toBe("not_found");
    }
    expect((await call(client, "start_thread", { goal: "" })).structuredContent!.error.field).toBe("goal");
  });

  it("a server without threads answers the thread tools with not_found, and read-only refuses them", async () => {
    fx = await listenFixture();
    const client = await httpClient(fx.server.url);
    const r = await call(client, "start_thread", { goal: "g" });
    expect(r.structuredContent!.error).toMatchObject({ code: "not_found" });
    expect(existsSync(fx.workspace.dbPath)).toBe(true);
    server = await startServer({ workspace: fx.workspace, port: 0, token: TOKEN, readOnly: true });
    const ro = await httpClient(server.url);
    for (const name of ["start_thread", "approve", "deny", "step_apply"])
      expect((await call(ro, name, {})).structuredContent!.error.code).toBe("read_only");
  });
});
