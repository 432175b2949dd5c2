/**
 * Entry of the daemon process (bundled into dist/bundle/daemon.cjs; started by the client with
 * `node daemon.cjs <workspace folder>`, detached, stdout/stderr appended to `.ratchet/daemon.log`).
 */
import { resolve } from "node:path";
import { DEFAULT_IDLE_MS, IDLE_ENV } from "./protocol.js";
import { runDaemon } from "./server.js";

/** Parses `RATCHET_DAEMON_IDLE_MS` (a positive integer of ms); the default otherwise. */
export function idleMsOf(value: string | undefined): number {
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_IDLE_MS;
}

/** Runs the daemon for `argv[2]`; resolves with the exit status. */
export async function daemonMain(argv: readonly string[], buildFile: string): Promise<number> {
  const wsDir = argv[2];
  if (!wsDir) {
    process.stderr.write("usage: daemon.cjs <workspace folder>\n");
    return 2;
  }
  return runDaemon({ wsDir: resolve(wsDir), buildFile, idleMs: idleMsOf(process.env[IDLE_ENV]) });
}
