// Threads on PostgreSQL in one process: the engine over a real server (test/harness/pg.ts),
// Monty, the scripted model over HTTP, the MCP fixture server and the append tool — the same
// statements the SQLite suites run. Two services on two sessions stand in for two processes.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../test/harness/pg.js";
import { openSqlite, PgStore, SqliteStore } from "../store/index.js";
import { type ScriptedModel, startScriptedModel } from "../testing/scripted-model.js";
import { scriptedModelClient } from "../testing/scripted-model-client.js";
import type { ScriptInput } from "../testing/scripted-model-script.js";
import { kitActions } from "../testing/threads-kit.js";
import { compileThreadsConfig } from "./config.js";
import { Driver } from "./engine.js";
import { ThreadService, type ThreadServiceOptions } from "./service.js";
import { listSkills } from "./skills.js";
import { montyVm } from "./vm.js";

const BROKEN = `def run_loop(goal, config):\n    raise ValueError("broken on purpose")\n\nrun_loop(goal, config)\n`;

vi.setConfig({ testTimeout: 90_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});
afterAll(() => cluster?.stop());

interface PgKit {
  url: string;
  model: ScriptedModel;
  appendFile: string;
  /** A service on a session of its own (another "process"). */
  service(extra?: Partial<ThreadServiceOptions>): ThreadService;
  store(): PgStore;
}

async function pgKit(script: ScriptInput, threads?: unknown): Promise<PgKit> {
  const url = cluster.createDatabase();
  const model = await startScriptedModel({ script });
  closers.push(() => model.close());
  const dir = mkdtempSync(join(tmpdir(), "ratchet-threads-pg-"));
  closers.push(() => rmSync(dir, { recursive: true, force: true }));
  const appendFile = join(dir, "appended.txt");
  const config = compileThreadsConfig(threads);
  const store = () => {
    const s = PgStore.open(url);
    closers.push(() => s.close());
    return s;
  };
  return {
    url,
    model,
    appendFile,
    store,
    service: (extra = {}) =>
      new ThreadService({
        store: store(),
        config,
        model: () => scriptedModelClient(model),
        actions: () => kitActions(appendFile, config.effects),
        ...extra,
      }),
  };
}

const THREAD_TABLES = [
  "threads",
  "thread_messages",
  "thread_checkpoints",
  "thread_vms",
  "thread_actions",
  "thread_approvals",
  "thread_leases",
  "action_grants",
  "documents",
  "orchestrator_failures",
  "mission_runs",
  "thread_inbox",
  "thread_journal",
];

describe.runIf(pgAvailable())("threads on PostgreSQL", () => {
  it("migration 4 has every thread table with SQLite's columns (plus thread_actions.seq) and indexes", () => {
    const lite = new SqliteStore(openSqlite(":memory:", { create: true }));
    const pg = PgStore.open(cluster.createDatabase());
    try {
      for (const t of THREAD_TABLES) {
        const sqliteCols = lite.sql.all<{ name: string }>(`SELECT name FROM pragma_table_info('${t}')`);
        const pgCols = pg.sql.all<{ name: string }>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
          [t],
        );
        const extra = t === "thread_actions" ? ["seq"] : [];
        expect(pgCols.map((c) => c.name).sort(), t).toEqual(
          [...sqliteCols.map((c) => c.name), ...extra].sort(),
        );
      }
      const sqliteIdx = lite.sql
        .all<{ name: string }>(
          `SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%' AND tbl_name IN (${THREAD_TABLES.map(() => "?").join(",")})`,
          THREAD_TABLES,
        )
        .map((r) => r.name);
      const pgIdx = pg.sql
        .all<{ name: string }>(
          `SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' AND tablename IN (${THREAD_TABLES.map(() => "?").join(",")})`,
          THREAD_TABLES,
        )
        .map((r) => r.name);
      expect(pgIdx.sort()).toEqual(sqliteIdx.sort());
      // TEXT compares byte-wise, as SQLite's BINARY does.
      const collations = pg.sql.all<{ c: string | null }>(
        "SELECT DISTINCT collation_name AS c FROM information_schema.columns WHERE table_name = 'threads' AND data_type = 'text'",
      );
      expect(collations).toEqual([{ c: "C" }]);
    } finally {
      lite.close();
      pg.close();
    }
  });

  it("runs a thread with tool calls to completion: one result per call, in order, events on the log", async () => {
    const k = await pgKit({
      turns: [
        {
          tool_calls: [
            { id: "c1", name: "echo__add", arguments: { a: 2, b: 3 } },
            { id: "c2", name: "echo__echo", arguments: { text: "hello" } },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5 },
        },
        { text: "The sum is 5.", usage: { prompt_tokens: 20, completion_tokens: 5 } },
      ],
    });
    const svc = k.service();
    const r = await svc.start("add two and three", { project: "web" });
    expect(r.outcome).toBe("completed");
    expect(r.thread).toMatchObject({
      state: "done",
      final_result: "The sum is 5.",
      step_count: 2,
      input_tokens: 30,
      output_tokens: 10,
      driver: null,
    });
    const id = r.thread.thread_id;
    // Another session reads the same rows.
    const other = k.service();
    const msgs = other.threads.messages(id);
    expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    expect(msgs.map((m) => m.id)).toEqual([...msgs.map((m) => m.id)].sort((a, b) => a - b));
    expect(msgs.filter((m) => m.role === "tool").map((m) => [m.call_id, m.content])).toEqual([
      ["c1", "5"],
      ["c2", "hello"],
    ]);
    expect(other.threads.actions(id).map((a) => [a.call_id, a.action, a.status])).toEqual([
      ["c1", "echo__add", "succeeded"],
      ["c2", "echo__echo", "succeeded"],
    ]);
    const detail = other.show(id);
    expect(detail.checkpoint?.bytes).toBeGreaterThan(1000);
    expect(detail.checkpoint?.script_state).toMatchObject({ step: 2 });
    const types = other.threads.store.listEvents({ entityKind: "thread", entityId: id }).map((e) => e.type);
    expect(types.filter((t) => t === "thread.step_completed")).toHaveLength(2);
    expect(types.at(-1)).toBe("thread.state_changed");
    expect(other.list({ state: "done" }).map((t) => t.thread_id)).toEqual([id]);
  });

  it("round-trips the records: VM bytes as BYTEA, journal upserts and batch rows, inbox, grants", async () => {
    const k = await pgKit({ turns: [{ text: "unused" }] });
    const svc = k.service();
    const t = svc.create("records only");
    const id = t.thread_id;
    const th = svc.threads;
    // Every byte value, a NUL first: nothing is text-encoded on the way.
    const vm = Buffer.concat([Buffer.from([0, 255, 0, 10, 13]), randomBytes(70_000)]);
    th.saveCheckpoint({
      thread_id: id,
      seq: 3,
      vm,
      call_name: "__llm_complete__",
      call_args: "{}",
      answered: 0,
      answer: null,
    });
    const back = k.service().threads.checkpoint(id)!;
    expect(Buffer.isBuffer(back.vm)).toBe(true);
    expect(back.vm.equals(vm)).toBe(true);
    expect(back).toMatchObject({ seq: 3, answered: 0, answer: null, script_state: null });
    th.setScriptState(id, '{"step":1}');
    th.markAnswered(id, 3, '{"value":1}');
    const vm2 = randomBytes(10);
    th.saveCheckpoint({
      thread_id: id,
      seq: 4,
      vm: vm2,
      call_name: "x",
      call_args: "{}",
      answered: 1,
      answer: "{}",
    });
    const again = th.checkpoint(id)!;
    expect(again.vm.equals(vm2)).toBe(true);
    // The script's state survives a new save that does not give one (COALESCE with the stored one).
    expect(again).toMatchObject({ seq: 4, answered: 1, script_state: '{"step":1}' });

    th.tx(() => {
      th.journal(id, 5, "__add_message__", '{"value":null}');
      th.journal(id, 5, "__emit_event__", '{"value":1}'); // the same seq again replaces the row
      th.journalMany(id, [
        { seq: 6, name: "__check_signals__", answer: '{"value":null}' },
        { seq: 7, name: "__add_message__", answer: '{"value":"a \\"quoted\\" text"}' },
      ]);
    });
    expect(k.service().threads.journalAfter(id, 4)).toEqual([
      { seq: 5, call_name: "__emit_event__", answer: '{"value":1}' },
      { seq: 6, call_name: "__check_signals__", answer: '{"value":null}' },
      { seq: 7, call_name: "__add_message__", answer: '{"value":"a \\"quoted\\" text"}' },
    ]);
    th.tx(() => th.clearJournal(id));
    expect(th.journalAfter(id, 0)).toEqual([]);

    const i1 = svc.inject(id, "first").inboxId;
    const i2 = svc.inject(id, "second").inboxId;
    expect(i2).toBe(i1 + 1);
    expect(th.signals(id)).toEqual({ cancel: false, next: { id: i1, content: "first" } });
    th.markDelivered(i1);
    expect(th.signals(id).next).toEqual({ id: i2, content: "second" });
    // Bad input: an empty message is refused naming the field, and nothing is queued.
    expect(() => svc.inject(id, "  ")).toThrow(/message must be a non-empty text/);
    expect(th.signals(id).next?.id).toBe(i2);

    th.tx(() => {
      th.addGrant("append", "web", "ap-1");
      th.addGrant("append", "web", "ap-2"); // a second grant of the same pair is a no-op
    });
    expect(th.grants().map((g) => g.approval_id)).toEqual(["ap-1"]);
    expect(svc.revoke("append", "web")).toEqual({ action: "append", project: "web" });
    expect(() => svc.revoke("append", "web")).toThrow(/no standing grant for action append in project web/);
  });

  it("missions, documents and versions: a failed action fires self-improvement; a failing version falls back", async () => {
    const k = await pgKit({
      turns: [
        { tool_calls: [{ id: "f1", name: "echo__fail", arguments: {} }] },
        { text: "The tool failed; giving up." },
        {
          match: { contains: "Mission self-improvement" },
          text: '{"skills":[{"name":"fail-tool","content":"echo__fail always fails: do not call it.","keywords":["fail"]}],"insights":[{"title":"failing tool","content":"echo__fail is broken"}],"orchestrator":null,"prompt":null}',
        },
      ],
      default: { text: "fine" },
    });
    const svc = k.service();
    const r = await svc.start("try the fail tool");
    expect(r.thread.state).toBe("done");
    const report = svc.missionReports.find((m) => m.mission === "self-improvement")!;
    expect(svc.threads.require(report.threadId!)).toMatchObject({
      kind: "mission:self-improvement",
      parent_thread_id: r.thread.thread_id,
      state: "done",
    });
    const other = k.service({ missions: false });
    expect(listSkills(other).map((x) => [x.name, x.source])).toEqual([["fail-tool", "learned"]]);
    expect(other.docs.list("insight").map((d) => d.title)).toEqual(["failing tool"]);
    // One mission run per (mission, source thread): the unique holds on PostgreSQL too.
    const db = k.store();
    expect(db.sql.all("SELECT mission, id FROM mission_runs")).toEqual([
      { mission: "self-improvement", id: 1 },
    ]);
    const again = db.tx(() =>
      db.sql.run(
        `INSERT INTO mission_runs (id, mission, day, source_thread_id, created_at) VALUES (2, 'self-improvement', 'd', ?, 'now')
         ON CONFLICT (mission, source_thread_id) DO NOTHING`,
        [r.thread.thread_id],
      ),
    );
    expect(again.changes).toBe(0);

    other.versions.save(BROKEN, montyVm);
    expect(other.versions.active().version).toBe(1);
    for (let i = 1; i <= 3; i++) {
      const f = await other.start(`attempt ${i}`);
      expect(f.outcome).toBe("failed");
      expect(f.thread.reason).toContain("orchestrator v1 failed: ValueError: broken on purpose");
    }
    expect(other.versions.active().version).toBe(0);
    expect(other.versions.get(1).disabled_reason).toMatch(/^3 consecutive failures/);
    expect(other.versions.rollback(0, "bad release").version).toBe(0);
  });

  it("approval decided by another session: the waiting driver runs the call once; deciding again is refused", async () => {
    const k = await pgKit(
      {
        turns: [
          { tool_calls: [{ id: "a1", name: "append", arguments: { line: "approved line" } }] },
          { text: "Appended." },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    );
    const svc = k.service();
    const running = svc.start("append a line");
    const other = k.service();
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      const t = other.threads.list()[0];
      if (t?.state === "waiting") id = t.thread_id;
      else await new Promise((r) => setTimeout(r, 25));
    }
    expect(id).toBeDefined();
    expect(other.show(id!).pending.map((p) => [p.call_id, p.action])).toEqual([["a1", "append"]]);
    expect(other.approve(id!).driven).toBe(true);
    const r = await running;
    expect(r.outcome).toBe("completed");
    expect(
      other.threads
        .messages(id!)
        .filter((m) => m.role === "tool")
        .map((m) => m.call_id),
    ).toEqual(["a1"]);
    expect(other.threads.actions(id!).map((a) => a.status)).toEqual(["succeeded"]);
    expect(() => other.approve(id!)).toThrow(/already approved/);
  });

  it("a driver that lost its thread to another process writes nothing more", async () => {
    // The attack: while this driver waits for the model, another process takes the thread over
    // (as restart recovery would, had it taken this one for dead). The reply must not land.
    const k = await pgKit({
      turns: [
        { tool_calls: [{ id: "l1", name: "echo__echo", arguments: { text: "x" } }], delay_ms: 1500 },
        { text: "late" },
      ],
    });
    const svc = k.service({ driverId: `1@host-a-${randomBytes(3).toString("hex")}` });
    const running = svc.start("be overtaken");
    const thief = k.store();
    let id: string | undefined;
    for (let i = 0; i < 400 && !id; i++) {
      if (k.model.requests().length > 0) id = svc.threads.list()[0]?.thread_id;
      else await new Promise((r) => setTimeout(r, 20));
    }
    expect(id).toBeDefined();
    const before = svc.threads.messages(id!).length;
    thief.tx(() =>
      thief.sql.run("UPDATE threads SET driver = ?, driver_heartbeat_ms = ? WHERE thread_id = ?", [
        "2@host-b",
        Date.now(),
        id!,
      ]),
    );
    await expect(running).rejects.toThrow(/is no longer driven by this process .*process 2@host-b has it/);
    const after = k.service().threads;
    expect(after.messages(id!)).toHaveLength(before);
    expect(after.require(id!)).toMatchObject({ state: "running", driver: "2@host-b" });
    expect(after.actions(id!)).toEqual([]);
  });

  it("a waiting thread claimed by a live driver cannot be claimed by a second one (the claim itself refuses)", async () => {
    // Past the service's own check (the second driver is made directly): the claim transaction is
    // what keeps one driver. Waiting with a pending approval is the case where no state move guards it.
    const k = await pgKit(
      {
        turns: [
          { tool_calls: [{ id: "w1", name: "append", arguments: { line: "once" } }] },
          { text: "Appended." },
        ],
      },
      { policy: { default: "allow", rules: [{ action: "append", decision: "require_approval" }] } },
    );
    const first = await k.service({ approvalWaitMs: 200 }).start("append a line");
    expect(first.outcome).toBe("waiting");
    const id = first.thread.thread_id;
    expect(first.thread.driver).toBeNull();
    const a = k.service({ driverId: "31@machine-a" });
    const ra = a.resume(id);
    expect(a.threads.require(id)).toMatchObject({ state: "waiting", driver: "31@machine-a" });
    const b = k.service({ driverId: "32@machine-b" });
    const second = new Driver(
      {
        threads: b.threads,
        docs: b.docs,
        versions: b.versions,
        config: b.config,
        actions: kitActions(k.appendFile, b.config.effects),
        model: () => scriptedModelClient(k.model),
        driverId: "32@machine-b",
      },
      id,
    );
    await expect(second.drive("resume")).rejects.toThrow(
      `thread ${id} is being driven by process 31@machine-a`,
    );
    expect(b.threads.require(id).driver).toBe("31@machine-a");
    b.approve(id);
    const done = await ra;
    expect(done.outcome).toBe("completed");
    expect(b.threads.actions(id).map((x) => [x.call_id, x.status])).toEqual([["w1", "succeeded"]]);
    expect(
      b.threads
        .messages(id)
        .filter((m) => m.role === "tool")
        .map((m) => m.call_id),
    ).toEqual(["w1"]);
  });

  it("two sessions claiming one suspended thread: the second finds the first's claim and is refused", async () => {
    const ac = new AbortController();
    const k = await pgKit({
      turns: [
        { tool_calls: [{ id: "s1", name: "echo__add", arguments: { a: 1, b: 2 } }] },
        { text: "interrupted", delay_ms: 10_000 },
        { text: "resumed" },
      ],
    });
    const first = k.service({ signal: ac.signal });
    const running = first.start("be interrupted");
    for (let i = 0; i < 400 && k.model.requests().length < 2; i++)
      await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    const r = await running;
    expect(r.outcome).toBe("suspended");
    const id = r.thread.thread_id;
    const a = k.service({ driverId: "11@machine-a" });
    const b = k.service({ driverId: "12@machine-b" });
    const ra = a.resume(id);
    // a's claim (driver and the move to running) committed before its first await: b is refused.
    await expect(b.resume(id)).rejects.toThrow(`thread ${id} is not resumable from running`);
    const done = await ra;
    expect(done.outcome).toBe("completed");
    expect(done.thread.final_result).toBe("resumed");
    expect(
      a.threads
        .messages(id)
        .filter((m) => m.role === "tool")
        .map((m) => m.call_id),
    ).toEqual(["s1"]);
  });
});
