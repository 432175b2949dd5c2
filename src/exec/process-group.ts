/**
 * Process groups and the registry of live ones. Every child is spawned as the leader of its own
 * group (`detached: true`), so one signal to `-pgid` reaches it and every descendant that did not
 * leave the group. The registry lets a shutting-down parent kill all of them.
 */

import { readdirSync, readFileSync } from "node:fs";
import { DRAIN_POLL_MS, POST_KILL_WAIT_MS } from "./limits.js";

/** A process group the registry can stop: a running process, or the leftovers of a finished one. */
export interface LiveGroup {
  /** The process group id (the pid of the direct child). */
  readonly pgid: number;
  /**
   * Kills the group (SIGTERM, then SIGKILL after `graceMs`; `undefined` means the run's own
   * `killGraceMs`) and resolves once the run has settled.
   */
  shutdown(graceMs: number | undefined): Promise<void>;
  /** Synchronous last resort: SIGKILL to the whole group, now. */
  killNow(): void;
}

const live = new Set<LiveGroup>();
let exitHookInstalled = false;

/**
 * Sends `sig` to every process in group `pgid` (`0` only checks that the group exists).
 * Returns false when the group does not exist (ESRCH) or may not be signalled (EPERM).
 */
export function signalGroup(pgid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Adds a group to the registry. The first call installs a `process.on("exit")` hook that SIGKILLs all of them. */
export function registerGroup(group: LiveGroup): void {
  live.add(group);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // `exit` listeners must be synchronous: no grace here, only SIGKILL, so nothing outlives us.
    process.on("exit", () => {
      for (const g of live) g.killNow();
    });
  }
}

/** Removes a group from the registry (its run settled and nothing is left to kill). */
export function unregisterGroup(group: LiveGroup): void {
  live.delete(group);
}

/** Number of process groups still registered (running, or leftovers awaiting SIGKILL). */
export function runningCount(): number {
  return live.size;
}

/** Options of {@link killAllRunning}. */
export interface KillAllOptions {
  /**
   * Milliseconds between SIGTERM and SIGKILL. `0` sends SIGKILL right after SIGTERM.
   * Default: each run's own `killGraceMs`.
   */
  graceMs?: number;
}

/**
 * Kills the process group of every run still in flight (and any leftovers of finished runs).
 * Meant for the CLI's SIGINT/SIGTERM handlers: the SIGTERMs (and, with `graceMs: 0`, the SIGKILLs)
 * are sent synchronously before this returns; the promise resolves with the number of groups once
 * every affected run has settled. Affected runs resolve with `cancelled: true`.
 *
 * A `process.on("exit")` hook also SIGKILLs every registered group, so `process.exit()` never
 * leaves children behind; a parent killed by an unhandled signal cannot run it, hence this helper.
 */
export function killAllRunning(opts: KillAllOptions = {}): Promise<number> {
  const groups = [...live];
  return Promise.all(groups.map((g) => g.shutdown(opts.graceMs))).then(() => groups.length);
}

/**
 * Whether group `pgid` still has a RUNNING member. A zombie nobody reaps (in a container PID 1 may
 * not reap orphans) runs nothing and writes nothing, so it does not count. Where `/proc` cannot be
 * read, any member counts.
 */
export function groupHasLive(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((n) => /^\d+$/.test(n));
  } catch {
    return true;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    // After "(comm)": state ppid pgrp …
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") return true;
  }
  return false;
}

/**
 * Kills what is left in a group after its leader exited and resolves only once no member is
 * running: SIGTERM now (unless `alreadyTerminated`), SIGKILL after `graceMs` (at once when
 * `killNow`), then at most {@link POST_KILL_WAIT_MS} more for the kernel to finish them (a process
 * stuck in uninterruptible I/O). So a run resolves — and a step is validated — only when nothing it
 * started can still write. Tracked in the registry while it drains (the exit hook SIGKILLs it).
 * A bounded poll every {@link DRAIN_POLL_MS}: a parent cannot wait for processes that are not its
 * children.
 */
export function drainGroup(
  pgid: number,
  graceMs: number,
  opts: { alreadyTerminated?: boolean; killNow?: boolean } = {},
): Promise<void> {
  if (!groupHasLive(pgid)) return Promise.resolve();
  return new Promise((resolve) => {
    const started = performance.now();
    let killedAt: number | undefined;
    const kill = (): void => {
      if (killedAt !== undefined) return;
      killedAt = performance.now();
      signalGroup(pgid, "SIGKILL");
    };
    let finished = false;
    const done = (): void => {
      if (finished) return;
      finished = true;
      unregisterGroup(group);
      resolve();
    };
    const group: LiveGroup = {
      pgid,
      shutdown: () => {
        kill();
        return new Promise((r) => setTimeout(r, 0));
      },
      killNow: () => signalGroup(pgid, "SIGKILL"),
    };
    registerGroup(group);
    if (opts.killNow || graceMs <= 0) kill();
    else if (!opts.alreadyTerminated) signalGroup(pgid, "SIGTERM");
    const tick = (): void => {
      const t = performance.now();
      if (killedAt === undefined && t - started >= graceMs) kill();
      if (!groupHasLive(pgid) || (killedAt !== undefined && t - killedAt >= POST_KILL_WAIT_MS)) done();
      else setTimeout(tick, DRAIN_POLL_MS);
    };
    setTimeout(tick, DRAIN_POLL_MS);
  });
}
