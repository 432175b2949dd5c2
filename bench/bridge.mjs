// bench/bridge — the tool bridge's overhead.
//  Round trip of one tool call through the bridge (HTTP from a keep-alive client in this process →
//  auth → schema check → the tool → JSON reply) divided by calling the same tool directly, p50 and
//  p99, for three kinds of tool:
//   (a) the built-in `echo`            — baseline: a direct call of its handler function;
//   (b) a command custom tool (`cat`)  — baseline: the same spawn through exec's runProcess;
//   (c) `echo` on the stdio fixture MCP server — baseline: an in-process MCP SDK Client on its own
//       copy of the server.
//  Then requests per second through the bridge with 16 concurrent callers, for each kind. For
//  reference, the HTTP floor: a bare hono route that parses and returns the same JSON on the same
//  server stack (what any HTTP bridge costs before auth, lookup, schema and the tool).
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Hono } from "hono";
import { fmt, percentile, ROOT, report } from "./lib.mjs";

const { startBridge, ECHO_TOOL } = await import(join(ROOT, "dist", "bridge", "index.js"));
const { buildEnv, runProcess } = await import(join(ROOT, "dist", "exec", "index.js"));

const quick = process.env.BENCH_QUICK === "1";
const N = { builtin: quick ? 200 : 1000, command: quick ? 40 : 200, mcp: quick ? 200 : 1000 };
const CONCURRENCY = 16;
const TOTAL = { builtin: quick ? 1000 : 5000, command: quick ? 160 : 640, mcp: quick ? 1000 : 5000 };
const FIXTURE = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
const ARGS = { text: "hello from the bench" };

const bridge = await startBridge({
  config: {
    baseDir: ROOT,
    mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } },
    customTools: {
      cat: {
        command: "cat",
        description: "Echoes its arguments (JSON on stdin → stdout).",
        input_schema: { type: "object", properties: { text: { type: "string" } } },
      },
    },
  },
});
const headers = { authorization: `Bearer ${bridge.token}`, "content-type": "application/json" };
const body = JSON.stringify(ARGS);

async function viaBridge(path) {
  const res = await fetch(`${bridge.url}${path}`, { method: "POST", headers, body });
  const reply = await res.json();
  if (!reply.success) throw new Error(`${path}: ${reply.error}`);
  return reply.result;
}

const direct = {
  builtin: async () => ECHO_TOOL.handler({ ...ARGS }, {}),
  command: async () => {
    const r = await runProcess({ command: "cat", env: buildEnv({ inherit: "minimal" }), stdin: body });
    if (r.exitCode !== 0) throw new Error(`cat exited ${r.exitCode}`);
    return JSON.parse(r.stdout);
  },
  mcp: undefined,
};
const routes = { builtin: "/tools/custom/echo", command: "/tools/custom/cat", mcp: "/tools/mcp/fx/echo" };

// The direct MCP baseline: its own server process and an SDK client in this process.
const client = new Client({ name: "bench", version: "1" }, { capabilities: {} });
await client.connect(
  new StdioClientTransport({ command: process.execPath, args: [FIXTURE], env: buildEnv(), stderr: "ignore" }),
);
direct.mcp = async () => {
  const r = await client.callTool({ name: "echo", arguments: ARGS });
  if (r.isError) throw new Error("direct MCP call failed");
  return r.content;
};

/** Latencies (ms) of n sequential calls, after a short warm-up. */
async function latencies(fn, n) {
  for (let i = 0; i < Math.min(50, n); i++) await fn();
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** Calls per second with `concurrency` callers sharing `total` calls. */
async function throughput(fn, total, concurrency) {
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await fn();
    }),
  );
  return total / ((performance.now() - t) / 1000);
}

const floorApp = new Hono();
floorApp.post("/echo", async (c) =>
  c.json({ success: true, result: JSON.parse(await c.req.text()), error: null }),
);
const floor = createAdaptorServer({ fetch: floorApp.fetch, overrideGlobalObjects: false });
await new Promise((r) => floor.listen(0, "127.0.0.1", r));
const floorUrl = `http://127.0.0.1:${floor.address().port}/echo`;
const floorCall = async () => (await fetch(floorUrl, { method: "POST", headers, body })).json();

const figures = {};
const floorLat = await latencies(floorCall, N.builtin);
figures["http floor (bare hono echo) p50 ms"] = percentile(floorLat, 50);
figures["http floor (bare hono echo) p99 ms"] = percentile(floorLat, 99);
figures[`http floor req/s @${CONCURRENCY}`] = await throughput(floorCall, TOTAL.builtin, CONCURRENCY);
floor.close();
floor.closeAllConnections();
for (const kind of ["builtin", "command", "mcp"]) {
  // Interleave bridge and direct in two halves so drift on a busy machine hits both.
  const half = Math.ceil(N[kind] / 2);
  const b = [...(await latencies(() => viaBridge(routes[kind]), half))];
  const d = [...(await latencies(direct[kind], half))];
  b.push(...(await latencies(() => viaBridge(routes[kind]), half)));
  d.push(...(await latencies(direct[kind], half)));
  const [b50, b99, d50, d99] = [percentile(b, 50), percentile(b, 99), percentile(d, 50), percentile(d, 99)];
  figures[`${kind}: bridge p50 ms`] = b50;
  figures[`${kind}: bridge p99 ms`] = b99;
  figures[`${kind}: direct p50 ms`] = d50;
  figures[`${kind}: direct p99 ms`] = d99;
  figures[`${kind}: p50 ratio bridge/direct`] = b50 / d50;
  figures[`${kind}: p99 ratio bridge/direct`] = b99 / d99;
  figures[`${kind}: p50 overhead ms (bridge - direct)`] = b50 - d50;
  figures[`${kind}: bridge req/s @${CONCURRENCY}`] = await throughput(
    () => viaBridge(routes[kind]),
    TOTAL[kind],
    CONCURRENCY,
  );
  figures[`${kind}: direct calls/s @${CONCURRENCY}`] = await throughput(
    direct[kind],
    TOTAL[kind],
    CONCURRENCY,
  );
}

await client.close();
await bridge.close();
report("bridge", figures);
console.log(
  `\n  bridge p50 / http floor p50: ${fmt(figures["builtin: bridge p50 ms"] / figures["http floor (bare hono echo) p50 ms"])}` +
    `\n  bridge overhead per call (p50): builtin ${fmt(figures["builtin: p50 overhead ms (bridge - direct)"])} ms, ` +
    `command ${fmt(figures["command: p50 overhead ms (bridge - direct)"])} ms, mcp ${fmt(figures["mcp: p50 overhead ms (bridge - direct)"])} ms`,
);
