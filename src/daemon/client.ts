/**
 * The client fast path of `ratchet <write flow>`: finds the workspace's daemon socket, hands it the
 * command, prints the answer and returns its exit status — without loading the CLI, the ledger or
 * better-sqlite3 (this file is bundled alone into dist/bundle/client.cjs with Node built-ins only).
 *
 * It returns `undefined` (run the command in-process) whenever the daemon provably did not run the
 * command: not a served command, `RATCHET_NO_DAEMON=1`, `--db`/`RATCHET_DB`, a PostgreSQL
 * workspace, no socket, a refused connection, a socket or folder that is not the caller's own, a
 * daemon of another build, a daemon that closed before its hello, or an explicit refusal. When no
 * daemon answers, it starts one (detached) for the next command. Once the request has been sent,
 * a lost connection is not retried: the op may have committed, so it reports the loss (exit 1).
 */
import { spawn } from "node:child_process";
import { closeSync, lstatSync, openSync, readFileSync, statSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join, resolve } from "node:path";
import { buildIdOf, myUid, trustedFolder } from "./files.js";
import {
  type Hello,
  IDLE_ENV,
  isServedCommand,
  KEY_FILE,
  LOG_FILE,
  MAX_SOCKET_PATH,
  NO_DAEMON_ENV,
  PROTOCOL_VERSION,
  type Refusal,
  type Reply,
  type Request,
  readsStdin,
  SOCKET_FILE,
} from "./protocol.js";

/** What the in-process fallback needs: the stdin bytes already read, if any. */
export interface Fallback {
  stdin?: Buffer;
}

/** The outcome: an exit status (served) or a fallback (run in-process). */
export type ClientOutcome = { status: number } | { fallback: Fallback };

/**
 * Serves `argv` (as `process.argv`) through the workspace's daemon when it can.
 * @param bundleDir the folder of dist/bundle (daemon.cjs, the build id's file).
 */
export async function clientMain(argv: readonly string[], bundleDir: string): Promise<ClientOutcome> {
  const none: ClientOutcome = { fallback: {} };
  const env = process.env;
  const args = argv.slice(2);
  if (env[NO_DAEMON_ENV] === "1" || env.RATCHET_DB || env.ORCH_DB || !isServedCommand(args)) return none;
  const uid = myUid();
  if (uid === undefined) return none;
  const wsDir = findWorkspaceDir(process.cwd());
  if (!wsDir || hasStoreUrl(wsDir) || !trustedFolder(wsDir, uid)) return none;
  const socketPath = join(wsDir, SOCKET_FILE);
  const daemonFile = join(bundleDir, "daemon.cjs");
  const build = buildIdOf(daemonFile);
  if (socketPath.length > MAX_SOCKET_PATH || build === undefined) return none;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(socketPath);
  } catch {
    startDaemon(wsDir, daemonFile);
    return none;
  }
  // Someone else's file, or not a socket: never talk to it, never remove it.
  if (!st.isSocket() || st.uid !== uid) return none;
  return exchange(socketPath, build, args, () => startDaemon(wsDir, daemonFile));
}

/** The workspace folder (`.ratchet/`) found walking up from `start`, as the CLI finds it. */
function findWorkspaceDir(start: string): string | undefined {
  let cur = resolve(start);
  for (;;) {
    const candidate = join(cur, ".ratchet");
    try {
      if (statSync(candidate).isDirectory()) return candidate;
    } catch {
      // not here
    }
    const up = dirname(cur);
    if (up === cur) return undefined;
    cur = up;
  }
}

/** Whether `.ratchet/config.json` names a store (PostgreSQL: the daemon serves SQLite only). */
function hasStoreUrl(wsDir: string): boolean {
  let text: string;
  try {
    text = readFileSync(join(wsDir, "config.json"), "utf8");
  } catch {
    return false;
  }
  // Anything unexpected (unparsable, a store key) goes in-process, which reports it properly.
  try {
    const json = JSON.parse(text) as { store?: unknown } | null;
    return !json || typeof json !== "object" || json.store !== undefined;
  } catch {
    return true;
  }
}

/** Starts a daemon for the workspace, detached in its own process group, logging to daemon.log. */
function startDaemon(wsDir: string, daemonFile: string): void {
  try {
    const log = openSync(join(wsDir, LOG_FILE), "a", 0o600);
    try {
      const child = spawn(process.execPath, [daemonFile, wsDir], {
        detached: true,
        stdio: ["ignore", log, log],
        cwd: wsDir,
        env: daemonEnv(),
      });
      child.on("error", () => {});
      child.unref();
    } finally {
      closeSync(log);
    }
  } catch {
    // No daemon this time: the command runs in-process all the same.
  }
}

/** The daemon's own environment: only what Node and its settings need (requests bring theirs). */
function daemonEnv(): NodeJS.ProcessEnv {
  const keep = ["PATH", "HOME", "TMPDIR", "LANG", "TZ", "NODE_OPTIONS", "NODE_COMPILE_CACHE", IDLE_ENV];
  const env: NodeJS.ProcessEnv = {};
  for (const k of keep) if (process.env[k] !== undefined) env[k] = process.env[k];
  return env;
}

/** One connection: hello → request → reply. */
function exchange(
  socketPath: string,
  build: string,
  args: string[],
  restart: () => void,
): Promise<ClientOutcome> {
  return new Promise((settle) => {
    let phase: "hello" | "sent" | "done" = "hello";
    let stdin: Buffer | undefined;
    let buf = "";
    const socket = createConnection(socketPath);
    const finish = (outcome: ClientOutcome) => {
      if (phase === "done") return;
      phase = "done";
      socket.destroy();
      settle(outcome);
    };
    const fallback = () => finish({ fallback: stdin ? { stdin } : {} });
    socket.setEncoding("utf8");
    socket.on("error", (e: NodeJS.ErrnoException) => {
      if (phase === "hello") {
        // A stale socket (a daemon that died) or one being replaced: start a daemon for next time.
        if (e.code === "ECONNREFUSED" || e.code === "ENOENT") restart();
        fallback();
      } else lost();
    });
    socket.on("close", () => {
      if (phase === "hello") {
        // Closed before its hello: the daemon is going away (a new build, idle) and saw nothing.
        restart();
        fallback();
      } else if (phase === "sent") lost();
    });
    const lost = () => {
      process.stderr.write(
        `❌ ratchet: ${args[0]} ${args[1]}: the daemon ended before answering; the op may or may not have been applied (check with \`ratchet plan show\` or \`ratchet events\` before retrying)\n`,
      );
      process.stdout.write(
        `${JSON.stringify({ ok: false, op: `${args[0]} ${args[1]}`, code: "daemon_lost", exit_status: 1, ambiguous: true })}\n`,
      );
      finish({ status: 1 });
    };
    socket.on("data", (chunk: string) => {
      buf += chunk;
      for (let nl = buf.indexOf("\n"); nl >= 0 && phase !== "done"; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (phase === "hello") {
          const hello = parse(line) as Partial<Hello> | undefined;
          if (hello?.ratchet_daemon !== PROTOCOL_VERSION || hello.build !== build) return fallback();
          try {
            if (readsStdin(args)) stdin = readFileSync(0);
          } catch {
            // In-process reads it again and reports the error in its own words.
            return fallback();
          }
          // The daemon's key (written before it listened); unreadable → in-process.
          let key: string;
          try {
            key = readFileSync(join(dirname(socketPath), KEY_FILE), "utf8").trim();
          } catch {
            return fallback();
          }
          const req: Request = {
            build,
            key,
            args,
            cwd: process.cwd(),
            env: process.env as Record<string, string>,
            pid: process.pid,
            stdinIsTTY: process.stdin.isTTY === true,
            ...(stdin ? { stdin: stdin.toString("base64") } : {}),
          };
          phase = "sent";
          socket.write(`${JSON.stringify(req)}\n`);
        } else if (phase === "sent") {
          const answer = parse(line) as (Partial<Reply> & Partial<Refusal>) | undefined;
          if (answer?.refused !== undefined) return fallback();
          if (typeof answer?.status !== "number") return lost();
          phase = "done";
          socket.destroy();
          settle({ status: print(answer as Reply) });
        }
      }
    });
  });
}

function parse(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/**
 * Prints a reply as the in-process command would have, and returns its status: a reader that went
 * away keeps it, any other failed stdout write turns 0 into 1 (docs/exit-codes.md).
 */
function print(reply: Reply): number {
  let status = reply.status;
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE" || e.code === "ECONNRESET") return;
    process.stderr.write(
      `ratchet: cannot write to standard output (${e.message}); the command itself finished with status ${reply.status}\n`,
    );
    if (status === 0) status = 1;
    process.exitCode = status;
  });
  process.stderr.on("error", () => {});
  if (reply.stderr) process.stderr.write(reply.stderr);
  if (reply.stdout) process.stdout.write(reply.stdout);
  return status;
}
