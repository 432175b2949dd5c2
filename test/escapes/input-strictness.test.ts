/**
 * Input strictness, attacked the way a script would: prototype keys (`__proto__`, `constructor`,
 * `prototype`) anywhere in a JSON/YAML input, invalid UTF-8 in a file or on stdin, free-text fields
 * over their documented limit (a 10 MB `agent_input`), a metric naming an unregistered project,
 * and MCP `list_plans` arguments REST refuses. Through the built CLI, a real `ratchet serve` (raw
 * HTTP) and the official MCP SDK client. Every refusal names the field, exits with its documented
 * status (2 bad input, 3 not found; HTTP 400/404), and the store is unchanged (every row compared).
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  assertBuilt,
  BIN,
  dump,
  makeWorkspace,
  publish,
  ROOT,
  type RunningCli,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const TOKEN = "strictness-test-token-0123456789";
const KIB = 1024;
/** MAX_TEXT_CHARS (docs/plans.md): 64 KiB. */
const TEXT_LIMIT = 64 * KIB;
/** MAX_LOG_TEXT_CHARS (docs/plans.md): 4 MiB. */
const LOG_LIMIT = 4 * KIB * KIB;

let ws: TestWorkspace;
let planId: string;
/** PENDING, THINKING */
let pending: string;
/** IN_PROGRESS */
let running: string;

beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-strict-");
  const p = await publish(ws, {
    goal: "strictness",
    steps: [
      { title: "a", type: "THINKING" },
      { title: "b", type: "THINKING" },
    ],
  });
  planId = p.plan_id;
  [pending, running] = p.step_ids as [string, string];
  const start = await ws.run(["step", "start", "-"], { input: JSON.stringify({ step_id: running }) });
  expect(start.status).toBe(0);
  const add = await ws.run(["project", "add", "known"]);
  expect(add.status).toBe(0);
});
afterAll(() => ws?.remove());

/** Runs the CLI with `stdin` (bytes or text) and asserts: status, field on the marker, store unchanged. */
async function refused(
  args: string[],
  stdin: string | Buffer,
  expected: { status: number; field: string; code?: string; marker?: false },
) {
  const before = dump(ws);
  const run = startRatchet(args, { cwd: ws.dir, holdStdin: true });
  // The helper writes strings; raw bytes go through unchanged.
  run.release(stdin as string);
  const r = await run.done;
  expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(expected.status);
  // Write flows end stdout with an ok:false marker; the runner and `run` say it on stderr only.
  if (expected.marker !== false) {
    expect(r.marker?.ok).toBe(false);
    expect(r.marker?.field).toBe(expected.field);
    if (expected.code) expect(r.marker?.code).toBe(expected.code);
  }
  expect(r.stderr).toContain(expected.field);
  expect(dump(ws)).toEqual(before);
  return r;
}

const plan = (extra: Record<string, unknown> = {}) => ({
  goal: "g",
  steps: [{ title: "t", type: "THINKING" }],
  ...extra,
});
/** JSON text with a literal `"__proto__"` key (an object literal would set the prototype instead). */
const withKey = (json: string, key: string, value = '{"agent_input":"via the prototype"}') =>
  json.replace(/^\{/, `{"${key}":${value},`);

describe("CLI write flows", () => {
  it("__proto__ at the top of a write flow (it would feed fields through the prototype)", async () => {
    await refused(["step", "start", "-"], withKey(JSON.stringify({ step_id: pending }), "__proto__"), {
      status: 2,
      field: "__proto__",
      code: "schema_violation",
    });
  });

  it("constructor and prototype keys, nested", async () => {
    const nested = JSON.stringify(plan()).replace('{"title":"t"', '{"constructor":{},"title":"t"');
    await refused(["plan", "publish", "-"], nested, { status: 2, field: "steps[0].constructor" });
    await refused(["plan", "publish", "-"], withKey(JSON.stringify(plan()), "prototype", "1"), {
      status: 2,
      field: "prototype",
    });
  });

  it("a YAML plan with a __proto__ mapping", async () => {
    const yaml = "goal: g\nsteps:\n  - title: t\n    type: THINKING\n    __proto__:\n      description: x\n";
    await refused(["plan", "publish", "-"], yaml, { status: 2, field: "steps[0].__proto__" });
  });

  it("a prototype key in one line of step apply fails that line and writes nothing", async () => {
    const line = withKey(JSON.stringify({ op: "record-metric", name: "m", value: 1 }), "__proto__", "{}");
    const before = dump(ws);
    const run = startRatchet(["step", "apply", "-"], { cwd: ws.dir, input: `${line}\n` });
    const r = await run.done;
    expect(r.status).toBe(2);
    expect(r.lines[0]).toContain('"field":"__proto__"');
    expect(dump(ws)).toEqual(before);
  });

  it("invalid UTF-8 on stdin and in a file", async () => {
    const bad = Buffer.concat([
      Buffer.from('{"goal":"caf'),
      Buffer.from([0xc3, 0x28]), // a lead byte without its continuation
      Buffer.from('","steps":[{"title":"t","type":"THINKING"}]}'),
    ]);
    const r = await refused(["plan", "publish", "-"], bad, {
      status: 2,
      field: "input",
      code: "malformed_input",
    });
    expect(r.stderr).toMatch(/not valid UTF-8 .*offset 12/);
    const file = join(ws.dir, "latin1.json");
    writeFileSync(file, Buffer.from(`{"step_id":"${pending}","agent_input":"na\xefve"}`, "latin1"));
    await refused(["step", "start", file], "", { status: 2, field: "input", code: "malformed_input" });
    // An overlong encoding of "/" and a lone surrogate are invalid too.
    for (const bytes of [
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
    ])
      await refused(
        ["step", "log", "-"],
        Buffer.concat([
          Buffer.from(`{"step_id":"${running}","text":"`),
          Buffer.from(bytes),
          Buffer.from('"}'),
        ]),
        { status: 2, field: "input" },
      );
  });

  it("a 10 MB agent_input (limit 64 KiB) and every other free-text field over its limit", async () => {
    const big = "x".repeat(10 * 1000 * 1000);
    await refused(["step", "start", "-"], JSON.stringify({ step_id: pending, agent_input: big }), {
      status: 2,
      field: "agent_input",
      code: "schema_violation",
    });
    const over = "y".repeat(TEXT_LIMIT + 1);
    const overLog = "z".repeat(LOG_LIMIT + 1);
    const cases: [string[], Record<string, unknown>, string][] = [
      [["step", "complete"], { step_id: running, agent_output: over }, "agent_output"],
      [["step", "complete"], { step_id: running, summary: over }, "summary"],
      [["step", "complete"], { step_id: running, log_context: overLog }, "log_context"],
      [["step", "fail"], { step_id: running, reason: over }, "reason"],
      [["step", "log"], { step_id: running, text: overLog }, "text"],
      [["step", "run"], { step_id: pending, type: "COMMAND", command: `echo ${over}` }, "command"],
      [["plan", "publish"], plan({ goal: over }), "goal"],
      [
        ["plan", "publish"],
        plan({ steps: [{ title: "t", type: "THINKING", description: over }] }),
        "steps[0].description",
      ],
      [["metric", "record"], { name: "m", value: 1, unit: "u".repeat(101) }, "unit"],
      [["plan", "abandon"], { plan_id: planId, reason: over }, "reason"],
    ];
    for (const [args, input, field] of cases)
      await refused([...args, "-"], JSON.stringify(input), { status: 2, field });
  });

  it("a field at its limit is accepted (the limit is the documented one, not lower)", async () => {
    const r = await ws.run(["step", "log", "-"], {
      input: JSON.stringify({ step_id: running, text: "w".repeat(TEXT_LIMIT * 2) }),
    });
    expect(r.status).toBe(0);
  });

  it("record-metric with an unregistered project is refused like publish (exit 3)", async () => {
    const metric = await refused(
      ["metric", "record", "-"],
      JSON.stringify({ name: "m", value: 1, project: "nope" }),
      {
        status: 3,
        field: "project",
        code: "project_not_found",
      },
    );
    const pub = await refused(["plan", "publish", "-"], JSON.stringify(plan({ project: "nope" })), {
      status: 3,
      field: "project",
      code: "project_not_found",
    });
    expect(metric.marker?.exit_status).toBe(pub.marker?.exit_status);
    const ok = await ws.run(["metric", "record", "-"], {
      input: JSON.stringify({ name: "m", value: 1, project: "known" }),
    });
    expect(ok.status).toBe(0);
  });
});

describe("spec files", () => {
  it("a task spec with a __proto__ key", async () => {
    const spec = join(ws.dir, "task.json");
    writeFileSync(spec, '{"__proto__":{"repo":"/"},"task":"t"}');
    await refused(["runner", "dry-run", spec], "", { status: 2, field: "__proto__", marker: false });
  });

  it("a workflow file with a __proto__ group", async () => {
    const dir = join(ws.dir, "flows", "hello");
    cpSync(join(ROOT, "examples", "workflows", "hello"), dir, { recursive: true });
    const file = join(dir, "workflow.yaml");
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace("groups:\n", "groups:\n  __proto__:\n    language: fr\n"),
    );
    await refused(["run", dir], "", { status: 2, field: "groups.__proto__", marker: false });
  });

  it("a workflow file that is not UTF-8", async () => {
    const dir = join(ws.dir, "flows", "latin");
    cpSync(join(ROOT, "examples", "workflows", "hello"), dir, { recursive: true });
    const file = join(dir, "workflow.yaml");
    writeFileSync(file, Buffer.from(readFileSync(file, "utf8").replace("Greet", "Gr\xfc\xdfe"), "latin1"));
    await refused(["run", dir], "", { status: 2, field: "UTF-8", marker: false });
  });
});

describe("HTTP and MCP", () => {
  let serve: RunningCli;
  let url: string;
  let client: Client;

  beforeAll(async () => {
    serve = startRatchet(["serve", "--port", "0", "--token", TOKEN, "--quiet"], { cwd: ws.dir });
    await waitFor(() => serve.stdoutSoFar().includes("\n"), "serve to print its address");
    url = (JSON.parse(serve.stdoutSoFar().split("\n")[0]!) as { url: string }).url;
    client = new Client({ name: "strictness", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    serve?.child.kill("SIGTERM");
    await serve?.done.catch(() => undefined);
  });

  const post = (path: string, body: string | Buffer) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body,
    });
  async function httpRefused(path: string, body: string | Buffer, status: number, field: string) {
    const before = dump(ws);
    const res = await post(path, body);
    const json = (await res.json()) as { ok: boolean; error: { code: string; field?: string } };
    expect(res.status, `${path} ${JSON.stringify(json)}`).toBe(status);
    expect(json.ok).not.toBe(true);
    expect(json.error.field).toBe(field);
    expect(dump(ws)).toEqual(before);
    return json;
  }

  it("HTTP bodies: prototype keys, invalid UTF-8, over-long fields, unregistered project", async () => {
    await httpRefused(
      "/api/flows/start-step",
      withKey(JSON.stringify({ step_id: pending }), "__proto__"),
      400,
      "__proto__",
    );
    await httpRefused(
      "/api/flows/publish-plan",
      JSON.stringify(plan()).replace('{"title":"t"', '{"constructor":1,"title":"t"'),
      400,
      "steps[0].constructor",
    );
    await httpRefused(
      "/api/flows/publish-plan",
      Buffer.concat([Buffer.from('{"goal":"'), Buffer.from([0xff]), Buffer.from('","steps":[]}')]),
      400,
      "body",
    );
    await httpRefused(
      "/api/flows/start-step",
      JSON.stringify({ step_id: pending, agent_input: "x".repeat(TEXT_LIMIT + 1) }),
      400,
      "agent_input",
    );
    await httpRefused(
      "/api/flows/record-metric",
      JSON.stringify({ name: "m", value: 1, project: "nope" }),
      404,
      "project",
    );
    await httpRefused(
      "/api/runs",
      '{"workflow":"flows/hello","vars":{"__proto__":{"names":"x"}}}',
      400,
      "vars.__proto__",
    );
    await httpRefused("/api/threads", '{"goal":"g","prototype":{}}', 400, "prototype");
  });

  type ToolReply = {
    isError?: boolean;
    structuredContent?: { ok?: boolean; error?: { code: string; field?: string; message: string } };
  };
  async function mcpRefused(name: string, args: Record<string, unknown>, field: string, code?: string) {
    const before = dump(ws);
    const r = (await client.callTool({ name, arguments: args })) as ToolReply;
    expect(r.isError, JSON.stringify(r)).toBe(true);
    expect(r.structuredContent?.error?.field).toBe(field);
    if (code) expect(r.structuredContent?.error?.code).toBe(code);
    expect(dump(ws)).toEqual(before);
    return r.structuredContent!.error!;
  }

  it("MCP tool arguments: prototype keys, over-long fields, unregistered project", async () => {
    const proto = JSON.parse(`{"step_id":"${pending}","__proto__":{"agent_input":"via the prototype"}}`);
    await mcpRefused("start_step", proto, "__proto__", "schema_violation");
    await mcpRefused("start_step", JSON.parse(`{"step_id":"${pending}","constructor":{}}`), "constructor");
    await mcpRefused(
      "start_step",
      { step_id: pending, agent_input: "x".repeat(TEXT_LIMIT + 1) },
      "agent_input",
    );
    await mcpRefused(
      "record_metric",
      { name: "m", value: 1, project: "nope" },
      "project",
      "project_not_found",
    );
    await mcpRefused(
      "start_run",
      JSON.parse('{"workflow":"flows/hello","vars":{"__proto__":{}}}'),
      "vars.__proto__",
    );
  });

  it("an MCP body over 4 MiB is refused before it is parsed", async () => {
    const args = { step_id: pending, agent_input: "x".repeat(5 * KIB * KIB) };
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "start_step", arguments: args },
    });
    const before = dump(ws);
    const res = await fetch(`${url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { field: string } }).error.field).toBe("body");
    expect(dump(ws)).toEqual(before);
  });

  it("MCP list_plans validates limit and status exactly as GET /api/plans does", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ limit: 0 }, "limit=0", "limit"],
      [{ limit: 501 }, "limit=501", "limit"],
      [{ limit: 2.5 }, "limit=2.5", "limit"],
      [{ limit: -1 }, "limit=-1", "limit"],
      [{ status: "bogus" }, "status=bogus", "status"],
    ];
    for (const [args, query, field] of cases) {
      const rest = await fetch(`${url}/api/plans?${query}`);
      const restBody = (await rest.json()) as { error: { code: string; field: string; message: string } };
      expect(rest.status).toBe(400);
      const mcp = await mcpRefused("list_plans", args, field);
      expect(mcp).toEqual(restBody.error);
    }
    await mcpRefused("list_plans", { status: 7 }, "status", "usage");
    await mcpRefused("list_plans", { limit: "ten" }, "limit", "usage");
    await mcpRefused("list_plans", { cursor: "x" }, "cursor");
    const ok = (await client.callTool({
      name: "list_plans",
      arguments: { limit: 1, status: "IN_PROGRESS" },
    })) as {
      isError?: boolean;
      structuredContent?: { items: unknown[] };
    };
    expect(ok.isError).toBeFalsy();
    expect(ok.structuredContent?.items.length).toBeLessThanOrEqual(1);
  });
});

describe("ratchet mcp (stdio)", () => {
  it("refuses prototype keys in tool arguments like /mcp does, and writes nothing", async () => {
    const client = new Client({ name: "strictness-stdio", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--db", ws.dbPath, "mcp"],
        stderr: "pipe",
      }),
    );
    try {
      const before = dump(ws);
      for (const [args, field] of [
        [JSON.parse(`{"step_id":"${pending}","__proto__":{"agent_input":"via the prototype"}}`), "__proto__"],
        [JSON.parse(`{"step_id":"${pending}","agent_input":"a","constructor":{}}`), "constructor"],
      ] as const) {
        const r = (await client.callTool({ name: "start_step", arguments: args })) as {
          isError?: boolean;
          structuredContent?: { error?: { field?: string } };
        };
        expect(r.isError).toBe(true);
        expect(r.structuredContent?.error?.field).toBe(field);
      }
      const list = (await client.callTool({ name: "list_plans", arguments: { limit: 0 } })) as {
        isError?: boolean;
        structuredContent?: { error?: { field?: string } };
      };
      expect(list.structuredContent?.error?.field).toBe("limit");
      expect(dump(ws)).toEqual(before);
    } finally {
      await client.close();
    }
  });
});
