/**
 * The workspace daemon (docs/daemon.md) end to end, with real processes: the same bytes and exit
 * statuses as in-process; 8 writer processes racing through one daemon; kill -9 of the daemon in
 * the middle of a write (the client reports the loss, nothing half-written, the next command
 * cleans the stale socket and starts a new daemon); never two daemons for one workspace; a stale
 * build never serving; sockets and folders that are not the caller's own never used; the switches
 * that keep everything in-process.
 */
import { spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  realpathSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { buildIdOf, type Request } from "../../src/daemon/index.js";
import {
  assertBuilt,
  childEnv,
  DAEMON_ON,
  makeWorkspace,
  publish,
  query,
  ROOT,
  snapshot,
  startRatchet,
  stepsByStatus,
  type TestWorkspace,
  waitFor,
  withDb,
} from "../helpers/cli.js";
import {
  CLIENTS,
  daemonLog,
  daemonPids,
  runVia,
  servedSoFar,
  stopDaemon,
  waitForDaemon,
} from "../helpers/daemon.js";

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const DAEMON_FILE = join(ROOT, "dist", "bundle", "daemon.cjs");
const TROUBLE = /SQLITE_BUSY|database is locked|internal error|SqliteError/i;
const workspaces: TestWorkspace[] = [];

beforeAll(() => {
  assertBuilt();
});
afterAll(async () => {
  for (const ws of workspaces) {
    for (const pid of daemonPids(ws)) process.kill(pid, "SIGKILL");
    ws.remove();
  }
});

async function workspace(prefix: string): Promise<TestWorkspace> {
  const ws = await makeWorkspace(`ratchet-e2e-daemon-${prefix}-`);
  workspaces.push(ws);
  return ws;
}

const on = (ws: TestWorkspace, args: string[], input?: string) =>
  ws.run(args, { env: DAEMON_ON, ...(input !== undefined ? { input } : {}) });
const off = (ws: TestWorkspace, args: string[], input?: string) =>
  ws.run(args, input !== undefined ? { input } : {});

/** A running daemon for `ws`: the first served command starts it; returns its pid. */
async function warm(ws: TestWorkspace): Promise<number> {
  await on(ws, ["plan", "sweep"]);
  return waitForDaemon(ws);
}

const th = (title: string) => ({ title, type: "THINKING" });

describe.each(["node", "native"] as const)(
  "through the daemon (%s client), a command prints and exits exactly as in-process",
  (client) => {
    test("successes, refusals, bad input, missing things: same stdout, stderr and status", async () => {
      const ws = await workspace("same");
      const on = (ws: TestWorkspace, args: string[], input?: string) =>
        runVia(client, args, { cwd: ws.dir, env: DAEMON_ON, ...(input !== undefined ? { input } : {}) });
      await warm(ws);
      const p = await publish(ws, { goal: "same bytes", steps: [th("a"), th("b"), th("c"), th("d")] });
      const [A, B, C, D] = p.step_ids as [string, string, string, string];
      writeFileSync(join(ws.dir, "bad.json"), "{ not json");
      writeFileSync(join(ws.dir, "notes.txt"), "{}");
      // Pairs run one way then the other on fresh targets, or on the same state when they refuse.
      const cases: [string[], string[], string?][] = [
        [
          ["step", "start", A],
          ["step", "start", B],
        ],
        [
          ["step", "log", A, "--text", "hello"],
          ["step", "log", B, "--text", "hello"],
        ],
        [
          ["step", "complete", A, "--summary", "ok"],
          ["step", "complete", B, "--summary", "ok"],
        ],
        [
          ["step", "start", A],
          ["step", "start", A],
        ], // refused: COMPLETED → IN_PROGRESS
        [["step", "start", "-"], ["step", "start", "-"], JSON.stringify({ step_id: "ghost-A" })],
        [["step", "start", "-"], ["step", "start", "-"], "{ nope"],
        [
          ["step", "start", "bad.json"],
          ["step", "start", "bad.json"],
        ],
        [
          ["step", "start", "missing.json"],
          ["step", "start", "missing.json"],
        ],
        [
          ["step", "start", "notes.txt"],
          ["step", "start", "notes.txt"],
        ],
        [
          ["step", "start"],
          ["step", "start"],
        ],
        [
          ["step", "complete", C, "--bogus", "x"],
          ["step", "complete", C, "--bogus", "x"],
        ],
        [
          ["metric", "record", "-"],
          ["metric", "record", "-"],
          JSON.stringify({ name: "m", value: 1, project: "nope" }),
        ],
        [["plan", "finish", "-"], ["plan", "finish", "-"], JSON.stringify({ plan_id: "nope" })],
        [
          ["step", "start", C, "--lease-seconds", "60"],
          ["step", "start", D, "--lease-seconds", "60"],
        ],
        // Quoting both ways: JSON escapes, control characters, non-ASCII, astral characters.
        [
          ["step", "log", C, "--text", 'quotes " \\ tab\t é 😀 \u0001\nline'],
          ["step", "log", D, "--text", 'quotes " \\ tab\t é 😀 \u0001\nline'],
        ],
      ];
      const norm = (s: string) =>
        s
          .replaceAll(`${p.plan_id}-B`, "<S>")
          .replaceAll(`${p.plan_id}-A`, "<S>")
          .replaceAll(`${p.plan_id}-C`, "<S>")
          .replaceAll(`${p.plan_id}-D`, "<S>")
          .replace(/"\d+@/g, '"<pid>@')
          .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g, "<time>");
      const before = servedSoFar(ws);
      for (const [viaDaemon, inProcess, input] of cases) {
        const a = await on(ws, viaDaemon, input);
        const b = await off(ws, inProcess, input);
        const what = `${viaDaemon.join(" ")} vs ${inProcess.join(" ")}`;
        expect(a.status, what).toBe(b.status);
        expect(norm(a.stdout), what).toBe(norm(b.stdout));
        expect(norm(a.stderr), what).toBe(norm(b.stderr));
      }
      // The caller's environment, as in-process: the publishing session's id comes from it.
      const session = await runVia(client, ["plan", "publish", "-"], {
        cwd: ws.dir,
        env: { ...DAEMON_ON, CLAUDE_SESSION_ID: `sess-${client}` },
        input: JSON.stringify({ goal: "session", steps: [th("x")] }),
      });
      expect(session.marker, session.stderr).toMatchObject({ ok: true, session_id: `sess-${client}` });
      const publishNone = JSON.stringify({ goal: "none", steps: [th("x")] });
      const [viaDaemon, inProcess] = [
        await on(ws, ["plan", "publish", "-"], publishNone),
        await off(ws, ["plan", "publish", "-"], publishNone),
      ];
      expect(viaDaemon.marker?.session_id).toBe(inProcess.marker?.session_id);
      // The lease is the calling process's, as in-process (not the daemon's).
      const [leased] = query<{ lease_holder: string }>(
        ws,
        "SELECT lease_holder FROM steps WHERE step_id = ?",
        C,
      );
      expect(leased?.lease_holder).toMatch(/^\d+@/);
      expect(leased?.lease_holder).not.toBe(`${daemonPids(ws)[0]}@`);
      // Every daemon-side command of the list went through the daemon.
      expect((await stopDaemon(ws)) - before).toBeGreaterThanOrEqual(cases.length);
    });
  },
);

describe("guarantees through the daemon", () => {
  test("8 writer processes, one process per op, racing through one daemon: every outcome, exact counts", async () => {
    const ws = await workspace("writers");
    const WRITERS = 8;
    const STEPS = 4;
    const CONTESTED = 3;
    const mine = await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        publish(ws, { goal: `writer ${w}`, steps: Array.from({ length: STEPS }, (_, i) => th(`s${i}`)) }),
      ),
    );
    const contested = await publish(ws, {
      goal: "contested",
      steps: Array.from({ length: CONTESTED }, (_, i) => th(`c${i}`)),
    });
    await warm(ws);
    const before = snapshot(ws);
    const servedBefore = servedSoFar(ws);
    const results = await Promise.all(
      mine.map(async (plan, w) => {
        const statuses: number[] = [];
        const outs: string[] = [];
        const run = async (args: string[], input?: string) => {
          const r = await startRatchet(args, { cwd: ws.dir, env: DAEMON_ON, ...(input ? { input } : {}) })
            .done;
          statuses.push(r.status ?? -1);
          outs.push(r.stderr);
          return r;
        };
        for (const id of plan.step_ids as string[]) {
          await run(["step", "start", id]);
          await run(["step", "log", id, "--text", `w${w}`]);
          await run(["step", "complete", "-"], JSON.stringify({ step_id: id, summary: "done" }));
        }
        const wins: string[] = [];
        for (const id of contested.step_ids as string[]) {
          const r = await run(["step", "start", id]);
          if (r.status === 0) wins.push(id);
        }
        return { statuses, outs, wins };
      }),
    );
    for (const [w, r] of results.entries()) {
      for (const e of r.outs) expect(e, `writer ${w}`).not.toMatch(TROUBLE);
      expect(r.statuses.slice(0, STEPS * 3), `writer ${w}`).toEqual(Array(STEPS * 3).fill(0));
      expect(
        r.statuses.slice(STEPS * 3).every((s) => s === 0 || s === 4),
        `writer ${w}`,
      ).toBe(true);
    }
    // Each contested step was won by exactly one writer.
    const wins = results.flatMap((r) => r.wins).sort();
    expect(wins).toEqual([...(contested.step_ids as string[])].sort());
    const after = snapshot(ws);
    // Per writer: start, log, complete per step, then its plan closes (review in_progress +
    // completed, plan completed); the contested starts that won.
    expect(after.counts.events - before.counts.events).toBe(WRITERS * (STEPS * 3 + 3) + CONTESTED);
    expect(after.counts.step_logs - before.counts.step_logs).toBe(WRITERS * (STEPS + 1));
    expect(stepsByStatus(ws)).toEqual({
      COMPLETED: WRITERS * (STEPS + 1),
      IN_PROGRESS: CONTESTED,
      PENDING: 1,
    });
    const ids = query<{ id: number }>(ws, "SELECT id FROM events ORDER BY id").map((r) => r.id);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
    expect(daemonPids(ws)).toHaveLength(1);
    const total = WRITERS * (STEPS * 3 + CONTESTED);
    expect((await stopDaemon(ws)) - servedBefore).toBe(total);
  });

  test.each(["node", "native"] as const)(
    "kill -9 of the daemon in the middle of a write (%s client): the client reports it, nothing half-written, the next command starts a new daemon",
    async (via) => {
      const ws = await workspace("kill");
      const p = await publish(ws, { goal: "kill me", steps: [th("a"), th("b")] });
      const [A, B] = p.step_ids as [string, string];
      const pid = await warm(ws);
      const before = snapshot(ws);
      // Hold the write lock so the daemon's op blocks inside its transaction's BEGIN.
      const holder = new Database(ws.dbPath);
      holder.exec("BEGIN IMMEDIATE");
      let released = false;
      try {
        const client = { done: runVia(via, ["step", "start", A], { cwd: ws.dir, env: DAEMON_ON }) };
        // The daemon sleeps in SQLite's busy handler once it runs the op (its event loop otherwise
        // waits in epoll).
        await waitFor(
          () => readFileSync(`/proc/${pid}/wchan`, "utf8").includes("nanosleep"),
          "the daemon to wait for the write lock",
        );
        process.kill(pid, "SIGKILL");
        const r = await client.done;
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(
          /the daemon ended before answering; the op may or may not have been applied/,
        );
        expect(r.marker).toMatchObject({ ok: false, code: "daemon_lost", ambiguous: true, exit_status: 1 });
        holder.exec("ROLLBACK");
        released = true;
      } finally {
        if (!released) holder.exec("ROLLBACK");
        holder.close();
      }
      // Nothing half-written: the store is as before the write, intact.
      expect(snapshot(ws)).toEqual(before);
      expect(query(ws, "SELECT status FROM steps WHERE step_id = ?", A)).toEqual([{ status: "PENDING" }]);
      expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
      // The socket of the dead daemon is still there: the next command is refused by it, runs
      // in-process, and starts a new daemon, which removes the stale socket.
      expect(lstatSync(join(ws.ratchetDir, "daemon.sock")).isSocket()).toBe(true);
      const next = await on(ws, ["step", "start", A]);
      expect(next.status, next.stderr).toBe(0);
      const fresh = await waitForDaemon(ws);
      expect(fresh).not.toBe(pid);
      expect(daemonLog(ws)).toContain("removed a stale socket");
      const served = servedSoFar(ws);
      const viaNew = await on(ws, ["step", "start", B]);
      expect(viaNew.status, viaNew.stderr).toBe(0);
      expect((await stopDaemon(ws)) - served).toBe(1);
    },
  );

  test("two daemons never serve one workspace: started together, one serves and the other leaves", async () => {
    const ws = await workspace("two");
    // Started as the client starts one: detached, appending to daemon.log.
    const log = openSync(join(ws.ratchetDir, "daemon.log"), "a");
    const procs = [0, 1, 2].map(() =>
      spawn(process.execPath, [DAEMON_FILE, ws.ratchetDir], { stdio: ["ignore", log, log], detached: true }),
    );
    closeSync(log);
    const exits = procs.map((c) => new Promise<number | null>((r) => c.on("exit", (code) => r(code))));
    await waitForDaemon(ws);
    // Two of the three give up on the lock (after waiting for it a little), exiting 0.
    const first = await Promise.race(exits.map((e, i) => e.then((code) => ({ i, code }))));
    expect(first.code).toBe(0);
    await waitFor(() => procs.filter((c) => c.exitCode !== null).length === 2, "two daemons to leave");
    expect(daemonPids(ws)).toHaveLength(1);
    expect(daemonLog(ws).match(/another daemon holds the workspace lock/g)).toHaveLength(2);
    // Many cold clients at once: each may start a daemon; still exactly one serves.
    for (const pid of daemonPids(ws)) process.kill(pid, "SIGTERM");
    await waitFor(() => daemonPids(ws).length === 0, "the daemon to stop");
    const plan = await publish(ws, { goal: "cold", steps: Array.from({ length: 8 }, (_, i) => th(`s${i}`)) });
    const cold = await Promise.all(
      (plan.step_ids as string[]).map(
        (id) => startRatchet(["step", "start", id], { cwd: ws.dir, env: DAEMON_ON }).done,
      ),
    );
    for (const r of cold) expect(r.status, r.stderr).toBe(0);
    await waitForDaemon(ws);
    await waitFor(() => daemonPids(ws).length === 1, "the extra daemons to leave");
    expect(stepsByStatus(ws, [plan.plan_id as string])).toMatchObject({ IN_PROGRESS: 8 });
    await stopDaemon(ws);
  });

  test("a new build on disk: the running daemon stops before serving, a new one takes over", async () => {
    const ws = await workspace("build");
    const p = await publish(ws, { goal: "rebuild", steps: [th("a"), th("b")] });
    const old = await warm(ws);
    // A rebuild gives daemon.cjs a new identity (a new file); its modification time is part of it.
    const st = statSync(DAEMON_FILE);
    utimesSync(DAEMON_FILE, st.atime, new Date(st.mtimeMs + 1000));
    const r = await on(ws, ["step", "start", (p.step_ids as string[])[0] as string]);
    expect(r.status, r.stderr).toBe(0);
    await waitFor(() => !daemonPids(ws).includes(old), "the stale daemon to stop");
    expect(daemonLog(ws)).toMatch(/stopping: (the Ratchet build on disk changed|a client of another build)/);
    const fresh = await waitForDaemon(ws);
    expect(fresh).not.toBe(old);
    const served = servedSoFar(ws);
    expect((await on(ws, ["step", "start", (p.step_ids as string[])[1] as string])).status).toBe(0);
    expect((await stopDaemon(ws)) - served).toBe(1);
  });
});

describe("what the client trusts", () => {
  test("a socket owned by another user is never used nor removed; a daemon refuses to replace it", async () => {
    const ws = await workspace("uid");
    const p = await publish(ws, { goal: "foreign", steps: [th("a")] });
    const sock = join(ws.ratchetDir, "daemon.sock");
    let connections = 0;
    const server = createServer((c) => {
      connections++;
      c.destroy();
    });
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      chownSync(sock, 4242, 4242);
      const r = await on(ws, ["step", "start", (p.step_ids as string[])[0] as string]);
      expect(r.status, r.stderr).toBe(0);
      expect(connections).toBe(0);
      expect(lstatSync(sock).uid).toBe(4242);
      // A daemon started by hand will not take the place of someone else's socket.
      const d = spawn(process.execPath, [DAEMON_FILE, ws.ratchetDir], { stdio: "ignore" });
      const code = await new Promise<number | null>((res) => d.on("exit", res));
      expect(code).toBe(2);
      expect(daemonLog(ws)).toBe(""); // its complaint went to its stderr (ignored); the log is the client's
      expect(lstatSync(sock).uid).toBe(4242);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("a folder writable by others, RATCHET_NO_DAEMON=1, --db and a PostgreSQL workspace: no daemon", async () => {
    const ws = await workspace("off");
    const p = await publish(ws, { goal: "off", steps: [th("a"), th("b"), th("c"), th("d")] });
    const [A, B, C] = p.step_ids as [string, string, string];
    const sock = join(ws.ratchetDir, "daemon.sock");
    chmodSync(ws.ratchetDir, 0o777);
    expect((await on(ws, ["step", "start", A])).status).toBe(0);
    chmodSync(ws.ratchetDir, 0o755);
    expect(
      (await ws.run(["step", "start", B], { env: { ...DAEMON_ON, RATCHET_NO_DAEMON: "1" } })).status,
    ).toBe(0);
    expect((await on(ws, ["--db", ws.dbPath, "step", "start", C])).status).toBe(0);
    writeFileSync(
      join(ws.ratchetDir, "config.json"),
      JSON.stringify({ store: { url: "postgres://127.0.0.1:1/x" } }),
    );
    const pg = await on(ws, ["step", "start", "x-A"]);
    expect(pg.status).not.toBe(0);
    expect(existsSync(sock)).toBe(false);
    expect(daemonPids(ws)).toEqual([]);
    expect(stepsByStatus(ws, [p.plan_id as string])).toMatchObject({ IN_PROGRESS: 3 });
  });

  test("the socket is 0600; the daemon leaves when idle and when its workspace is removed", async () => {
    const ws = await workspace("idle");
    await on(ws, ["plan", "sweep"]);
    const pid = await waitForDaemon(ws);
    expect(statSync(join(ws.ratchetDir, "daemon.sock")).mode & 0o777).toBe(0o600);
    process.kill(pid, "SIGTERM");
    await waitFor(() => daemonPids(ws).length === 0, "the daemon to stop");
    expect(existsSync(join(ws.ratchetDir, "daemon.sock"))).toBe(false);
    // Idle: a short idle time from the environment of the command that starts it.
    await ws.run(["plan", "sweep"], { env: { ...DAEMON_ON, RATCHET_DAEMON_IDLE_MS: "300" } });
    await waitFor(() => /stopping: idle for 300 ms/.test(daemonLog(ws)), "the idle daemon to stop");
    await waitFor(() => daemonPids(ws).length === 0, "the idle daemon to exit");
    expect(existsSync(join(ws.ratchetDir, "daemon.sock"))).toBe(false);
    // A removed workspace: the daemon notices its socket is gone and exits.
    const other = await workspace("gone");
    await on(other, ["plan", "sweep"]);
    await waitForDaemon(other);
    other.remove();
    await waitFor(() => daemonPids(other).length === 0, "the daemon of a removed workspace to exit");
  });
});

describe.each(["node", "native"] as const)("the %s client against a daemon that misbehaves", (client) => {
  type Behaviour = "close-at-once" | "refuse" | "close-after-request" | "other-build" | "reply";
  const REPLY = { status: 7, stdout: 'out "é" 😀\n\u0001{"x":1}\n', stderr: "err \\ \t line\n" };

  /** A stand-in daemon on the workspace's socket; the real daemon is kept out by holding its lock. */
  async function withFake(ws: TestWorkspace, behave: Behaviour, fn: (requests: Request[]) => Promise<void>) {
    const lock = new Database(join(ws.ratchetDir, "daemon.lock"), { timeout: 0 });
    lock.pragma("journal_mode = DELETE");
    lock.exec("BEGIN EXCLUSIVE");
    const requests: Request[] = [];
    const build = behave === "other-build" ? "0:0:0:0" : buildIdOf(DAEMON_FILE);
    // the stand-in's key, as a real daemon writes it before it listens
    writeFileSync(join(ws.ratchetDir, "daemon.key"), `${"ab".repeat(32)}\n`, { mode: 0o600 });
    const server = createServer((c) => {
      if (behave === "close-at-once") return void c.destroy();
      c.write(`${JSON.stringify({ ratchet_daemon: 1, build, pid: 1 })}\n`);
      let buf = "";
      c.setEncoding("utf8").on("data", (chunk: string) => {
        buf += chunk;
        if (!buf.includes("\n")) return;
        requests.push(JSON.parse(buf.slice(0, buf.indexOf("\n"))) as Request);
        if (behave === "refuse") c.end(`${JSON.stringify({ refused: "not_served" })}\n`);
        else if (behave === "reply") c.end(`${JSON.stringify(REPLY)}\n`);
        else c.destroy();
      });
    });
    await new Promise<void>((r) => server.listen(join(ws.ratchetDir, "daemon.sock"), r));
    try {
      await fn(requests);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
      lock.close();
    }
  }

  async function setup(prefix: string) {
    const ws = await workspace(`${client}-${prefix}`);
    const p = await publish(ws, { goal: prefix, steps: [th("a")] });
    return { ws, A: (p.step_ids as string[])[0] as string };
  }
  const status = (ws: TestWorkspace, id: string) =>
    query<{ status: string }>(ws, "SELECT status FROM steps WHERE step_id = ?", id)[0]?.status;
  const run = (ws: TestWorkspace, A: string) =>
    runVia(client, ["step", "start", "-"], {
      cwd: ws.dir,
      input: JSON.stringify({ step_id: A }),
      env: { ...DAEMON_ON, DAEMON_TEST_MARK: "mark ✓" },
    });

  test("closed before its hello: nothing was sent, the command runs in-process with its stdin", async () => {
    const { ws, A } = await setup("hello");
    await withFake(ws, "close-at-once", async (requests) => {
      const r = await run(ws, A);
      expect(r.status, r.stderr).toBe(0);
      expect(requests).toEqual([]);
    });
    expect(status(ws, A)).toBe("IN_PROGRESS");
  });

  test("a hello of another build: nothing is sent, the command runs in-process", async () => {
    const { ws, A } = await setup("build");
    await withFake(ws, "other-build", async (requests) => {
      expect((await run(ws, A)).status).toBe(0);
      expect(requests).toEqual([]);
    });
    expect(status(ws, A)).toBe("IN_PROGRESS");
  });

  test("a refusal after the request: the command runs in-process with the same stdin; the request was complete", async () => {
    const { ws, A } = await setup("refuse");
    await withFake(ws, "refuse", async (requests) => {
      const r = await run(ws, A);
      expect(r.status, r.stderr).toBe(0);
      expect(r.marker).toMatchObject({ ok: true, op: "start-step", step_id: A });
      expect(requests).toHaveLength(1);
      const [req] = requests as [Request];
      expect(req.args).toEqual(["step", "start", "-"]);
      expect(req.cwd).toBe(realpathSync(ws.dir));
      expect(req.env.DAEMON_TEST_MARK).toBe("mark ✓");
      expect(Buffer.from(req.stdin ?? "", "base64").toString("utf8")).toBe(JSON.stringify({ step_id: A }));
      expect(req.stdinIsTTY).toBe(false);
      expect(req.build).toBe(buildIdOf(DAEMON_FILE));
    });
    expect(status(ws, A)).toBe("IN_PROGRESS");
  });

  test("the connection lost after the request: exit 1, daemon_lost, and no second attempt", async () => {
    const { ws, A } = await setup("lost");
    await withFake(ws, "close-after-request", async (requests) => {
      const r = await run(ws, A);
      expect(r.status).toBe(1);
      expect(r.marker).toMatchObject({ ok: false, code: "daemon_lost", ambiguous: true });
      expect(r.stderr).toContain("the op may or may not have been applied");
      expect(requests).toHaveLength(1);
    });
    expect(status(ws, A)).toBe("PENDING");
  });

  test("a reply is printed byte for byte with its exit status", async () => {
    const { ws, A } = await setup("reply");
    await withFake(ws, "reply", async () => {
      const r = await run(ws, A);
      expect(r.status).toBe(REPLY.status);
      expect(r.stdout).toBe(REPLY.stdout);
      expect(r.stderr).toBe(REPLY.stderr);
    });
    expect(status(ws, A)).toBe("PENDING");
  });
});

describe.each(["node", "native"] as const)("a reader that went away (%s client)", (client) => {
  test("stdout closed before the reply: the op is committed and the status kept, no error", async () => {
    const ws = await workspace(`${client}-epipe`);
    await warm(ws);
    const [cmd, ...pre] = CLIENTS[client];
    const child = spawn(cmd, [...pre, "plan", "publish", "-"], {
      cwd: ws.dir,
      env: childEnv(DAEMON_ON),
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.stdin.end(JSON.stringify({ goal: "nobody reads this", steps: [th("a")] }));
    const code = await new Promise<number | null>((r) => child.on("close", (c) => r(c)));
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|internal error|cannot write/);
    expect(query(ws, "SELECT goal FROM plans")).toEqual([{ goal: "nobody reads this" }]);
    expect((await stopDaemon(ws)) >= 1).toBe(true);
  });
});
