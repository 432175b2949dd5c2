/**
 * Private temporary folders of untrusted processes (`ratchet-step-<pid>-XXXXXX`, a script's
 * TMPDIR). The launcher removes them (`--cleanup`) once everything the script started is gone, also
 * when Ratchet was killed; where it cannot (ratchet-confine v1, no launcher), the next run sweeps
 * the folders whose owner pid is dead.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

/** Prefix of a step's private TMPDIR. */
export const STEP_DIR_PREFIX = "ratchet-step-";

/** `ratchet-step-<our pid>-`: the `mkdtemp` prefix of a step's private TMPDIR. */
export function stepDirPrefix(pid: number = process.pid): string {
  return `${STEP_DIR_PREFIX}${pid}-`;
}

/** Whether process `pid` exists (EPERM: it exists, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the folders `<prefix><pid>-…` in `dir` whose owner pid is neither us nor alive.
 * Returns the names removed. Never throws (an unreadable `dir` removes nothing).
 */
export function sweepStaleDirs(dir: string, prefix: string = STEP_DIR_PREFIX): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)-/.exec(name.slice(prefix.length));
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || isAlive(pid)) continue;
    try {
      rmSync(join(dir, name), { recursive: true, force: true });
      removed.push(name);
    } catch {
      // another sweeper got there first, or it is not ours to remove
    }
  }
  return removed;
}
