/**
 * The MCP endpoint with the official SDK client: publish a plan, complete its steps and read the
 * plan back through `/mcp`; refusals come back as tool errors with the CLI's marker; no token is
 * 401. `ratchet mcp` (stdio, the built CLI) lists the same tools.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN } from "../../test/helpers/cli.js";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { OP_NAMES } from "../ledger/index.js";
import { toolNameOf } from "./index.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

async function connect(token = TOKEN) {
  const client = new Client({ name: "ratchet-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${fx.server.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
type ToolReply = { structuredContent?: Record<string, any>; isError?: boolean };
const call = async (c: Client, name: string, args: Record<string, unknown>) =>
  (await c.callTool({ name, arguments: args })) as ToolReply;

describe("MCP over streamable HTTP", () => {
  it("publishes a plan, completes its steps and reads the plan", async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const op of OP_NAMES) expect(names).toContain(toolNameOf(op));
      for (const n of ["start_run", "get_plan", "list_plans", "get_run", "runner_status"])
        expect(names).toContain(n);
      const publishTool = tools.find((t) => t.name === "publish_plan")!;
      expect(publishTool.inputSchema.required).toEqual(expect.arrayContaining(["goal", "steps"]));

      const pub = await call(client, "publish_plan", {
        goal: "through MCP",
        steps: [
          { title: "think", type: "THINKING" },
          { title: "list files", type: "COMMAND" },
        ],
      });
      expect(pub.isError).toBeFalsy();
      const { plan_id, step_ids } = pub.structuredContent!.result as { plan_id: string; step_ids: string[] };
      expect(pub.structuredContent!.marker).toMatchObject({ ok: true, op: "publish-plan", plan_id });

      await call(client, "start_step", { step_id: step_ids[0] });
      const done = await call(client, "complete_step", { step_id: step_ids[0], summary: "thought" });
      expect(done.isError).toBeFalsy();
      const ran = await call(client, "run_step", {
        step_id: step_ids[1],
        type: "COMMAND",
        command: "echo hi",
      });
      expect(ran.structuredContent!.result.exit_code).toBe(0);

      const refused = await call(client, "complete_step", { step_id: step_ids[0] });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent!.marker).toMatchObject({ ok: false, accepted: false });
      const bad = await call(client, "start_step", { step_id: 5 });
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent!.error.field).toBe("step_id");

      const plan = await call(client, "get_plan", { plan_id });
      const steps = plan.structuredContent!.steps as { step_id: string; status: string }[];
      expect(steps.filter((s) => step_ids.slice(0, 2).includes(s.step_id)).map((s) => s.status)).toEqual([
        "COMPLETED",
        "COMPLETED",
      ]);
      const list = await call(client, "list_plans", {});
      expect(list.structuredContent!.items[0].plan_id).toBe(plan_id);
      const runner = await call(client, "runner_status", {});
      expect(runner.structuredContent!.items).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it("refuses a client without the token", async () => {
    await expect(connect("wrong-token-wrong-token")).rejects.toThrow(/401|nauthorized/);
    expect(fx.server.ctx.store.lastEventId()).toBe(0);
  });
});

describe("MCP in read-only mode", () => {
  it("refuses the write tools and still answers reads", async () => {
    const { startServer } = await import("./index.js");
    const ro = await startServer({ workspace: fx.workspace, port: 0, token: TOKEN, readOnly: true });
    const client = new Client({ name: "ratchet-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${ro.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const pub = await call(client, "publish_plan", {
        goal: "g",
        steps: [{ title: "t", type: "THINKING" }],
      });
      expect(pub.isError).toBe(true);
      expect(pub.structuredContent!.error.code).toBe("read_only");
      expect((await call(client, "list_plans", {})).structuredContent!.items).toEqual([]);
      expect(ro.ctx.store.lastEventId()).toBe(0);
    } finally {
      await client.close();
      await ro.close();
    }
  });
});

describe("ratchet mcp (stdio)", () => {
  it("serves the same tools to a client that launches it", async () => {
    const client = new Client({ name: "ratchet-test", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--db", fx.workspace.dbPath, "mcp"],
      stderr: "pipe",
    });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("publish_plan");
      const pub = (await client.callTool({
        name: "publish_plan",
        arguments: { goal: "stdio", steps: [{ title: "t", type: "THINKING" }] },
      })) as ToolReply;
      expect(pub.isError).toBeFalsy();
      expect(fx.server.ctx.store.getPlan(pub.structuredContent!.result.plan_id)).toBeDefined();
    } finally {
      await client.close();
    }
  });
});
