/**
 * `/mcp` answers a plain `tools/call` without the SDK's transport (routes/mcp.ts). These tests hold
 * it to the SDK: every request of a corpus — plain calls that take the shortcut and near misses
 * that must not (batches, `_meta`, a refused argument, headers the transport refuses, ids and
 * params its schemas refuse) — is sent to the listening server and to the SDK alone (a fresh
 * `createMcpServer` on the same context behind the SDK's own stateless JSON transport, as the route
 * served every request before), and the two replies must be the same status, content type and
 * bytes. A write runs on its own fresh step on each side, so ids and times are normalised. Then the
 * guards in front of the route: no token, a foreign Host or Origin, read-only — nothing written.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { startServer } from "./index.js";
import { createMcpServer } from "./mcp-server.js";
import { argumentRefusals } from "./mcp-tools.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

interface Reply {
  status: number;
  type: string | null;
  text: string;
}

const HEADERS: Record<string, string> = {
  authorization: `Bearer ${TOKEN}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

/** Through the listening server (the route, shortcut or not). */
async function viaRoute(body: string, headers: Record<string, string>): Promise<Reply> {
  const r = await fetch(`${fx.server.url}/mcp`, { method: "POST", headers, body });
  return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
}

/** Through the SDK alone: what the route did for every request before the shortcut. */
async function viaSdk(body: string, headers: Record<string, string>): Promise<Reply> {
  let parsedBody: unknown;
  try {
    parsedBody = JSON.parse(body);
  } catch {
    parsedBody = undefined;
  }
  const refusals = parsedBody === undefined ? new Map() : argumentRefusals(parsedBody);
  const server = createMcpServer(fx.server.ctx, { refusals });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const r = await transport.handleRequest(
      new Request(`${fx.server.url}/mcp`, { method: "POST", headers, body }),
      parsedBody !== undefined ? { parsedBody } : undefined,
    );
    return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
  } finally {
    await server.close();
  }
}

/** `n` fresh THINKING steps of one new plan, published through the route. */
async function freshSteps(n: number): Promise<string[]> {
  const r = await viaRoute(
    call(1, "publish_plan", {
      goal: "fast path",
      steps: Array.from({ length: n }, () => ({ title: "same", type: "THINKING" })),
    }),
    HEADERS,
  );
  const reply = JSON.parse(r.text) as { result: { structuredContent: { result: { step_ids: string[] } } } };
  return reply.result.structuredContent.result.step_ids;
}

const call = (id: unknown, name: unknown, args?: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, ...(args === undefined ? {} : { arguments: args }) },
    ...extra,
  });

/** Ids, times and durations of a write differ between its two runs; nothing else may. */
function normalise(text: string, stepId: string): string {
  return text
    .replaceAll(stepId, "<step>")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
    .replace(/\\?"(event_id|duration_ms)\\?":\d+/g, '"$1":<n>');
}

/** Each case: a body with `$STEP` standing for a fresh step, and its headers. */
const CASES: [string, string, Record<string, string>][] = [
  // Plain calls: the shortcut.
  ["start_step on a fresh step", call(7, "start_step", { step_id: "$STEP" }), HEADERS],
  ["a string id", call("abc", "start_step", { step_id: "$STEP" }), HEADERS],
  ["a step that does not exist", call(2, "start_step", { step_id: "nope" }), HEADERS],
  ["the step id missing", call(3, "start_step", {}), HEADERS],
  ["the step id of the wrong type", call(4, "start_step", { step_id: 5 }), HEADERS],
  ["an unknown argument", call(5, "start_step", { step_id: "$STEP", colour: "red" }), HEADERS],
  ["no arguments key", call(6, "start_step"), HEADERS],
  ["an unknown tool", call(8, "no_such_tool", {}), HEADERS],
  ["a read tool", call(9, "list_plans", {}), HEADERS],
  [
    "a supported protocol version",
    call(10, "start_step", { step_id: "$STEP" }),
    {
      ...HEADERS,
      "mcp-protocol-version": "2025-06-18",
    },
  ],
  // Near misses: the SDK.
  [
    "a batch of two calls",
    `[${call(11, "start_step", { step_id: "nope" })},${call(12, "list_plans", {})}]`,
    HEADERS,
  ],
  [
    "params with _meta",
    JSON.stringify({
      jsonrpc: "2.0",
      id: 13,
      method: "tools/call",
      params: { name: "start_step", arguments: { step_id: "$STEP" }, _meta: { progressToken: 1 } },
    }),
    HEADERS,
  ],
  [
    "params with task",
    JSON.stringify({
      jsonrpc: "2.0",
      id: 14,
      method: "tools/call",
      params: { name: "start_step", arguments: { step_id: "nope" }, task: { ttl: 1000 } },
    }),
    HEADERS,
  ],
  ["an extra top-level key", call(15, "start_step", { step_id: "nope" }, { extra: true }), HEADERS],
  ["a fractional id", call(1.5, "start_step", { step_id: "nope" }), HEADERS],
  ["a null id", call(null, "start_step", { step_id: "nope" }), HEADERS],
  ["an unsafe integer id", call(2 ** 60, "start_step", { step_id: "nope" }), HEADERS],
  [
    "no id (a notification)",
    JSON.stringify({
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "start_step", arguments: { step_id: "nope" } },
    }),
    HEADERS,
  ],
  [
    "a __proto__ argument",
    `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"start_step","arguments":{"step_id":"$STEP","__proto__":{"x":1}}}}`,
    HEADERS,
  ],
  [
    "a __proto__ key at the top",
    `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"list_plans","arguments":{}},"__proto__":{}}`,
    HEADERS,
  ],
  ["arguments null", call(18, "start_step", null), HEADERS],
  ["arguments an array", call(19, "start_step", ["$STEP"]), HEADERS],
  ["the name a number", call(20, 5, {}), HEADERS],
  [
    "jsonrpc 1.0",
    JSON.stringify({
      jsonrpc: "1.0",
      id: 21,
      method: "tools/call",
      params: { name: "list_plans", arguments: {} },
    }),
    HEADERS,
  ],
  [
    "Accept without text/event-stream",
    call(22, "start_step", { step_id: "$STEP" }),
    {
      ...HEADERS,
      accept: "application/json",
    },
  ],
  [
    "Content-Type with a charset",
    call(23, "start_step", { step_id: "$STEP" }),
    {
      ...HEADERS,
      "content-type": "application/json; charset=utf-8",
    },
  ],
  [
    "Content-Type text/plain",
    call(24, "start_step", { step_id: "$STEP" }),
    {
      ...HEADERS,
      "content-type": "text/plain",
    },
  ],
  [
    "an unsupported protocol version",
    call(25, "start_step", { step_id: "$STEP" }),
    {
      ...HEADERS,
      "mcp-protocol-version": "1999-01-01",
    },
  ],
  ["not JSON", "{nope", HEADERS],
];

describe("a plain tools/call without the SDK's transport", () => {
  it("answers every request of the corpus with the SDK's status, content type and bytes", async () => {
    const steps = await freshSteps(2 * CASES.length);
    for (const [what, body, headers] of CASES) {
      const [a, b] = [steps.pop()!, steps.pop()!];
      const route = await viaRoute(body.replaceAll("$STEP", a), headers);
      const sdk = await viaSdk(body.replaceAll("$STEP", b), headers);
      expect({ status: route.status, type: route.type }, what).toEqual({
        status: sdk.status,
        type: sdk.type,
      });
      expect(normalise(route.text, a), what).toBe(normalise(sdk.text, b));
    }
  });

  it("runs a plain write once, committed with its event, and says so", async () => {
    const [step] = await freshSteps(1);
    const before = fx.server.ctx.store.lastEventId();
    const r = await viaRoute(call(1, "start_step", { step_id: step }), HEADERS);
    const reply = JSON.parse(r.text) as { id: number; result: { isError: boolean } };
    expect(reply).toMatchObject({ jsonrpc: "2.0", id: 1, result: { isError: false } });
    expect(fx.server.ctx.store.getStep(step!)?.status).toBe("IN_PROGRESS");
    expect(fx.server.ctx.store.lastEventId()).toBe(before + 1);
    // The same call again is refused by the flow, as a tool error naming the step, and writes nothing.
    const again = JSON.parse((await viaRoute(call(2, "start_step", { step_id: step }), HEADERS)).text) as {
      result: { isError: boolean; structuredContent: { error: { code: string; message: string } } };
    };
    expect(again.result.isError).toBe(true);
    expect(again.result.structuredContent.error.message).toContain(step);
    expect(fx.server.ctx.store.lastEventId()).toBe(before + 1);
  });

  it("keeps the token, Host, Origin and read-only guards in front of it: nothing is written", async () => {
    const [step] = await freshSteps(1);
    const body = call(1, "start_step", { step_id: step });
    const before = fx.server.ctx.store.lastEventId();
    const { authorization: _, ...noToken } = HEADERS;
    const port = new URL(fx.server.url).port;
    for (const [headers, status] of [
      [noToken, 401],
      [{ ...HEADERS, authorization: "Bearer wrong-token-0123456789abcdef" }, 401],
      [{ ...HEADERS, origin: "http://evil.example" }, 403],
      [{ ...HEADERS, origin: `http://127.0.0.1:${Number(port) + 1}` }, 403],
    ] as [Record<string, string>, number][])
      expect((await viaRoute(body, headers)).status, JSON.stringify(headers)).toBe(status);
    // A foreign Host (DNS rebinding) cannot be set through fetch: a raw request.
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${fx.server.url}/mcp`,
        { method: "POST", headers: { ...HEADERS, host: "evil.example" } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(status).toBe(421);
    expect(fx.server.ctx.store.lastEventId()).toBe(before);
    expect(fx.server.ctx.store.getStep(step!)?.status).toBe("PENDING");

    const ro = await startServer({ workspace: fx.workspace, port: 0, token: TOKEN, readOnly: true });
    try {
      const r = await fetch(`${ro.url}/mcp`, { method: "POST", headers: HEADERS, body });
      const reply = (await r.json()) as {
        result: { isError: boolean; structuredContent: { error: { code: string } } };
      };
      expect(reply.result.isError).toBe(true);
      expect(reply.result.structuredContent.error.code).toBe("read_only");
    } finally {
      await ro.close();
    }
    expect(fx.server.ctx.store.lastEventId()).toBe(before);
  });
});
