/** Test helpers about processes: whether a pid has stopped running, and waiting for it to. */
import { readFileSync } from "node:fs";

/** Gone, or a zombie nobody reaped yet (in a container PID 1 may not reap): either way not running. */
export function isGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/** Waits (generously) for a pid to stop running; an event-free poll is fine in a test. */
export async function waitGone(pid: number, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (isGone(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return isGone(pid);
}
