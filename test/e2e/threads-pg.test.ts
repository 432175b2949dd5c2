/**
 * Threads on PostgreSQL through the built CLI: `bin/ratchet.js thread …` processes with
 * `RATCHET_DB=postgres://…`, each in its own temp folder (no shared store file: they stand in for
 * machines), one real server (test/harness/pg.ts), the scripted model over HTTP and a command tool
 * that appends a line per call (so "ran exactly once" is counted outside the database).
 *
 * What must hold: a thread started on one machine is listed and shown on another; an approval
 * decided from another process lets the waiting driver run the call exactly once; a cancel from
 * another process ends a waiting thread without running its call; two processes racing to resume
 * one thread give it one driver — one drives, the other is refused, the call runs once.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import type { ScriptInput } from "../../src/testing/scripted-model-script.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import { assertBuilt, makeTempDir, ROOT, ratchet, startRatchet, waitFor } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
  console.log(`pg harness: initdb + start ${cluster.startSeconds.toFixed(2)} s`);
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const APPROVE_APPEND = {
  policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] },
};

/** One database, a scripted model, the file the append tool writes, and a "machine" maker. */
async function setup(script: ScriptInput) {
  const url = cluster.createDatabase();
  const model = await startScriptedModel({ script });
  cleanups.push(() => model.close());
  const shared = makeTempDir("ratchet-pg-threads-out-");
  dirs.push(shared);
  const appendFile = join(shared, "appended.txt");
  const env = {
    RATCHET_DB: url,
    RATCHET_MODEL: "openai-compatible:scripted",
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: "sk-test-000000",
  };
  /** A machine: its own folder with the workspace config (tools, policy); the store is `url`. */
  const machine = () => {
    const dir = makeTempDir("ratchet-pg-threads-");
    dirs.push(dir);
    const ratchetDir = join(dir, ".ratchet");
    mkdirSync(ratchetDir, { recursive: true });
    writeFileSync(
      join(ratchetDir, "config.json"),
      JSON.stringify({
        mcpServers: {
          echo: { command: process.execPath, args: [join(ROOT, "test/fixtures/mcp/echo-server.mjs")] },
        },
        customTools: {
          append: {
            command: process.execPath,
            args: [join(ROOT, "test/fixtures/threads/append-tool.mjs"), appendFile],
            description: "Appends a line.",
            input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
          },
        },
        threads: APPROVE_APPEND,
      }),
    );
    return {
      dir,
      run: (args: readonly string[]) => ratchet(args, { cwd: dir, env, timeoutMs: 120_000 }),
      start: (args: readonly string[]) => {
        const p = startRatchet(args, { cwd: dir, env, timeoutMs: 150_000 });
        cleanups.push(() => {
          if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
        });
        return p;
      },
    };
  };
  return { url, model, appendFile, machine };
}

/** The test's own reads, on a real session of the store. */
function rows<R>(url: string, sql: string, params: (string | number)[] = []): R[] {
  const s = PgStore.open(url);
  try {
    return s.pg.query<R>(sql, params).rows;
  } finally {
    s.close();
  }
}

type ThreadRowLite = { thread_id: string; state: string; driver: string | null; reason: string | null };
const threadsOf = (url: string) =>
  rows<ThreadRowLite>(url, "SELECT thread_id, state, driver, reason FROM threads ORDER BY created_at");
const lines = (f: string) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []);
const toolResults = (url: string, id: string) =>
  rows<{ call_id: string; n: number }>(
    url,
    "SELECT call_id, COUNT(*)::int AS n FROM thread_messages WHERE thread_id = $1 AND role = 'tool' GROUP BY call_id ORDER BY call_id",
    [id],
  );

describe.runIf(pgAvailable())("threads on PostgreSQL, many processes", () => {
  test("thread start on one machine runs to completion; list and show on another see it", async () => {
    const { url, machine } = await setup({
      turns: [
        { tool_calls: [{ id: "e1", name: "echo__add", arguments: { a: 2, b: 3 } }] },
        { text: "The sum is 5." },
      ],
    });
    const a = machine();
    const b = machine();
    const start = await a.run(["thread", "start", "add two and three", "--json"]);
    expect(start.stderr).toBe("");
    expect(start.status).toBe(0);
    expect(start.marker).toMatchObject({
      ok: true,
      outcome: "completed",
      state: "done",
      final_result: "The sum is 5.",
    });
    const id = String(start.marker?.thread_id);
    expect(threadsOf(url)).toEqual([expect.objectContaining({ thread_id: id, state: "done", driver: null })]);

    const list = await b.run(["thread", "list", "--json"]);
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ thread_id: id, state: "done" })]);
    const show = await b.run(["thread", "show", id, "--json"]);
    expect(show.status).toBe(0);
    const detail = JSON.parse(show.stdout) as {
      messages: { role: string; call_id: string | null; content: string }[];
      checkpoint: { bytes: number } | null;
    };
    expect(detail.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(detail.messages.find((m) => m.role === "tool")).toMatchObject({ call_id: "e1", content: "5" });
    expect(detail.checkpoint?.bytes).toBeGreaterThan(1000);
    // The admin commands open the same store: a skill added on one machine is listed on the other.
    const add = await a.run([
      "skills",
      "add",
      "pg-skill",
      "--content",
      "Use the shared database.",
      "--keywords",
      "sum",
    ]);
    expect(add.stderr).toBe("");
    expect(add.status).toBe(0);
    const skills = await b.run(["skills", "list", "--json"]);
    expect(skills.status).toBe(0);
    expect(JSON.stringify(JSON.parse(skills.stdout))).toContain("pg-skill");
    const versions = await b.run(["orchestrator", "list", "--json"]);
    expect(versions.stderr).toBe("");
    expect(versions.status).toBe(0);
    // Bad input: an unknown thread is named, with the not-found status, on PostgreSQL as on SQLite.
    const missing = await b.run(["thread", "show", "th-000000000000"]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toContain("thread th-000000000000 not found");
  });

  test("approval decided from another machine: the waiting driver runs the call exactly once", async () => {
    const { url, appendFile, machine } = await setup({
      turns: [
        { tool_calls: [{ id: "p1", name: "append", arguments: { line: "approved on b" } }] },
        { text: "Appended." },
      ],
    });
    const a = machine();
    const b = machine();
    const driving = a.start(["thread", "start", "append a line", "--json"]);
    await waitFor(() => threadsOf(url)[0]?.state === "waiting", "the thread to wait for approval");
    const id = threadsOf(url)[0]!.thread_id;
    expect(lines(appendFile)).toEqual([]);
    const approve = await b.run(["thread", "approve", id, "--json"]);
    expect(approve.stderr).toBe("");
    expect(approve.status).toBe(0);
    const done = await driving.done;
    expect(done.status).toBe(0);
    expect(threadsOf(url)[0]).toMatchObject({ thread_id: id, state: "done", driver: null });
    expect(lines(appendFile)).toEqual(["approved on b"]);
    expect(toolResults(url, id)).toEqual([{ call_id: "p1", n: 1 }]);
    // A second decision is refused and names the first; nothing runs again.
    const again = await b.run(["thread", "approve", id]);
    expect(again.status).toBe(4);
    expect(again.stderr).toContain("was already approved");
    expect(lines(appendFile)).toEqual(["approved on b"]);
  });

  test("cancel from another machine ends a waiting thread; its call never runs and gets one result", async () => {
    const { url, appendFile, machine } = await setup({
      turns: [{ tool_calls: [{ id: "c1", name: "append", arguments: { line: "never" } }] }, { text: "no" }],
    });
    const a = machine();
    const b = machine();
    const driving = a.start(["thread", "start", "append a line", "--json"]);
    await waitFor(() => threadsOf(url)[0]?.state === "waiting", "the thread to wait for approval");
    const id = threadsOf(url)[0]!.thread_id;
    const cancel = await b.run(["thread", "cancel", id, "--reason", "stop it", "--json"]);
    expect(cancel.stderr).toBe("");
    expect(cancel.status).toBe(0);
    const done = await driving.done;
    expect(done.status).toBe(8);
    expect(threadsOf(url)[0]).toMatchObject({ thread_id: id, state: "failed" });
    expect(lines(appendFile)).toEqual([]);
    expect(toolResults(url, id)).toEqual([{ call_id: "c1", n: 1 }]);
    // Approving a cancelled thread's call is refused: it ended.
    const late = await b.run(["thread", "approve", id]);
    expect(late.status).toBe(4);
    expect(lines(appendFile)).toEqual([]);
  });

  test("kill -9 of the driver mid model call: another machine finds it Suspended and resumes the saved VM", async () => {
    const { url, machine } = await setup({
      turns: [
        { tool_calls: [{ id: "s1", name: "echo__add", arguments: { a: 1, b: 2 } }] },
        { text: "slow", delay_ms: 30_000 },
        { text: "The answer is 3." },
      ],
    });
    const a = machine();
    const b = machine();
    const running = a.start(["thread", "start", "add one and two"]);
    await waitFor(
      () => rows(url, "SELECT 1 FROM thread_messages WHERE role = 'tool' AND call_id = 's1'").length === 1,
      "the first tool result",
    );
    await new Promise((r) => setTimeout(r, 300));
    running.child.kill("SIGKILL");
    await running.done;
    const id = threadsOf(url)[0]!.thread_id;
    expect(threadsOf(url)[0]).toMatchObject({ state: "running" });
    const vm = rows<{ n: number }>(url, "SELECT length(vm) AS n FROM thread_vms WHERE thread_id = $1", [id]);
    expect(vm[0]!.n).toBeGreaterThan(1000);

    const show = await b.run(["thread", "show", id, "--json"]);
    expect(JSON.parse(show.stdout).thread).toMatchObject({ state: "suspended", driver: null });
    const resumed = await b.run(["thread", "resume", id, "--json"]);
    expect(resumed.stderr).toBe("");
    expect(resumed.marker).toMatchObject({ outcome: "completed", final_result: "The answer is 3." });
    expect(toolResults(url, id)).toEqual([{ call_id: "s1", n: 1 }]);
  });

  test("two machines race to resume one thread: one drives it, the other is refused, the call runs once", async () => {
    const { url, appendFile, machine } = await setup({
      turns: [
        { tool_calls: [{ id: "r1", name: "append", arguments: { line: "raced" } }] },
        // Slow enough that the winner still drives when the loser tries to claim the thread.
        { text: "Done after the race.", delay_ms: 3000 },
      ],
    });
    const a = machine();
    // The driver gives up waiting after a second: the thread stays Waiting with no driver.
    const first = await a.run(["thread", "start", "append a line", "--wait-approval", "1", "--json"]);
    expect(first.status).toBe(0);
    expect(first.marker).toMatchObject({ outcome: "waiting", state: "waiting" });
    const id = String(first.marker?.thread_id);
    expect(threadsOf(url)[0]).toMatchObject({ state: "waiting", driver: null });
    const decide = await a.run(["thread", "approve", id, "--no-resume", "--json"]);
    expect(decide.status).toBe(0);
    expect(lines(appendFile)).toEqual([]);

    const c = machine();
    const d = machine();
    const [rc, rd] = await Promise.all([
      c.run(["thread", "resume", id, "--json"]),
      d.run(["thread", "resume", id, "--json"]),
    ]);
    const results = [rc, rd].sort((x, y) => (x.status ?? 0) - (y.status ?? 0));
    expect(results.map((r) => r.status)).toEqual([0, 4]);
    expect(results[0]!.marker).toMatchObject({ outcome: "completed", state: "done" });
    // Which refusal the loser met: the service's check, or the claim transaction (both at once).
    console.log(`race loser: ${results[1]!.stderr.trim()}`);
    expect(results[1]!.stderr).toMatch(
      new RegExp(`thread ${id} (is being driven by process \\d+@|is not resumable from)`),
    );
    expect(lines(appendFile)).toEqual(["raced"]);
    expect(toolResults(url, id)).toEqual([{ call_id: "r1", n: 1 }]);
    // One move to running after the decision: the loser wrote nothing.
    const moves = rows<{ payload: string }>(
      url,
      "SELECT payload FROM events WHERE entity_kind = 'thread' AND entity_id = $1 AND type = 'thread.state_changed' ORDER BY id",
      [id],
    ).map((e) => (JSON.parse(e.payload) as { from: string; to: string }).to);
    expect(moves).toEqual(["running", "waiting", "running", "completed", "done"]);
  });
});
