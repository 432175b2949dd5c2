/**
 * `/mcp` reuses its SDK servers across requests (routes/mcp.ts): requests in flight at the same
 * time, all with the same JSON-RPC id, each get their own answer; a refusal found on one request's
 * raw JSON never reaches another request (in flight or later, on a reused server); every write is
 * committed exactly once.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { SqliteStore } from "../store/index.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
type Rpc = { id?: unknown; result?: { isError?: boolean; structuredContent?: Record<string, any> } };

/** One raw `tools/call` POST; `body` is sent as given (so a `__proto__` key survives). */
async function rawCall(body: string): Promise<Rpc> {
  const res = await fetch(`${fx.server.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body,
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Rpc;
}

const callBody = (id: number | string, name: string, args: string) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;

async function publish(n: number): Promise<string[]> {
  const r = await rawCall(
    callBody(
      1,
      "publish_plan",
      JSON.stringify({
        goal: "concurrent MCP",
        steps: Array.from({ length: n }, (_, i) => ({ title: `s${i}`, type: "THINKING" })),
      }),
    ),
  );
  expect(r.result?.isError).toBeFalsy();
  return r.result!.structuredContent!.result.step_ids as string[];
}

function stepStatuses(): Map<string, string> {
  const store = SqliteStore.open(fx.workspace.dbPath);
  try {
    const rows = store.sql.all<{ id: string; status: string }>("SELECT step_id AS id, status FROM steps", []);
    return new Map(rows.map((r) => [r.id, r.status]));
  } finally {
    store.close();
  }
}

describe("/mcp with requests in flight at once", () => {
  it("answers each of 40 concurrent calls sharing one JSON-RPC id with its own result", async () => {
    const ids = await publish(40);
    // Every third request carries a `__proto__` key: refused, and only that request.
    const replies = await Promise.all(
      ids.map((step, i) =>
        rawCall(
          callBody(
            7,
            "start_step",
            i % 3 === 0 ? `{"step_id":"${step}","__proto__":{"x":1}}` : `{"step_id":"${step}"}`,
          ),
        ),
      ),
    );
    const statuses = stepStatuses();
    replies.forEach((r, i) => {
      expect(r.id).toBe(7);
      const sc = r.result!.structuredContent!;
      if (i % 3 === 0) {
        expect(r.result!.isError).toBe(true);
        expect(sc.error.code).toBe("schema_violation");
        expect(statuses.get(ids[i]!)).toBe("PENDING");
      } else {
        expect(r.result!.isError).toBeFalsy();
        expect(sc.marker).toMatchObject({ ok: true, op: "start-step" });
        expect(sc.result.step_id).toBe(ids[i]);
        expect(statuses.get(ids[i]!)).toBe("IN_PROGRESS");
      }
    });
  });

  it("never carries a refusal over to the next request on a reused server", async () => {
    const [a, b, c] = await publish(3);
    const refused = await rawCall(callBody("same", "start_step", `{"step_id":"${a}","constructor":1}`));
    expect(refused.result!.isError).toBe(true);
    // Sequential: the next requests take the server the refused one gave back, with the same id.
    // Their `_meta` keeps them on the SDK path (a plain call skips the pooled servers), and the
    // pause lets the refused request's server close and go back to the pool first.
    for (const step of [b, c]) {
      await new Promise((r) => setTimeout(r, 20));
      const ok = await rawCall(
        `{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"start_step","arguments":{"step_id":"${step}"},"_meta":{}}}`,
      );
      expect(ok.result!.isError).toBeFalsy();
      expect(ok.result!.structuredContent!.result.step_id).toBe(step);
    }
    expect(stepStatuses().get(a!)).toBe("PENDING");
  });

  it("serves several SDK clients racing over the same plan: each start answered once, to its caller", async () => {
    const ids = await publish(12);
    const clients = await Promise.all(
      [0, 1, 2, 3].map(async () => {
        const client = new Client({ name: "ratchet-race", version: "1.0.0" });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${fx.server.url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
          }),
        );
        return client;
      }),
    );
    try {
      // Every client tries to start every step: exactly one start of each step succeeds.
      const tries = await Promise.all(
        clients.flatMap((client, k) =>
          ids.map(async (step) => {
            const r = (await client.callTool({ name: "start_step", arguments: { step_id: step } })) as {
              isError?: boolean;
              // biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
              structuredContent?: Record<string, any>;
            };
            return { k, step, r };
          }),
        ),
      );
      for (const step of ids) {
        const mine = tries.filter((t) => t.step === step);
        expect(mine).toHaveLength(clients.length);
        const won = mine.filter((t) => !t.r.isError);
        expect(won).toHaveLength(1);
        expect(won[0]!.r.structuredContent!.result.step_id).toBe(step);
        for (const lost of mine.filter((t) => t.r.isError))
          expect(lost.r.structuredContent!.marker).toMatchObject({
            ok: false,
            accepted: false,
            op: "start-step",
          });
      }
      const statuses = stepStatuses();
      for (const step of ids) expect(statuses.get(step)).toBe("IN_PROGRESS");
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});
