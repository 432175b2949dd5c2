/**
 * Helpers for tests of the workspace daemon (docs/daemon.md): its pid, its log, stopping it, and
 * the daemon processes alive for a workspace (read from /proc, so nothing is guessed).
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type CliResult, childEnv, parseMarker, ROOT, waitFor } from "./cli.js";

export const daemonLog = (ws: { ratchetDir: string }): string => {
  const path = join(ws.ratchetDir, "daemon.log");
  return existsSync(path) ? readFileSync(path, "utf8") : "";
};

/** Pids of live daemon processes serving `ws` (their command line names its folder). */
export function daemonPids(ws: { ratchetDir: string }): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let cmd: string[];
    let state: string;
    try {
      cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    } catch {
      continue;
    }
    if (state === "Z" || state === "X") continue;
    if (cmd.some((a) => a.endsWith("daemon.cjs")) && cmd.includes(ws.ratchetDir)) out.push(Number(name));
  }
  return out;
}

/** Waits for the daemon of `ws` to listen and returns its pid. */
export async function waitForDaemon(ws: { ratchetDir: string }): Promise<number> {
  let pid: number | undefined;
  await waitFor(() => {
    const pids = daemonPids(ws);
    pid = pids.length === 1 && existsSync(join(ws.ratchetDir, "daemon.sock")) ? pids[0] : undefined;
    return pid !== undefined && daemonLog(ws).includes(`pid ${pid} serving`);
  }, "the daemon to serve");
  return pid as number;
}

/** Commands served by every daemon of `ws` that has stopped (from the log's stop lines). */
export function servedSoFar(ws: { ratchetDir: string }): number {
  let n = 0;
  for (const m of daemonLog(ws).matchAll(/\(served (\d+) commands\)/g)) n += Number(m[1]);
  return n;
}

/** Stops every daemon of `ws` (SIGTERM), waits for them to go, returns the commands they served. */
export async function stopDaemon(ws: { ratchetDir: string }): Promise<number> {
  for (const pid of daemonPids(ws)) process.kill(pid, "SIGTERM");
  await waitFor(() => daemonPids(ws).length === 0, "the daemon to stop");
  return servedSoFar(ws);
}

/** The two entry points of the CLI: `node bin/ratchet.js` and `bin/ratchet` (the native client first). */
export const CLIENTS = {
  node: [process.execPath, join(ROOT, "bin", "ratchet.js")],
  native: [join(ROOT, "bin", "ratchet")],
} as const;
export type ClientName = keyof typeof CLIENTS;

/** Runs `ratchet …args` through the entry point `client` (same environment rules as cli.ts). */
export function runVia(
  client: ClientName,
  args: readonly string[],
  opts: { cwd: string; input?: string; env?: Record<string, string | undefined> },
): Promise<CliResult> {
  const [cmd, ...pre] = CLIENTS[client];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...pre, ...args], { cwd: opts.cwd, env: childEnv(opts.env) });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input);
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({
        status,
        signal,
        stdout,
        stderr,
        lines: stdout.split("\n").filter((l) => l.trim() !== ""),
        marker: parseMarker(stdout),
      });
    });
  });
}
