/**
 * Process groups and the registry of live ones. Every child is spawned as the leader of its own
 * group (`detached: true`), so one signal to `-pgid` reaches it and every descendant that did not
 * leave the group. The registry lets a shutting-down parent kill all of them.
 */

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
 * Kills what is left in a group after its leader exited: SIGTERM now, SIGKILL after `graceMs`
 * unless the group is gone by then. Tracked in the registry until done; the timer does not keep
 * the parent alive (the exit hook covers that case).
 */
export function reapLeftovers(pgid: number, graceMs: number, alreadyTerminated: boolean): void {
  if (!signalGroup(pgid, 0)) return;
  if (!alreadyTerminated) signalGroup(pgid, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const group: LiveGroup = {
    pgid,
    shutdown: () => {
      group.killNow();
      return Promise.resolve();
    },
    killNow: () => {
      if (timer) clearTimeout(timer);
      signalGroup(pgid, "SIGKILL");
      unregisterGroup(group);
    },
  };
  if (graceMs <= 0) {
    signalGroup(pgid, "SIGKILL");
    return;
  }
  registerGroup(group);
  timer = setTimeout(() => group.killNow(), graceMs);
  timer.unref();
}
