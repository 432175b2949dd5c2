/**
 * `ratchet serve` as a user starts it: the JSON line, the token printed once on stderr, writes with
 * that token, exit 0 on SIGTERM; a taken port and a bad --port are exit 2 naming the field.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, makeWorkspace, startRatchet, type TestWorkspace } from "../helpers/cli.js";

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-serve-");
});
afterAll(() => ws?.remove());

async function waitFor(pred: () => boolean, what: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("ratchet serve", () => {
  it("prints its address, prints a generated token once, serves writes with it, stops on SIGTERM", async () => {
    const serve = startRatchet(["serve", "--port", "0"], { cwd: ws.dir, timeoutMs: 60_000 });
    await waitFor(
      () => serve.stdoutSoFar().includes("\n") && /token[^:]*: [0-9a-f]{64}/.test(serve.stderrSoFar()),
      "serve to start",
    );
    const line = JSON.parse(serve.stdoutSoFar().split("\n")[0]!) as {
      ok: boolean;
      url: string;
      port: number;
    };
    expect(line).toMatchObject({ ok: true, op: "serve", read_only: false });
    expect(line.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const token = /: ([0-9a-f]{64})/.exec(serve.stderrSoFar())![1]!;
    const denied = await fetch(`${line.url}/api/flows/publish-plan`, { method: "POST", body: "{}" });
    expect(denied.status).toBe(401);
    const ok = await fetch(`${line.url}/api/flows/publish-plan`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ goal: "over http", steps: [{ title: "t", type: "THINKING" }] }),
    });
    expect(ok.status).toBe(200);
    const list = await ws.run(["plan", "list", "--json"]);
    expect(JSON.parse(list.stdout)[0].goal).toBe("over http");
    serve.child.kill("SIGTERM");
    const done = await serve.done;
    expect(done.status).toBe(0);
    expect(done.stderr.match(/[0-9a-f]{64}/g)?.length).toBe(1);
  });

  it("refuses a taken port and a bad --port with exit 2 naming the field", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const taken = await ws.run(["serve", "--port", String(port), "--token", "a-long-enough-token-123"]);
      expect(taken.status).toBe(2);
      expect(taken.stderr).toContain("EADDRINUSE");
    } finally {
      blocker.close();
    }
    const bad = await ws.run(["serve", "--port", "70000"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--port");
    const short = await ws.run(["serve", "--token", "short"]);
    expect(short.status).toBe(2);
  });
});
