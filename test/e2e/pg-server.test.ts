/**
 * `ratchet serve` and live events on PostgreSQL, through the BUILT CLI and a real server from
 * test/harness/pg.ts: REST reads, the SSE stream reached by a `step start` in another process
 * (woken by NOTIFY: the fallback poll is set to ten minutes, so only a notification delivers in
 * time), resume by Last-Event-ID with each event exactly once, `events --follow` woken the same
 * way, the MCP SDK client over streamable HTTP, the refusals of what still needs SQLite, and the
 * listener itself: notifications only on commit, and a reconnect (session terminated) that catches
 * up by id.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { EVENTS_CHANNEL, EventHub, PgEventListener } from "../../src/server/index.js";
import { type EventRow, PgStore } from "../../src/store/index.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  BIN,
  makeTempDir,
  type RunningCli,
  ratchet,
  startRatchet,
  waitFor,
} from "../helpers/cli.js";
import { connectSse } from "../helpers/sse.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const TOKEN = "pg-server-token-0123456789abcdef";
/** Ten minutes: nothing in these tests waits that long, so a delivery in time came from NOTIFY. */
const NO_FALLBACK = { RATCHET_EVENTS_FALLBACK_MS: "600000" };

let cluster: PgCluster;
beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) throw new Error("RATCHET_SKIP_PG=1: the PostgreSQL tests were asked not to run");
  cluster = await startPgCluster();
});
afterAll(() => cluster?.stop());

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
type Json = Record<string, any>;

/** Another "machine": its own folder, the same database. */
function machine(url: string) {
  const dir = makeTempDir("ratchet-pg-server-");
  const env = { RATCHET_DB: url, ...NO_FALLBACK };
  return {
    dir,
    env,
    run: (args: readonly string[], input?: string) =>
      ratchet(args, { cwd: dir, env, timeoutMs: 60_000, ...(input !== undefined ? { input } : {}) }),
    start: (args: readonly string[]) => startRatchet(args, { cwd: dir, env, timeoutMs: 120_000 }),
  };
}

/** `ratchet step start|complete` with its input on stdin. */
const stepCmd = (m: ReturnType<typeof machine>, verb: "start" | "complete", stepId: string) =>
  m.run(
    ["step", verb, "-"],
    JSON.stringify({ step_id: stepId, ...(verb === "complete" ? { summary: "done" } : {}) }),
  );

async function publishPlan(m: ReturnType<typeof machine>, goal: string, n = 2) {
  const plan = {
    goal,
    steps: Array.from({ length: n }, (_, i) => ({ title: `step ${i}`, type: "THINKING" })),
  };
  const r = await m.run(["plan", "publish", "-"], JSON.stringify(plan));
  if (r.status !== 0) throw new Error(`publish failed: ${r.stderr}${r.stdout}`);
  return r.marker as { plan_id: string; step_ids: string[] };
}

function lastEventId(url: string): number {
  const s = PgStore.open(url);
  try {
    return s.lastEventId();
  } finally {
    s.close();
  }
}

async function startServe(m: ReturnType<typeof machine>): Promise<{ serve: RunningCli; base: string }> {
  const serve = m.start(["serve", "--port", "0", "--token", TOKEN, "--quiet"]);
  await waitFor(() => serve.stdoutSoFar().includes("\n"), `serve to start (${serve.stderrSoFar()})`, 60_000);
  const line = JSON.parse(serve.stdoutSoFar().split("\n")[0] as string) as { url: string };
  return { serve, base: line.url };
}

async function stop(serve: RunningCli) {
  serve.child.kill("SIGTERM");
  const done = await serve.done;
  expect(done.status).toBe(0);
}

describe("ratchet serve on PostgreSQL", () => {
  let url: string;
  let server: { serve: RunningCli; base: string };
  let other: ReturnType<typeof machine>;
  beforeAll(async () => {
    url = cluster.createDatabase();
    server = await startServe(machine(url));
    other = machine(url);
  });
  afterAll(async () => {
    if (server) await stop(server.serve);
  });
  const get = async (path: string): Promise<{ status: number; body: Json }> => {
    const r = await fetch(`${server.base}${path}`);
    return { status: r.status, body: (await r.json()) as Json };
  };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${server.base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Json };
  };

  test("REST reads come from the shared database: plans (filters, case-insensitive words), plan, step, metrics, health", async () => {
    const a = await publishPlan(other, "Ship the Widget");
    const b = await publishPlan(other, "Paint the fence");
    expect((await other.run(["project", "add", "shop"])).status).toBe(0);
    const rec = await post("/api/flows/record-metric", {
      name: "latency_ms",
      value: 12.5,
      project: "shop",
      plan_id: a.plan_id,
    });
    expect(rec.status, JSON.stringify(rec.body)).toBe(200);

    const plans = await get("/api/plans?limit=1");
    expect(plans.status).toBe(200);
    expect(plans.body.items.map((p: Json) => p.plan_id)).toEqual([b.plan_id]);
    const next = await get(`/api/plans?limit=1&cursor=${encodeURIComponent(plans.body.next_cursor)}`);
    expect(next.body.items.map((p: Json) => p.plan_id)).toEqual([a.plan_id]);
    // PostgreSQL's LIKE is case-sensitive: the word filter must still match "Widget" for "wIDGET"
    const words = await get("/api/plans?q=wIDGET");
    expect(words.body.items.map((p: Json) => p.plan_id)).toEqual([a.plan_id]);
    // LIKE wildcards in the words are literal
    expect((await get("/api/plans?q=%25")).body.items).toEqual([]);
    expect((await get("/api/plans?q=step%201")).body.items.length).toBe(2);

    const plan = await get(`/api/plans/${a.plan_id}`);
    expect(plan.body.plan.goal).toBe("Ship the Widget");
    const step = await get(`/api/steps/${a.step_ids[0]}`);
    expect(step.body.step.step_id).toBe(a.step_ids[0]);
    const metrics = await get(`/api/metrics?plan_id=${a.plan_id}`);
    expect(metrics.body.items).toEqual([expect.objectContaining({ name: "latency_ms", value: 12.5 })]);
    const health = await get("/api/health");
    expect(health.body.last_event_id).toBe(lastEventId(url));
    expect((await get("/api/runs")).body.items).toEqual([]);
    expect((await get("/api/plans/P-NOPE")).status).toBe(404);
  });

  test("a `step start` in another process reaches an open SSE stream (woken by NOTIFY)", async () => {
    const p = await publishPlan(other, "live across processes");
    const sse = await connectSse(`${server.base}/events?since=${lastEventId(url)}`);
    try {
      expect(sse.status).toBe(200);
      const r = await stepCmd(other, "start", p.step_ids[0] as string);
      expect(r.status, r.stderr).toBe(0);
      const got = await sse.waitFor(1, 20_000);
      const e = JSON.parse(got[0]!.data) as Json;
      expect(e).toMatchObject({ type: "step.in_progress", entity_id: p.step_ids[0] });
      expect(Number(got[0]!.id)).toBe(lastEventId(url));
    } finally {
      sse.close();
    }
  });

  test("resume by Last-Event-ID after a disconnect delivers each event exactly once", async () => {
    const p = await publishPlan(other, "resume", 3);
    const from = lastEventId(url);
    const first = await connectSse(`${server.base}/events?since=${from}`);
    await stepCmd(other, "start", p.step_ids[0] as string);
    const seen = await first.waitFor(1, 20_000);
    const resumeAt = seen[seen.length - 1]!.id as string;
    first.close();
    // while nobody listens: two more commits in another process
    for (const s of p.step_ids.slice(1, 3)) expect((await stepCmd(other, "start", s)).status).toBe(0);
    const second = await connectSse(`${server.base}/events`, { "last-event-id": resumeAt });
    try {
      // …and one more after the reconnect, delivered live
      expect((await stepCmd(other, "complete", p.step_ids[0] as string)).status).toBe(0);
      const last = lastEventId(url);
      const want = last - Number(resumeAt);
      const got = await second.waitFor(want, 20_000);
      const ids = [...seen, ...got].map((m) => Number(m.id));
      // every id from the first event after `from` to the last, once each, in order
      expect(ids).toEqual(Array.from({ length: last - from }, (_, i) => from + 1 + i));
      await new Promise((r) => setTimeout(r, 300));
      expect(second.messages.length).toBe(want);
    } finally {
      second.close();
    }
  });

  test("eight writer processes at once: the open stream gets every id once, in order", async () => {
    const p = await publishPlan(other, "many writers", 8);
    const from = lastEventId(url);
    const sse = await connectSse(`${server.base}/events?since=${from}`);
    try {
      const writers = p.step_ids.map((id) =>
        other.run(["step", "start", "-"], JSON.stringify({ step_id: id })),
      );
      for (const r of await Promise.all(writers)) expect(r.status, r.stderr).toBe(0);
      const last = lastEventId(url);
      expect(last - from).toBeGreaterThanOrEqual(8);
      const got = await sse.waitFor(last - from, 30_000);
      expect(got.map((m) => Number(m.id))).toEqual(
        Array.from({ length: last - from }, (_, i) => from + 1 + i),
      );
      const started = got.map((m) => JSON.parse(m.data) as Json).filter((e) => e.type === "step.in_progress");
      expect(started.map((e) => e.entity_id).sort()).toEqual([...p.step_ids].sort());
    } finally {
      sse.close();
    }
  });

  test("the MCP SDK client over streamable HTTP works on a PostgreSQL workspace", async () => {
    const client = new Client({ name: "ratchet-pg-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const pub = (await client.callTool({
        name: "publish_plan",
        arguments: { goal: "through MCP on PG", steps: [{ title: "t", type: "THINKING" }] },
      })) as { structuredContent?: Json; isError?: boolean };
      expect(pub.isError).toBeFalsy();
      const planId = pub.structuredContent?.result.plan_id as string;
      const listed = (await client.callTool({ name: "list_plans", arguments: { limit: 5 } })) as {
        structuredContent?: Json;
      };
      expect(listed.structuredContent?.items.map((x: Json) => x.plan_id)).toContain(planId);
      // the other machine sees the plan written through MCP
      const shown = await other.run(["plan", "show", planId, "--json"]);
      expect(JSON.parse(shown.stdout).plan.goal).toBe("through MCP on PG");
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain(`ratchet://plan/${planId}`);
      const read = await client.readResource({ uri: `ratchet://plan/${planId}` });
      const first = read.contents[0] as { text?: string };
      expect(JSON.parse(first.text ?? "{}").plan.goal).toBe("through MCP on PG");
    } finally {
      await client.close();
    }
  });

  test("`ratchet mcp` (stdio) on PostgreSQL writes and reads the shared database", async () => {
    const client = new Client({ name: "ratchet-pg-stdio", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "--db", url, "mcp"],
        cwd: other.dir,
        stderr: "pipe",
      }),
    );
    try {
      const pub = (await client.callTool({
        name: "publish_plan",
        arguments: { goal: "through stdio MCP on PG", steps: [{ title: "t", type: "THINKING" }] },
      })) as { structuredContent?: Json; isError?: boolean };
      expect(pub.isError, JSON.stringify(pub)).toBeFalsy();
      const planId = pub.structuredContent?.result.plan_id as string;
      // the HTTP server on the same database sees it
      expect((await get(`/api/plans/${planId}`)).body.plan.goal).toBe("through stdio MCP on PG");
    } finally {
      await client.close();
    }
  });

  test("threads and provenance routes serve the shared database too; a bad request is refused naming its field, nothing written", async () => {
    const before = lastEventId(url);
    const why = await get("/api/why?project=x");
    expect(why.status).toBe(404);
    expect(why.body.error).toMatchObject({ field: "project" });
    const noProject = await get("/api/why");
    expect(noProject.status).toBe(400);
    expect(noProject.body.error).toMatchObject({ field: "project" });
    expect(lastEventId(url)).toBe(before);
    const threads = await get("/api/threads");
    expect(threads.status).toBe(200);
  });
});

describe("events --follow on PostgreSQL", () => {
  test("is woken by NOTIFY for a commit in another process, survives its LISTEN session being dropped, prints each event once", async () => {
    const url = cluster.createDatabase();
    const writer = machine(url);
    const p = await publishPlan(writer, "follow me");
    const since = lastEventId(url);
    const follow = machine(url).start(["events", "--follow", "--json", "--since", String(since)]);
    try {
      // the follower's listener may connect after this commit: it catches up by id on connect
      expect((await stepCmd(writer, "start", p.step_ids[0] as string)).status).toBe(0);
      await waitFor(() => follow.stdoutSoFar().includes("step.in_progress"), "the first event", 20_000);
      // drop the follower's LISTEN session: it must stay alive, reconnect and catch up by id
      const db = url.slice(url.lastIndexOf("/") + 1);
      // the first event may come from the follower's first read, before its LISTEN session is up
      await waitFor(
        () =>
          cluster.psql(
            db,
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'ratchet-listen' AND datname = current_database()",
          ).length === 1,
        "the follower's LISTEN session",
        20_000,
      );
      const killed = cluster.psql(
        db,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ratchet-listen' AND datname = current_database()",
      );
      expect(killed.length).toBe(1);
      expect((await stepCmd(writer, "start", p.step_ids[1] as string)).status).toBe(0);
      const last = lastEventId(url);
      const lines = () =>
        follow
          .stdoutSoFar()
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l) as EventRow);
      await waitFor(() => lines().some((e) => e.id === last), "the second event", 20_000);
      expect(lines().map((e) => e.id)).toEqual(Array.from({ length: last - since }, (_, i) => since + 1 + i));
    } finally {
      follow.child.kill("SIGTERM");
      const done = await follow.done;
      expect(done.status, `${done.signal} ${done.stderr}`).toBe(0);
    }
  });
});

describe("the LISTEN session", () => {
  test("a rolled-back event notifies nobody; committed ones notify once each, in commit order", async () => {
    const url = cluster.createDatabase();
    const store = PgStore.open(url);
    const client = new pg.Client({ connectionString: url });
    const got: string[] = [];
    try {
      await client.connect();
      client.on("notification", (m) => got.push(`${m.channel}:${m.payload}`));
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
      expect(() =>
        store.tx(() => {
          store.appendEvent({ entityKind: "plan", entityId: "P-X", type: "t.rolled_back" });
          throw new Error("abandon");
        }),
      ).toThrow("abandon");
      const ids = [1, 2, 3].map(() =>
        store.tx(() => store.appendEvent({ entityKind: "plan", entityId: "P-Y", type: "t.kept" })),
      );
      await vi.waitFor(() => expect(got.length).toBe(3), { timeout: 10_000 });
      expect(got).toEqual(ids.map((id) => `${EVENTS_CHANNEL}:${id}`));
      expect(store.listEvents({ since: 0 }).map((e) => e.type)).toEqual(["t.kept", "t.kept", "t.kept"]);
    } finally {
      await client.end();
      store.close();
    }
  });

  test("after its session is terminated it reconnects, LISTENs again and the hub catches up by id", async () => {
    const url = cluster.createDatabase();
    const store = PgStore.open(url);
    const hub = new EventHub(store, { storeUrl: url, wake: { fallbackMs: 600_000 } });
    const rows: EventRow[] = [];
    const unsubscribe = hub.subscribe((r) => rows.push(...r));
    try {
      await hub.ready;
      const add = (type: string) =>
        store.tx(() => store.appendEvent({ entityKind: "plan", entityId: "P-R", type }));
      add("before");
      await vi.waitFor(() => expect(rows.map((e) => e.type)).toEqual(["before"]), { timeout: 10_000 });
      // kill the listener's session from the server side, then commit while it is gone
      const killed = cluster.psql(
        url.slice(url.lastIndexOf("/") + 1),
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ratchet-listen' AND datname = current_database()",
      );
      expect(killed.length).toBe(1);
      add("while-down");
      add("after");
      await vi.waitFor(() => expect(rows.map((e) => e.type)).toEqual(["before", "while-down", "after"]), {
        timeout: 20_000,
      });
      add("later");
      await vi.waitFor(() => expect(rows.map((e) => e.type)).toContain("later"), { timeout: 20_000 });
      expect(rows.map((e) => e.id)).toEqual([1, 2, 3, 4]);
      // one listener session again: the terminated one was replaced by a new one
      const listeners = cluster.psql(
        url.slice(url.lastIndexOf("/") + 1),
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ratchet-listen' AND datname = current_database()",
      );
      expect(listeners[0]?.[0]).toBe("1");
    } finally {
      unsubscribe();
      hub.close();
      store.close();
    }
  });

  test("with no notification at all (LISTEN on another database) the fallback read still delivers", async () => {
    const url = cluster.createDatabase();
    const silent = cluster.createDatabase();
    const store = PgStore.open(url);
    const hub = new EventHub(store, { storeUrl: silent, wake: { fallbackMs: 200 } });
    const rows: EventRow[] = [];
    const unsubscribe = hub.subscribe((r) => rows.push(...r));
    try {
      await hub.ready;
      for (const type of ["a", "b", "c"])
        store.tx(() => store.appendEvent({ entityKind: "plan", entityId: "P-F", type }));
      await vi.waitFor(() => expect(rows.map((e) => e.type)).toEqual(["a", "b", "c"]), { timeout: 10_000 });
    } finally {
      unsubscribe();
      hub.close();
      store.close();
    }
  });

  test("a listener that cannot connect keeps retrying and never throws; close() stops it", async () => {
    const wakes: number[] = [];
    const l = new PgEventListener("postgres://postgres@127.0.0.1:1/none", () => wakes.push(1));
    await new Promise((r) => setTimeout(r, 500));
    l.close();
    await l.ready;
    expect(l.connections).toBe(0);
    expect(wakes).toEqual([]);
  });
});
