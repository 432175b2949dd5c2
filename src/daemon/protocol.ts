/**
 * The daemon's wire protocol and the facts both ends share. Pure: no I/O, so the client bundle
 * (dist/bundle/client.cjs) stays a few kilobytes and loads nothing but Node's built-ins.
 *
 * One connection serves one command:
 *   1. the daemon writes a {@link Hello} line as soon as it accepts the connection;
 *   2. the client writes one {@link Request} line (only after the hello: a connection that closes
 *      before the hello proves the daemon never saw the request);
 *   3. the daemon writes one {@link Reply} line after the op's transaction has committed (or a
 *      {@link Refusal}: the op was not run), then closes.
 */

/** Bumped whenever a frame changes shape; a client and a daemon of different versions never talk. */
export const PROTOCOL_VERSION = 1;

/** File names inside the workspace folder (`.ratchet/`). */
export const SOCKET_FILE = "daemon.sock";
export const LOCK_FILE = "daemon.lock";
export const LOG_FILE = "daemon.log";
/**
 * The daemon's key: random bytes it writes (mode 0600) before it listens and that every request
 * must carry. Connecting to a Unix socket is not confined by Landlock, but reading `.ratchet/` is:
 * a confined script that reaches the socket cannot read the key, so it cannot make the daemon run
 * anything (docs/daemon.md, docs/security.md).
 */
export const KEY_FILE = "daemon.key";

/** The environment switch that turns the daemon off (the CLI runs every command in-process). */
export const NO_DAEMON_ENV = "RATCHET_NO_DAEMON";
/** Idle time after which the daemon exits, in ms (default {@link DEFAULT_IDLE_MS}). */
export const IDLE_ENV = "RATCHET_DAEMON_IDLE_MS";
/** Ten minutes: long enough for an agent's burst of writes, short enough to leave no trace. */
export const DEFAULT_IDLE_MS = 10 * 60_000;

/** Limits (bytes of one frame; Unix socket paths longer than this fall back to in-process). */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
export const MAX_SOCKET_PATH = 100;

/**
 * `<group> <verb>` of the write flows the daemon serves: every write flow of the CLI's fast path
 * (FLOWS without `ownCommand`) but `step run`, which supervises a child process group, holds its
 * lease as the calling process, and cancels on the caller's signals. Pinned against FLOWS by
 * protocol.test.ts.
 */
export const SERVED_COMMANDS: readonly string[] = [
  "plan publish",
  "step start",
  "step complete",
  "step fail",
  "step log",
  "step deviate",
  "plan record-skill",
  "metric record",
  "plan raise-budget",
  "plan abandon",
  "plan finish",
  "plan review-close",
  "step heartbeat",
  "plan sweep",
  "reason fill",
  "headline respond",
  "note add",
  "reference add",
  "reference mark",
];
const SERVED = new Set(SERVED_COMMANDS);

/**
 * Whether a command line (argv after `node ratchet.js`) is one the daemon serves: a write flow
 * with no `--db` and no help flag (those, and everything else, run in-process). The daemon checks
 * again with the CLI's own parser and refuses what it would not run the same way.
 */
export function isServedCommand(args: readonly string[]): boolean {
  if (args.length < 2 || !SERVED.has(`${args[0]} ${args[1]}`)) return false;
  for (let i = 2; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "-h" || a === "--help" || a === "--db" || a.startsWith("--db=")) return false;
  }
  // The hand-written form of `headline respond` (why-commands.ts) is not a write-flow line.
  return !(args[0] === "headline" && args.length !== 3);
}

/** First frame, from the daemon. */
export interface Hello {
  ratchet_daemon: number;
  build: string;
  pid: number;
}

/** The command to run, from the client. */
export interface Request {
  /** The client's build id: a daemon of another build refuses and exits. */
  build: string;
  /** The contents of {@link KEY_FILE}: a request without the daemon's key is refused, nothing run. */
  key: string;
  args: string[];
  cwd: string;
  /** The client's environment (secrets in it are redacted from what the op stores, as in-process). */
  env: Record<string, string>;
  pid: number;
  /** Standard input, base64, when the command reads it (`-`). */
  stdin?: string;
  stdinIsTTY: boolean;
}

/** The daemon ran the command: what it printed and its exit status (after COMMIT). */
export interface Reply {
  status: number;
  stdout: string;
  stderr: string;
}

/** Why the daemon did not run a command (the client then runs it in-process). */
export const RefusalReason = {
  /** The client's build (or the build on disk) is not the daemon's: it exits, a new one starts. */
  Build: "build",
  /** Not a command the daemon serves the way the CLI would. */
  NotServed: "not_served",
  /** The workspace's store is not the SQLite file the daemon holds (e.g. now PostgreSQL). */
  Store: "store",
  /** The request was malformed or too large. */
  BadRequest: "bad_request",
  /** The daemon is shutting down. */
  Closing: "closing",
  /** The request did not carry the daemon's key (a process that cannot read `.ratchet/`). */
  Key: "key",
} as const;
export type RefusalReason = (typeof RefusalReason)[keyof typeof RefusalReason];

export interface Refusal {
  refused: RefusalReason;
  message?: string;
}

/** Whether the command reads standard input (an input argument of `-`, or a flag value `-`). */
export function readsStdin(args: readonly string[]): boolean {
  for (let i = 2; i < args.length; i++) if (args[i] === "-") return true;
  return false;
}
