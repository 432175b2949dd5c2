/**
 * The 4 MiB body bound of writes and `/mcp` (http.ts `writeBodyLimit`), over a real socket: a body
 * declared too large by `Content-Length` and a chunked body that grows past the bound are both
 * refused with 413 `body_too_large` naming `body`, and nothing is written; a body under the bound
 * still goes through both ways.
 */
import { request } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listenFixture, TOKEN } from "../../test/helpers/server.js";
import { SqliteStore } from "../store/index.js";
import { MAX_BODY_BYTES } from "./limits.js";

let fx: Awaited<ReturnType<typeof listenFixture>>;
beforeEach(async () => {
  fx = await listenFixture();
});
afterEach(() => fx.dispose());

/** POSTs `chunks` to `path`: with `Content-Length` of their sum, or chunked when `chunked`. */
function post(
  path: string,
  chunks: Buffer[],
  chunked: boolean,
  declared?: number,
): Promise<{ status: number; body: string }> {
  const url = new URL(path, fx.server.url);
  const total = chunks.reduce((n, c) => n + c.length, 0);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(declared ?? total) }),
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // The server may answer and close before the whole body is sent.
    req.on("error", (e) => ((e as NodeJS.ErrnoException).code === "EPIPE" ? undefined : reject(e)));
    for (const c of chunks) req.write(c);
    req.end();
  });
}

function planCount(): number {
  const store = SqliteStore.open(fx.workspace.dbPath);
  try {
    return store.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM plans", [])!.n;
  } finally {
    store.close();
  }
}

/** A valid publish body padded past `size` bytes with a long goal. */
function publishBody(size: number): Buffer {
  return Buffer.from(JSON.stringify({ goal: "x".repeat(size), steps: [{ title: "a", type: "THINKING" }] }));
}

const mcpPublish = (size: number) =>
  Buffer.from(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "publish_plan",
        arguments: { goal: "x".repeat(size), steps: [{ title: "a", type: "THINKING" }] },
      },
    }),
  );

/** `body` cut in 64 KiB pieces. */
const pieces = (body: Buffer) =>
  Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) => body.subarray(i * 65536, (i + 1) * 65536));

describe("the body bound of writes and /mcp", () => {
  for (const [label, path, make] of [
    ["POST /api/flows/publish-plan", "/api/flows/publish-plan", publishBody],
    ["POST /mcp", "/mcp", mcpPublish],
  ] as const) {
    it(`${label}: refuses a Content-Length past the bound, and a chunked body that grows past it`, async () => {
      const big = make(MAX_BODY_BYTES + 10);
      for (const chunked of [false, true]) {
        const r = await post(path, pieces(big), chunked);
        expect(r.status).toBe(413);
        expect(JSON.parse(r.body).error).toMatchObject({ code: "body_too_large", field: "body" });
      }
      // Declared past the bound, whatever follows: refused from the header alone.
      const declared = await post(path, [Buffer.from("{}")], false, MAX_BODY_BYTES + 1);
      expect(declared.status).toBe(413);
      expect(planCount()).toBe(0);
    });

    it(`${label}: takes a body under the bound, with a Content-Length and chunked`, async () => {
      const body = make(1000);
      for (const chunked of [false, true]) {
        const r = await post(path, pieces(body), chunked);
        expect({ chunked, status: r.status, body: r.status === 200 ? "" : r.body }).toEqual({
          chunked,
          status: 200,
          body: "",
        });
      }
      expect(planCount()).toBe(2);
    });
  }
});
