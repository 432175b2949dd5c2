import { afterEach, describe, expect, it } from "vitest";
import { overEachTransport } from "../../test/helpers/transports.js";
import { isGone, waitGone } from "../testing/processes.js";
import { buildEnv } from "./env.js";
import { killAllRunning, runningCount } from "./process-group.js";
import { runProcess } from "./process-runner.js";
import type { RunRequest } from "./types.js";

const env = buildEnv({ inherit: "minimal" });
const bash = (script: string, extra: Partial<RunRequest> = {}) =>
  runProcess({ command: "bash", args: ["-c", script], env, ...extra });

const strays: number[] = [];
afterEach(() => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** The first stdout line of a script that starts with `echo $!` is the grandchild's pid. */
function grandchildOf(stdout: string): number {
  const pid = Number(stdout.split("\n")[0]);
  expect(pid).toBeGreaterThan(1);
  strays.push(pid);
  return pid;
}

overEachTransport(() => {
  describe("timeout", () => {
    it("kills the whole process group, grandchildren included", async () => {
      // The grandchild does not hold the pipes and SIGKILL is 30 s away, so only the group SIGTERM can
      // reach it in time. The 1 s limit leaves bash time to print the pid even on a loaded machine.
      const r = await bash("sleep 30 >/dev/null 2>&1 & echo $!; sleep 30", {
        timeoutMs: 1000,
        killGraceMs: 30_000,
        killGroupOnExit: false,
      });
      expect(r).toMatchObject({ timedOut: true, cancelled: false, exitCode: null, signal: "SIGTERM" });
      expect(r.durationMs).toBeLessThan(20_000);
      expect(await waitGone(grandchildOf(r.stdout))).toBe(true);
      expect(isGone(r.pid!)).toBe(true);
    });

    it("escalates to SIGKILL when the group ignores SIGTERM", async () => {
      const r = await bash('trap "" TERM; sleep 30 & echo $!; wait', { timeoutMs: 1000, killGraceMs: 200 });
      expect(r).toMatchObject({ timedOut: true, exitCode: null, signal: "SIGKILL" });
      expect(await waitGone(grandchildOf(r.stdout))).toBe(true);
    });

    it("keeps the output produced before the kill", async () => {
      const r = await bash("echo before; sleep 30", { timeoutMs: 200 });
      expect(r.stdout).toBe("before\n");
      expect(r.timedOut).toBe(true);
    });
  });

  describe("cancellation", () => {
    it("kills the group when the AbortSignal fires", async () => {
      const ac = new AbortController();
      const r = await bash("sleep 30 & echo $!; sleep 30", {
        signal: ac.signal,
        onOutput: () => ac.abort(),
      });
      expect(r).toMatchObject({ cancelled: true, timedOut: false, exitCode: null });
      expect(await waitGone(grandchildOf(r.stdout))).toBe(true);
    });

    it("does not start anything when the signal is already aborted", async () => {
      const ac = new AbortController();
      ac.abort();
      const r = await runProcess({ command: "true", env, signal: ac.signal });
      expect(r).toMatchObject({ cancelled: true, exitCode: null, signal: null });
      expect(r.pid).toBeUndefined();
    });

    it("killAllRunning() cancels every run in flight", async () => {
      const runs = [bash("sleep 30"), bash("sleep 30 & sleep 30")];
      expect(runningCount()).toBeGreaterThanOrEqual(2);
      const killed = await killAllRunning({ graceMs: 0 });
      expect(killed).toBeGreaterThanOrEqual(2);
      for (const r of await Promise.all(runs)) {
        expect(r).toMatchObject({ cancelled: true, exitCode: null });
        expect(isGone(r.pid!)).toBe(true);
      }
      expect(runningCount()).toBe(0);
    });
  });

  describe("after the direct child exits", () => {
    it("stops waiting for a grandchild that holds stdout open, and kills it", async () => {
      const r = await bash("sleep 30 & echo $!", { timeoutMs: 60_000 });
      expect(r).toMatchObject({ exitCode: 0, timedOut: false, cancelled: false });
      expect(r.durationMs).toBeLessThan(20_000);
      expect(await waitGone(grandchildOf(r.stdout))).toBe(true);
    });

    it("kills leftovers of the group that closed their pipes (default)", async () => {
      const r = await bash("sleep 30 >/dev/null 2>&1 & echo $!");
      expect(r.exitCode).toBe(0);
      expect(await waitGone(grandchildOf(r.stdout))).toBe(true);
    });

    it("resolves only once the leftovers are gone, one that ignores SIGTERM included", async () => {
      const r = await bash('(trap "" TERM; exec sleep 30) >/dev/null 2>&1 & echo $!');
      expect(r.exitCode).toBe(0);
      // Checked the moment the run resolves: no waiting here.
      expect(isGone(grandchildOf(r.stdout))).toBe(true);
    });

    it("leaves them alone with killGroupOnExit: false", async () => {
      const r = await bash("sleep 30 >/dev/null 2>&1 & echo $!", { killGroupOnExit: false });
      const pid = grandchildOf(r.stdout);
      expect(isGone(pid)).toBe(false);
    });
  });
});
