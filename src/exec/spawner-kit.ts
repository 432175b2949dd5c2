/**
 * Test support: the process runner's suites run over both transports — the resident spawner and
 * Node's own `child_process.spawn` (the fallback). `RATCHET_NO_SPAWNER` is read at every run, so
 * a suite switches by setting it around its tests.
 */

import { findSpawner, spawnerPid, startSpawner } from "./spawner.js";

/** The two ways a run can be started. */
export const TRANSPORTS = ["spawner", "child_process"] as const;
export type Transport = (typeof TRANSPORTS)[number];

/**
 * Makes every following run use `t` (with the spawner started and ready: otherwise the first run
 * would use the fallback while it starts); resolves to the function that puts the setting back.
 */
export async function useTransport(t: Transport): Promise<() => void> {
  const restore = setTransport(t);
  if (t === "spawner") await startSpawner();
  return restore;
}

/** Sets the transport without waiting for the spawner. */
export function setTransport(t: Transport): () => void {
  const before = process.env.RATCHET_NO_SPAWNER;
  if (t === "spawner") delete process.env.RATCHET_NO_SPAWNER;
  else process.env.RATCHET_NO_SPAWNER = "1";
  return () => {
    if (before === undefined) delete process.env.RATCHET_NO_SPAWNER;
    else process.env.RATCHET_NO_SPAWNER = before;
  };
}

/**
 * Why the spawner transport cannot be tested here (a suite then fails rather than silently testing
 * the fallback twice), or undefined.
 */
export function spawnerMissing(): string | undefined {
  return findSpawner() ? undefined : "dist/native/ratchet-spawner is not built (npm run build)";
}

/** The parent a child of transport `t` should report (`$PPID`): the spawner's pid, or ours. */
export function expectedParent(t: Transport): number | undefined {
  return t === "spawner" ? spawnerPid() : process.pid;
}

/** Waits until the spawner takes runs again (after a test killed it, say). */
export async function spawnerReady(): Promise<void> {
  await startSpawner();
}
