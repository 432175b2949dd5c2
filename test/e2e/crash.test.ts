/**
 * Crashes and signals around `ratchet step run`: a `kill -9` leaves a consistent store and a step
 * whose lease a sweep later fails; SIGINT / SIGTERM cancel the command's whole process group and
 * fail the step with exit status 130.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  DAEMON_ON,
  listTree,
  liveGroupMembers,
  makeWorkspace,
  ok,
  publish,
  query,
  startRatchet,
  type TestWorkspace,
  waitFor,
  withDb,
} from "../helpers/cli.js";
import { daemonLog, stopDaemon, waitForDaemon } from "../helpers/daemon.js";

/** The descriptors of process `pid` open on `file` (one per SQLite connection to it). */
function openOn(pid: number, file: string): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === file) n++;
    } catch {}
  }
  return n;
}

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const workspaces: TestWorkspace[] = [];
/** Process groups of commands we started, killed at the end whatever happened. */
const groups = new Set<number>();

beforeAll(() => {
  assertBuilt();
});
afterAll(async () => {
  for (const ws of workspaces) await stopDaemon(ws);
  for (const pgid of groups) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const ws of workspaces) ws.remove();
});

interface StepRow {
  status: string;
  lease_holder: string | null;
  lease_expires_at: number | null;
  failure_reason: string | null;
  exit_code: number | null;
}

function step(ws: TestWorkspace, id: string): StepRow {
  const [row] = query<StepRow>(ws, "SELECT * FROM steps WHERE step_id = ?", id);
  if (!row) throw new Error(`no step ${id}`);
  return row;
}

/**
 * Starts `step run` on a command that records its process group id (bash is the group leader) in
 * `<ws>/<pidFile>` and then waits; resolves once the command runs and the step is IN_PROGRESS.
 */
/** The process group of `pid` (field 5 of /proc/<pid>/stat). */
function processGroupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

async function startRun(ws: TestWorkspace, stepId: string, command: string, extra: object = {}) {
  const pidFile = join(ws.dir, `${stepId}.pgid`);
  const run = startRatchet(["step", "run", "-"], {
    cwd: ws.dir,
    input: JSON.stringify({
      step_id: stepId,
      type: "COMMAND",
      command: `echo $$ > ${JSON.stringify(pidFile)}; ${command}`,
      ...extra,
    }),
  });
  await waitFor(
    () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "",
    "the command to start",
  );
  // The command's shell shares its process group with the launcher that supervises it.
  const pgid = processGroupOf(Number(readFileSync(pidFile, "utf8").trim()));
  groups.add(pgid);
  await waitFor(() => step(ws, stepId).status === "IN_PROGRESS", "the step to be IN_PROGRESS");
  return { run, pgid };
}

// With the workspace daemon on, every command here but `step run` itself (publish, start, the
// sweeps) goes through it; `step run` always runs in-process (docs/daemon.md).
describe.each([
  ["in-process", false],
  ["with the daemon", true],
] as const)("kill -9 of step run (%s)", (_mode, daemon) => {
  test("the store stays consistent, the step keeps its lease, and a sweep after expiry fails it", async () => {
    const made = await makeWorkspace("ratchet-e2e-crash-");
    workspaces.push(made);
    const ws: TestWorkspace = daemon
      ? { ...made, run: (args, opts = {}) => made.run(args, { ...opts, env: { ...DAEMON_ON, ...opts.env } }) }
      : made;
    const p = await publish(ws, { goal: "Crash me", steps: [{ title: "long build", type: "COMMAND" }] });
    const [A] = p.step_ids as [string];
    if (daemon) {
      const pid = await waitForDaemon(ws); // the first publish started it
      // The daemon checkpoints from its worker thread: a second connection to the file is open.
      const db = join(ws.ratchetDir, "ratchet.db");
      await waitFor(() => openOn(pid, db) === 2, "the daemon's checkpoint worker to open the store");
    }
    // A bystander whose lease is far from expiry: no sweep may touch it.
    const b = await publish(ws, { goal: "Bystander", steps: [{ title: "thinking", type: "THINKING" }] });
    const [B] = b.step_ids as [string];
    await ok(ws, ["step", "start"], { step_id: B, lease_seconds: 3600 });

    const { run, pgid } = await startRun(ws, A, "sleep 30", { lease_seconds: 1 });
    const ratchetPid = run.child.pid;
    run.child.kill("SIGKILL");
    const dead = await run.done;
    expect(dead.signal).toBe("SIGKILL");

    // The store: intact, the step still IN_PROGRESS under the dead process's lease.
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
    const crashed = step(ws, A);
    expect(crashed.status).toBe("IN_PROGRESS");
    expect(crashed.lease_holder).toBe(`${ratchetPid}@${hostname()}`);
    expect(crashed.lease_expires_at).toEqual(expect.any(Number));

    // A sweep now may or may not find A expired yet; it never touches the bystander, and every step
    // it fails had a lease that expired before the sweep's own clock.
    const early = await ws.run(["plan", "sweep"]);
    expect(early.status).toBe(0);
    expect(early.marker).toMatchObject({ ok: true, op: "sweep" });
    const earlyResult = JSON.parse(early.stdout.slice(0, early.stdout.lastIndexOf("\n{"))) as {
      swept: { step_id: string; expired_at: string }[];
      now: string;
    };
    for (const s of earlyResult.swept) {
      expect(s.step_id).toBe(A);
      expect(Date.parse(s.expired_at)).toBeLessThan(Date.parse(earlyResult.now));
    }
    // A sweep of the bystander's plan alone: its lease is not expired, nothing happens.
    const quiet = await ws.run(["plan", "sweep", "-"], { input: JSON.stringify({ plan_id: b.plan_id }) });
    expect(quiet.marker).toMatchObject({ ok: true, op: "sweep", count: 0 });
    expect(step(ws, B).status).toBe("IN_PROGRESS");

    // Past the lease (1 s, renewed at most ~⅓ s before the kill): the sweep fails A and rolls up.
    const expiresAt = crashed.lease_expires_at as number;
    await waitFor(() => Date.now() > expiresAt + 500, "the lease to expire", 10_000);
    const sweep = await ws.run(["plan", "sweep"]);
    expect(sweep.status).toBe(0);
    expect(sweep.marker).toMatchObject({ ok: true, op: "sweep" });
    const after = step(ws, A);
    expect(after.status).toBe("FAILED");
    expect(after.failure_reason).toMatch(/^lease expired at .* \(held by \d+@.*\); failed by sweep$/);
    expect(after.failure_reason).toContain(`held by ${ratchetPid}@`);
    expect(after.lease_holder).toBeNull();
    expect(after.lease_expires_at).toBeNull();
    // Roll-up ran: review and plan FAILED (A is an unrecovered failure).
    expect(step(ws, `${p.plan_id}-REVIEW`).status).toBe("FAILED");
    expect(query(ws, "SELECT status FROM plans WHERE plan_id = ?", p.plan_id)).toEqual([
      { status: "FAILED" },
    ]);
    expect(
      query(ws, "SELECT type FROM events WHERE plan_id = ? ORDER BY id", p.plan_id)
        .map((e) => e.type)
        .slice(-3),
    ).toEqual(["step.in_progress", "step.failed", "plan.failed"]);
    const sweptEvent = query<{ payload: string }>(
      ws,
      "SELECT payload FROM events WHERE entity_id = ? AND type = 'step.failed'",
      A,
    );
    expect(JSON.parse(sweptEvent[0]?.payload ?? "{}")).toMatchObject({ by: "sweep" });
    expect(step(ws, B).status).toBe("IN_PROGRESS");
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");

    // Nothing was orphaned: the launcher's supervisor ended the command when Ratchet died.
    await waitFor(() => liveGroupMembers(pgid).length === 0, "the supervisor to end the command");
    groups.delete(pgid);
    // The daemon variant really went through it (the sweeps, the bystander's start, a publish).
    if (daemon) {
      expect(await stopDaemon(ws)).toBeGreaterThanOrEqual(5);
      expect(daemonLog(ws)).not.toMatch(/background WAL checkpoint/);
    }
  });
});

describe.each(["SIGINT", "SIGTERM"] as const)("%s to step run", (signal) => {
  test("kills the command's process group, fails the step as 'stopped by a signal (command cancelled)', exits 130", async () => {
    const ws = await makeWorkspace("ratchet-e2e-signal-");
    workspaces.push(ws);
    const p = await publish(ws, { goal: `Cancel ${signal}`, steps: [{ title: "long", type: "COMMAND" }] });
    const [A] = p.step_ids as [string];
    // A background grandchild too: the whole group must go, not just bash.
    const { run, pgid } = await startRun(ws, A, "sleep 30 & sleep 30; wait");
    await waitFor(() => liveGroupMembers(pgid).length >= 3, "bash and both sleeps");

    run.child.kill(signal);
    const r = await run.done;
    expect(r.status).toBe(130);
    expect(r.stderr).toContain(`${signal} received: cancelling run-step`);
    expect(r.marker).toMatchObject({
      ok: true,
      op: "run-step",
      step_id: A,
      exit_code: 130,
      cancelled: true,
      status: "FAILED",
      reason: "command stopped by a signal (command cancelled)",
    });
    await waitFor(() => liveGroupMembers(pgid).length === 0, "the command's process group to be gone");
    groups.delete(pgid);

    expect(step(ws, A)).toMatchObject({
      status: "FAILED",
      failure_reason: "command stopped by a signal (command cancelled)",
      exit_code: 130,
      lease_holder: null,
    });
    const [log] = query<{ text: string }>(
      ws,
      "SELECT text FROM step_logs WHERE step_id = ? AND kind = 'run'",
      A,
    );
    expect(log?.text).toMatch(/^\[run-step\] cancelled\n/);
    expect(log?.text).toMatch(/--- exit_code=130, runtime=\d+\.\d+s ---$/);
    expect(query(ws, "SELECT status FROM plans WHERE plan_id = ?", p.plan_id)).toEqual([
      { status: "FAILED" },
    ]);
    // The temporary output folder was cleaned up.
    expect(listTree(ws.ratchetDir).filter((f) => f.startsWith("ratchet-run-"))).toEqual([]);
    expect(withDb(ws, (db) => db.pragma("integrity_check", { simple: true }))).toBe("ok");
  });
});
