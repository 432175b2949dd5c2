/**
 * MCP resources and prompts with the official SDK client over streamable HTTP (the real server)
 * and stdio (`bin/ratchet.js mcp`): templates, a paged and bounded list, every listed URI readable,
 * unknown and foreign URIs refused; the ledger-protocol prompt generated from FLOWS; the
 * start-workflow-run prompt's body accepted as is by `start_run`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN, waitFor } from "../../test/helpers/cli.js";
import { makeServerFixture, type ServerFixture, TOKEN } from "../../test/helpers/server.js";
import { FLOWS } from "../ledger/index.js";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { type RunningServer, startServer, toolNameOf } from "./index.js";
import { RESOURCE_PAGE } from "./mcp-resources.js";

let fx: ServerFixture;
let kit: Kit;
let server: RunningServer;
const clients: Client[] = [];
beforeEach(async () => {
  fx = makeServerFixture();
  kit = await makeKit({ turns: [] }, { dir: fx.workspace.dir });
  server = await startServer({
    workspace: fx.workspace,
    port: 0,
    token: TOKEN,
    workflows: [fx.helloDir],
    threads: () => kit.svc,
  });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server.close();
  await kit.close();
  fx.dispose();
});

async function clientsBoth(): Promise<Client[]> {
  const http = new Client({ name: "ratchet-test", version: "1.0.0" });
  await http.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  const stdio = new Client({ name: "ratchet-test", version: "1.0.0" });
  await stdio.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "--db", fx.workspace.dbPath, "mcp", "--workflow", fx.helloDir],
      stderr: "pipe",
    }),
  );
  clients.push(http, stdio);
  return [http, stdio];
}

async function listAll(c: Client): Promise<{ uris: string[]; pages: number[] }> {
  const uris: string[] = [];
  const pages: number[] = [];
  let cursor: string | undefined;
  do {
    const r = await c.listResources(cursor ? { cursor } : {});
    uris.push(...r.resources.map((x) => x.uri));
    pages.push(r.resources.length);
    cursor = r.nextCursor;
  } while (cursor);
  return { uris, pages };
}

describe("MCP resources", () => {
  it("lists plans, runs, threads and learned scripts by page, newest first, and reads each", async () => {
    const plans: string[] = [];
    for (let i = 0; i < RESOURCE_PAGE + 3; i++)
      plans.push(
        fx.ctx.ledger.publish({ goal: `plan ${i}`, steps: [{ title: "t", type: "THINKING" }] }).plan_id,
      );
    const thread = kit.svc.create("a thread to read").thread_id;
    const [http, stdio] = await clientsBoth();
    const run = (await http!.callTool({ name: "start_run", arguments: { workflow: fx.helloDir } }))
      .structuredContent as { run_id: string };
    await waitFor(() => fx.ctx.runs.getRun(run.run_id)?.status !== "running", "the hello run to end");

    for (const c of [http!, stdio!]) {
      const { resourceTemplates } = await c.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
        "ratchet://plan/{plan_id}",
        "ratchet://run/{run_id}",
        "ratchet://thread/{thread_id}",
        "ratchet://script/{workflow_id}/{step_id}",
      ]);
      const { uris, pages } = await listAll(c);
      expect(Math.max(...pages)).toBeLessThanOrEqual(RESOURCE_PAGE);
      expect(uris).toContain(`ratchet://run/${run.run_id}`);
      expect(uris).toContain(`ratchet://thread/${thread}`);
      expect(uris).toContain("ratchet://script/hello/greet");
      expect(uris).toContain("ratchet://script/hello/summarise");
      // Every plan once (the run's own plan too), newest first.
      const planUris = uris.filter((u) => u.startsWith("ratchet://plan/"));
      expect(new Set(planUris).size).toBe(planUris.length);
      const ours = planUris.filter((u) => plans.includes(u.slice("ratchet://plan/".length)));
      expect(ours).toHaveLength(plans.length);
      const created = planUris.map(
        (u) => fx.ctx.store.getPlan(u.slice("ratchet://plan/".length))!.created_at,
      );
      expect(created).toEqual([...created].sort().reverse());

      const read = async (uri: string) => {
        const r = await c.readResource({ uri });
        expect(r.contents[0]!.mimeType).toBe("application/json");
        return JSON.parse(String((r.contents[0] as { text: string }).text)) as Record<string, unknown>;
      };
      expect(((await read(`ratchet://plan/${plans[0]}`)).plan as { goal: string }).goal).toBe("plan 0");
      expect(((await read(`ratchet://run/${run.run_id}`)).run as { status: string }).status).toBe("passed");
      expect(((await read(`ratchet://thread/${thread}`)).thread as { goal: string }).goal).toBe(
        "a thread to read",
      );
      const script = await read("ratchet://script/hello/greet");
      expect(script).toMatchObject({ workflow_id: "hello", step_id: "greet", language: "python" });
      expect(script.source).toBe(readFileSync(join(fx.helloDir, "learnings", "greet", "main.py"), "utf8"));
    }
  });

  it("refuses unknown ids, foreign URIs, path tricks and forged cursors", async () => {
    const [http, stdio] = await clientsBoth();
    for (const c of [http!, stdio!]) {
      for (const uri of ["ratchet://plan/pl-nope", "ratchet://run/run-nope", "ratchet://script/hello/nope"])
        await expect(c.readResource({ uri }), uri).rejects.toThrow(/not found|no step/);
      for (const uri of [
        "file:///etc/passwd",
        "ratchet://plan/a/b",
        "ratchet://script/hello",
        "ratchet://script/hello/..%2F..%2Fetc",
        "ratchet://secret/x",
      ])
        await expect(c.readResource({ uri }), uri).rejects.toThrow();
      await expect(c.listResources({ cursor: "forged" })).rejects.toThrow(/cursor/);
      await expect(c.listResources({ cursor: Buffer.from('[9,""]').toString("base64url") })).rejects.toThrow(
        /cursor/,
      );
    }
  });
});

describe("MCP prompts", () => {
  it("ledger-protocol names every flow's tool and refusal, in protocol order", async () => {
    const [http, stdio] = await clientsBoth();
    for (const c of [http!, stdio!]) {
      const { prompts } = await c.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(["ledger-protocol", "start-workflow-run"]);
      const r = await c.getPrompt({ name: "ledger-protocol" });
      const text = (r.messages[0]!.content as { text: string }).text;
      for (const f of FLOWS) {
        expect(text).toContain(`\`${toolNameOf(f.op)}\` (op \`${f.op}\``);
        for (const ref of f.refusals)
          expect(text).toContain(`\`${ref.code}\` (exit ${ref.exit}) when ${ref.when}`);
      }
      const order = [
        "publish_plan",
        "start_step",
        "run_step",
        "complete_step",
        "deviate",
        "agent_review_close",
      ].map((t) => text.indexOf(`\`${t}\``));
      expect(order).toEqual([...order].sort((a, b) => a - b));
      await expect(c.getPrompt({ name: "ledger-protocol", arguments: { x: "1" } })).rejects.toThrow(
        /unknown argument/,
      );
    }
  });

  it("start-workflow-run builds a start_run body that start_run accepts; bad variables are refused", async () => {
    const [http, stdio] = await clientsBoth();
    for (const c of [http!, stdio!]) {
      const r = await c.getPrompt({
        name: "start-workflow-run",
        arguments: { workflow: fx.helloDir, variables: "names=Ada,Grace" },
      });
      const text = (r.messages[0]!.content as { text: string }).text;
      const body = JSON.parse(/exactly: (\{.*\})/.exec(text)![1]!) as Record<string, unknown>;
      expect(body).toEqual({ workflow: fx.helloDir, vars: { names: "Ada,Grace" } });
      const two = await c.getPrompt({
        name: "start-workflow-run",
        arguments: { workflow: "w", variables: "a=1, b=x,y\nc=3" },
      });
      expect((two.messages[0]!.content as { text: string }).text).toContain(
        '"vars":{"a":"1","b":"x,y","c":"3"}',
      );
      const json = await c.getPrompt({
        name: "start-workflow-run",
        arguments: { workflow: "flows/x", variables: '{"names": "Ada,Grace"}' },
      });
      expect((json.messages[0]!.content as { text: string }).text).toContain('"vars":{"names":"Ada,Grace"}');
      for (const variables of ["justtext", '{"a": 1}', '{"__proto__": {"x": "1"}}', "1bad=x"])
        await expect(
          c.getPrompt({ name: "start-workflow-run", arguments: { workflow: "w", variables } }),
          variables,
        ).rejects.toThrow(/variables/);
      await expect(c.getPrompt({ name: "start-workflow-run", arguments: {} })).rejects.toThrow(/workflow/);
      await expect(c.getPrompt({ name: "nope" })).rejects.toThrow(/no prompt/);
    }
    const started = await http!.callTool({
      name: "start_run",
      arguments: { workflow: fx.helloDir, vars: { names: "Ada" } },
    });
    expect(started.isError).toBeFalsy();
  });
});
