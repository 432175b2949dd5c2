/** One pre-started-interpreter kit per test file (src/exec/forkserver-kit.ts), and process checks. */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll } from "vitest";
import { type ForkKit, forkKit } from "../../src/exec/forkserver-kit.js";

/**
 * Starts the kit before the file's tests and closes it after; the returned function gives it, or
 * fails the test with why this machine cannot run `suite` (no Landlock ABI 6, no v2 launcher…).
 */
export function useForkKit(suite: string): () => ForkKit {
  let kit: ForkKit | string;
  beforeAll(async () => {
    kit = await forkKit();
  });
  afterAll(async () => {
    if (typeof kit !== "string") await kit.close();
  });
  return () => {
    if (typeof kit === "string") throw new Error(`cannot run the ${suite} here: ${kit}`);
    return kit;
  };
}

/** Not running: no such process, or a zombie its reaper has not collected yet. */
export function gone(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}
