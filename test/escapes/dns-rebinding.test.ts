/**
 * DNS rebinding against a real `ratchet serve`: a page on `http://evil.example` whose name now
 * resolves to 127.0.0.1 sends `Host: evil.example` (and its own `Origin`). Raw `http.request`
 * sets the headers exactly as such a browser would. Every read (plans with their logs, SSE, the
 * dashboard, static files, OpenAPI), the MCP endpoint and every write must refuse it; loopback
 * names and `server.allowed_hosts` of `.ratchet/config.json` must still work.
 */

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBridge } from "../../src/bridge/index.js";
import {
  assertBuilt,
  makeWorkspace,
  type RunningCli,
  snapshot,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

const TOKEN = "rebinding-test-token-0123456789";

let ws: TestWorkspace;
let serve: RunningCli;
let port: number;
let planId: string;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One raw request to the server on 127.0.0.1 with exactly these headers (no fetch normalising). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  toPort = port,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: toPort, method, path, headers, setHost: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
        // An SSE stream that was let through never ends: the first bytes are enough.
        if (res.headers["content-type"]?.includes("text/event-stream")) res.destroy();
      });
      res.on("close", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on("error", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

const json = (r: Reply) => JSON.parse(r.body) as { ok: boolean; error: { code: string; field?: string } };

const PLAN = JSON.stringify({ goal: "rebinding write", steps: [{ title: "t", type: "THINKING" }] });
const writeHeaders = (host: string, origin?: string): Record<string, string> => ({
  host,
  authorization: `Bearer ${TOKEN}`,
  "content-type": "application/json",
  ...(origin !== undefined ? { origin } : {}),
});
const MCP_LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
const mcpHeaders = (host: string, origin?: string): Record<string, string> => ({
  ...writeHeaders(host, origin),
  accept: "application/json, text/event-stream",
});

beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-rebind-");
  const configFile = join(ws.ratchetDir, "config.json");
  const config = existsSync(configFile) ? (JSON.parse(readFileSync(configFile, "utf8")) as object) : {};
  writeFileSync(
    configFile,
    JSON.stringify({ ...config, server: { allowed_hosts: ["ratchet.internal", "box.lan:9"] } }),
  );
  const pub = await ws.run(["plan", "publish", "-"], {
    input: JSON.stringify({ goal: "secret plan", steps: [{ title: "leak me", type: "THINKING" }] }),
  });
  planId = pub.marker?.plan_id as string;
  serve = startRatchet(["serve", "--port", "0", "--token", TOKEN, "--quiet"], { cwd: ws.dir });
  await waitFor(() => serve.stdoutSoFar().includes("\n"), "serve to print its address");
  port = (JSON.parse(serve.stdoutSoFar().split("\n")[0]!) as { port: number }).port;
});

afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.done.catch(() => undefined);
  ws?.remove();
});

describe("a foreign Host is refused with 421 naming the header", () => {
  const reads = [
    ["GET", "/api/health"],
    ["GET", "/api/plans"],
    ["GET", "/api/metrics"],
    ["GET", "/openapi.json"],
    ["GET", "/events"],
    ["GET", "/"],
    ["GET", "/app.js"],
    ["GET", "/index.html"],
    ["GET", "/no-such-route"],
  ] as const;
  for (const [method, path] of reads)
    it(`${method} ${path}`, async () => {
      for (const host of ["evil.example", `evil.example:${port}`, "127.0.0.1.evil.example", "localhost.:1"]) {
        const r = await raw(method, path, { host, accept: "text/event-stream, */*" });
        expect(r.status, `${host} ${path}`).toBe(421);
        expect(json(r).error).toMatchObject({ code: "host_not_allowed", field: "host" });
      }
    });

  it("a plan and its logs are not readable through a rebound name", async () => {
    const r = await raw("GET", `/api/plans/${planId}`, { host: "evil.example" });
    expect(r.status).toBe(421);
    expect(r.body).not.toContain("leak me");
    expect(r.body).not.toContain("secret plan");
  });

  it("the MCP endpoint, even with the token", async () => {
    const r = await raw("POST", "/mcp", mcpHeaders("evil.example"), MCP_LIST);
    expect(r.status).toBe(421);
    expect(json(r).error.field).toBe("host");
  });

  it("a write, even with the token, writes nothing", async () => {
    const before = snapshot(ws);
    const r = await raw("POST", "/api/flows/publish-plan", writeHeaders("evil.example"), PLAN);
    expect(r.status).toBe(421);
    expect(snapshot(ws)).toEqual(before);
  });

  it("the loopback names on another port", async () => {
    const r = await raw("GET", "/api/plans", { host: `localhost:${port === 1 ? 2 : 1}` });
    expect(r.status).toBe(421);
  });
});

describe("loopback names and configured hosts are answered", () => {
  it("with the bound port or without", async () => {
    const hosts = [
      `127.0.0.1:${port}`,
      "127.0.0.1",
      `localhost:${port}`,
      "localhost",
      "LocalHost",
      `[::1]:${port}`,
      "[::1]",
      "ratchet.internal",
      `ratchet.internal:${port}`,
      "box.lan:9",
    ];
    for (const host of hosts) {
      const r = await raw("GET", `/api/plans/${planId}`, { host });
      expect(r.status, host).toBe(200);
      expect(r.body).toContain("leak me");
    }
    expect((await raw("GET", "/api/plans", { host: "box.lan" })).status).toBe(421);
    expect((await raw("GET", "/api/plans", { host: `box.lan:${port}` })).status).toBe(421);
  });

  it("SSE on a loopback name streams", async () => {
    const r = await raw("GET", "/events", { host: `127.0.0.1:${port}`, accept: "text/event-stream" });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toContain("text/event-stream");
  });

  it("MCP from a non-browser client (no Origin)", async () => {
    const r = await raw("POST", "/mcp", mcpHeaders(`127.0.0.1:${port}`), MCP_LIST);
    expect(r.status).toBe(200);
    expect(r.body).toContain("publish_plan");
  });
});

describe("a foreign Origin is refused on writes and MCP with 403 naming the header", () => {
  it("POST /api/flows/* writes nothing", async () => {
    const foreign = [
      "http://evil.example",
      "null",
      `http://localhost:${port === 1 ? 2 : 1}`,
      `http://127.0.0.1:${port}.evil.example`,
      "file://",
      "https://ratchet.internal.evil.example",
    ];
    const before = snapshot(ws);
    for (const origin of foreign) {
      const r = await raw("POST", "/api/flows/publish-plan", writeHeaders(`127.0.0.1:${port}`, origin), PLAN);
      expect(r.status, origin).toBe(403);
      expect(json(r).error).toMatchObject({ code: "origin_not_allowed", field: "origin" });
    }
    expect(snapshot(ws)).toEqual(before);
  });

  it("POST /api/runs and the thread routes", async () => {
    for (const path of ["/api/runs", "/api/threads"]) {
      const r = await raw("POST", path, writeHeaders(`127.0.0.1:${port}`, "http://evil.example"), "{}");
      expect(r.status, path).toBe(403);
      expect(json(r).error.field).toBe("origin");
    }
  });

  it("/mcp, for every method", async () => {
    for (const method of ["POST", "GET"]) {
      const r = await raw(
        method,
        "/mcp",
        mcpHeaders(`127.0.0.1:${port}`, "http://evil.example"),
        method === "POST" ? MCP_LIST : undefined,
      );
      expect(r.status, method).toBe(403);
      expect(json(r).error.field).toBe("origin");
    }
  });

  it("the server's own origin, a configured host's and none at all are accepted", async () => {
    const before = snapshot(ws).counts.plans;
    for (const origin of [
      `http://127.0.0.1:${port}`,
      `http://localhost:${port}`,
      "https://ratchet.internal",
      undefined,
    ]) {
      const r = await raw("POST", "/api/flows/publish-plan", writeHeaders(`127.0.0.1:${port}`, origin), PLAN);
      expect(r.status, String(origin)).toBe(200);
    }
    expect(snapshot(ws).counts.plans).toBe(before + 4);
  });

  it("reads from a foreign page on a loopback Host are still answered (no CORS: the page cannot read them)", async () => {
    const r = await raw("GET", "/api/plans", { host: `127.0.0.1:${port}`, origin: "http://evil.example" });
    expect(r.status).toBe(200);
    expect(r.headers["access-control-allow-origin"]).toBeUndefined();
  });
});

describe("the tool bridge answers only loopback names", () => {
  it("refuses a rebound Host with 421 and a foreign Origin with 403; scripts' 127.0.0.1 works", async () => {
    const bridge = await startBridge({ config: { mcpServers: {} } });
    try {
      const call = (headers: Record<string, string>) =>
        raw(
          "POST",
          "/tools/virtual/get_api_spec",
          { authorization: `Bearer ${bridge.token}`, "content-type": "application/json", ...headers },
          "{}",
          bridge.port,
        );
      const evil = await call({ host: "evil.example" });
      expect(evil.status).toBe(421);
      expect(JSON.parse(evil.body)).toMatchObject({ success: false });
      expect(JSON.parse(evil.body).error).toContain("Host");
      expect((await raw("GET", "/health", { host: "evil.example" }, undefined, bridge.port)).status).toBe(
        421,
      );
      const foreign = await call({ host: `127.0.0.1:${bridge.port}`, origin: "http://evil.example" });
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body).error).toContain("Origin");
      // Past the host and origin checks (the empty body is the tool's own 400).
      for (const host of [`127.0.0.1:${bridge.port}`, `localhost:${bridge.port}`])
        expect([403, 421]).not.toContain((await call({ host })).status);
      const health = await raw(
        "GET",
        "/health",
        { host: `127.0.0.1:${bridge.port}` },
        undefined,
        bridge.port,
      );
      expect(health.status).toBe(200);
      // What a script does: fetch(MCP_API_URL + path).
      const viaUrl = await fetch(`${bridge.url}/health`);
      expect(viaUrl.status).toBe(200);
    } finally {
      await bridge.close();
    }
  });
});

describe("a bad server section", () => {
  it("makes ratchet serve exit 2 naming the entry", async () => {
    const other = await makeWorkspace("ratchet-rebind-bad-");
    try {
      writeFileSync(
        join(other.ratchetDir, "config.json"),
        JSON.stringify({ server: { allowed_hosts: ["ok.lan", "http://x/"] } }),
      );
      const r = await other.run(["serve", "--port", "0", "--token", TOKEN]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("server.allowed_hosts[1]");
    } finally {
      other.remove();
    }
  });
});
