/**
 * A pre-started Python interpreter that forks a fresh child per run (native/forkserver.py).
 *
 * Security: the server is started THROUGH THE DOOR ({@link forkserverConfinement}: the caller's
 * {@link Confinement} with `procSelf: false` and no launcher time limit), so the server and every
 * child it forks live in exactly the Landlock domain, mount namespace, seccomp filter and
 * capability set a plain start of the same confinement gets, under the same `ratchet-confine`
 * supervisor. Per run the server forks a keeper that enters a nested Landlock domain scoping
 * signals and abstract sockets (its `kill(-1)` reaches exactly the run's processes, never the
 * server); the keeper forks the script's child, which enters its own domain nested in the keeper's
 * before any script byte runs — with {@link ForkRun.confine} the run's own roots plus a seccomp
 * filter refusing metadata calls, so one server started with a common base can serve the steps of
 * one workflow ({@link pooledServer}). Signals go only inward: the script cannot signal, ptrace or
 * read `/proc` of its keeper, the server or another server's runs (as a plain start's script cannot
 * reach its launcher's supervisor), only its own descendants. The time limit is the server's per
 * run (SIGTERM to everything, SIGKILL `killGraceMs` later, exit 124 with the launcher's own line),
 * and nothing a run started outlives it.
 *
 * The control channel is a Unix socket in a private 0700 folder: Ratchet listens, accepts exactly
 * ONE connection (the server's), then closes the listener and removes the folder, so no script can
 * connect later. The script's stdin is `/dev/null` (as a plain start's); its stdout and stderr are
 * fresh pipes per run, relayed by the server as frames, so a run's output ends exactly when its
 * last process is gone.
 *
 * A forked child is a copy of the server's memory, freed parts included: runs that share a server
 * must be runs of the same trust (the same step and confinement), never different tenants.
 *
 * What differs from a plain start (docs/security.md, "Learned steps started by the pre-started
 * interpreter"): the str hash seed is the server's for every run it serves (`PYTHONHASHSEED`
 * cannot be changed after start), `/proc/self` is unreadable (no `--proc-self`: the child would
 * otherwise read the server's), the process group and session are the server's (not led by the
 * script's parent), and the process was started before the run. {@link fitsForkserver} sends
 * scripts that name the first two to a plain start.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findAbove } from "../core/index.js";
import { HeadTailCapture } from "./capture.js";
import type { Confinement, Door } from "./door.js";
import { MAX_EXEC_TIMEOUT_MS } from "./limits.js";
import { realProcessRunner } from "./process-runner.js";
import type { ProcessRunner, RunResult } from "./types.js";

export const FORKSERVER_FILE = "forkserver.py";
/** How long a server may take to connect before the caller falls back to a plain start. */
export const FORKSERVER_START_TIMEOUT_MS = 10_000;
/** A server with no run for this long ends itself (a long-lived `ratchet serve` keeps none idle). */
export const FORKSERVER_IDLE_MS = 60_000;

let serverFile: string | null | undefined;

/** The server's Python file (native/forkserver.py, shipped with the package), or undefined. */
export function forkserverFile(): string | undefined {
  serverFile ??= findAbove(import.meta.url, [join("native", FORKSERVER_FILE)], existsSync) ?? null;
  return serverFile ?? undefined;
}

/** The confinement the server is started with: the run's, minus `/proc/self`, minus the launcher's timer. */
export function forkserverConfinement(c: Confinement): Confinement {
  return { ...c, procSelf: false, timeoutMs: 0 };
}

/** A stable key of a confinement: one server per key. */
export function confinementKey(c: Confinement, interpreter: string): string {
  const sorted = Object.fromEntries(Object.entries(c.env).sort(([a], [b]) => (a < b ? -1 : 1)));
  return JSON.stringify([
    interpreter,
    c.readRoots,
    c.writeRoots,
    c.writeFiles,
    sorted,
    c.supervise,
    c.cleanup,
  ]);
}

/**
 * Why a script must take a plain start instead, or undefined when it fits: it reads `/proc`
 * (its own `/proc/self` is not readable in a forked child) or depends on the str hash seed.
 */
export function fitsForkserver(source: string): string | undefined {
  if (source.includes("/proc"))
    return "the script names /proc (a forked child cannot read its own /proc/self)";
  if (/PYTHONHASHSEED|sys\.flags\.hash_randomization/.test(source))
    return "the script looks at the hash seed (shared by the runs of one server)";
  // A run's child refuses metadata calls everywhere (its server's write root is the whole runs
  // folder, which Landlock's rules cannot narrow for chmod/chown/utime/xattr): scripts that may
  // make them (copies that keep modes or times, archives) take a plain start.
  if (
    /\b(chmod|fchmod|lchmod|chown|fchown|lchown|utime|utimes|setxattr|removexattr|touch|shutil|tarfile)\b/.test(
      source,
    )
  )
    return "the script may change file metadata (chmod/chown/utime/xattr are refused in a forked child)";
  return undefined;
}

/** One run in a server: what `python3 -B <argv…>` in `cwd` would be started with. */
export interface ForkRun {
  /** `[script, ...args]`, the script relative to `cwd` (as on a plain command line). */
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  killGraceMs: number;
  maxCaptureBytes: number;
  signal?: AbortSignal;
  onOutput?: (chunk: Buffer, stream: "stdout" | "stderr") => void;
  /**
   * The run's own Landlock roots, applied in the script's child after the fork and before any
   * script byte runs (a nested domain inside the server's: it can only narrow). Absent: the run gets the
   * server's confinement as it is (a server started with exactly the run's confinement).
   */
  confine?: RunRoots;
}

/** The roots of one run's own confinement (a {@link Confinement}'s read, write and file roots). */
export interface RunRoots {
  reads: readonly string[];
  writes: readonly string[];
  files: readonly string[];
}

/** First line a run writes when its keeper or child could not confine it (exit 125, nothing ran). */
export const KEEPER_SETUP_FAILURE = "ratchet-forkserver: cannot confine the run: ";

type Frame = { kind: string; payload: Buffer };

/** Splits the socket's byte stream into frames (1 byte kind, 4 bytes length, payload). */
class FrameReader {
  #buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): Frame[] {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const out: Frame[] = [];
    while (this.#buf.length >= 5) {
      const len = this.#buf.readUInt32BE(1);
      if (this.#buf.length < 5 + len) break;
      out.push({ kind: String.fromCharCode(this.#buf[0] ?? 0), payload: this.#buf.subarray(5, 5 + len) });
      this.#buf = this.#buf.subarray(5 + len);
    }
    return out;
  }
}

function frame(kind: string, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(kind, 0, "latin1");
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** The result of a run asked of a server that has ended: a harness failure, never the script's. */
function ended(started: number): RunResult {
  return {
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    combined: "",
    stdoutBytes: 0,
    stderrBytes: 0,
    combinedBytes: 0,
    truncated: false,
    omittedBytes: { stdout: 0, stderr: 0, combined: 0 },
    durationMs: performance.now() - started,
    timedOut: false,
    cancelled: false,
    spawnError: { code: "ESRCH", message: "the forkserver has ended" },
  };
}

/** A started server: runs scripts of its one confinement, one at a time. */
export class Forkserver {
  readonly key: string;
  readonly #sock: Socket;
  readonly #process: Promise<RunResult>;
  readonly #stop: AbortController;
  #onFrame: ((f: Frame) => void) | undefined;
  #closed = false;
  #queue: Promise<unknown> = Promise.resolve();
  #inFlight = 0;
  #idle: NodeJS.Timeout | undefined;
  /** A folder the server may write, for the runs' private TMPDIRs (removed when the server ends). */
  tmpRoot: string | undefined;

  /** The server's own pid (inside the sandbox), for the escape tests. */
  serverPid = 0;
  /** Where the server connected (removed once it did), for the escape tests. */
  readonly socketPath: string;

  private constructor(
    key: string,
    sock: Socket,
    proc: Promise<RunResult>,
    stop: AbortController,
    path: string,
  ) {
    this.key = key;
    this.socketPath = path;
    this.#sock = sock;
    this.#process = proc;
    this.#stop = stop;
    const reader = new FrameReader();
    sock.on("data", (d: Buffer) => {
      for (const f of reader.push(d)) this.#onFrame?.(f);
    });
    const gone = (): void => {
      this.#closed = true;
      this.#onFrame?.({ kind: "x", payload: Buffer.alloc(0) });
    };
    sock.on("close", gone);
    sock.on("error", gone);
    void proc.then(gone);
  }

  /** Whether the server is still there to take a run. */
  get alive(): boolean {
    return !this.#closed;
  }

  /** Whether a run is in flight or queued (one run at a time). */
  get busy(): boolean {
    return this.#inFlight > 0;
  }

  /**
   * Starts a server for `door` (compiled from {@link forkserverConfinement}). Resolves with the
   * server, or with the reason it cannot serve (no server file, the launcher or the kernel refused).
   */
  static async start(opts: {
    door: Door;
    interpreter: string;
    cwd: string;
    key: string;
    runner?: ProcessRunner;
  }): Promise<Forkserver | { fallback: string }> {
    // Only inside ratchet-confine's sandbox: the server relies on its signal scope and its rules.
    if (opts.door.protection !== "landlock")
      return { fallback: `no confining launcher (${opts.door.protection})` };
    const file = forkserverFile();
    if (!file) return { fallback: `${FORKSERVER_FILE} is not in the package` };
    const dir = mkdtempSync(join(tmpdir(), "ratchet-fs-"));
    const path = join(dir, "s");
    const listener: Server = createServer();
    const connected = new Promise<Socket>((resolve) => {
      listener.once("connection", (s) => {
        // Exactly one connection: the server's. Nobody can connect after it.
        listener.close();
        rmSync(dir, { recursive: true, force: true });
        resolve(s);
      });
    });
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(path, () => resolve());
    });
    const stop = new AbortController();
    // The source goes on the command line (`-c`): the package folder is not among the read roots,
    // and the confinement stays exactly the script's.
    const cmd = opts.door.command(opts.interpreter, ["-B", "-c", readFileSync(file, "utf8"), path]);
    const proc = (opts.runner ?? realProcessRunner).run({
      command: cmd.command,
      args: cmd.args,
      cwd: opts.cwd,
      env: opts.door.env,
      timeoutMs: MAX_EXEC_TIMEOUT_MS,
      maxCaptureBytes: 64 * 1024,
      signal: stop.signal,
      // Resident: Node may exit while the server waits (the launcher's parent-death signal ends it).
      holdsLoop: false,
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), FORKSERVER_START_TIMEOUT_MS);
    });
    const first = await Promise.race([connected, proc, late]);
    clearTimeout(timer);
    if (first === "late") {
      stop.abort();
      await proc;
      listener.close();
      rmSync(dir, { recursive: true, force: true });
      return { fallback: `the server did not connect within ${FORKSERVER_START_TIMEOUT_MS} ms` };
    }
    if (!("write" in first)) {
      listener.close();
      rmSync(dir, { recursive: true, force: true });
      const r = first as RunResult;
      return {
        fallback: `the server did not start: ${r.spawnError?.message ?? (r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`)}`,
      };
    }
    const server = new Forkserver(opts.key, first, proc, stop, path);
    const hello = await server.#next();
    if (hello.kind === "r") {
      server.serverPid = Number(hello.payload.toString("latin1"));
      first.unref();
      return server;
    }
    await server.close();
    return {
      fallback: hello.kind === "u" ? hello.payload.toString("utf8") : "the server ended before it was ready",
    };
  }

  #next(): Promise<Frame> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve({ kind: "x", payload: Buffer.alloc(0) });
      this.#onFrame = (f) => {
        this.#onFrame = undefined;
        resolve(f);
      };
    });
  }

  /** Runs one script; resolves like the process runner does (never rejects for the script's failure). */
  run(req: ForkRun): Promise<RunResult> {
    this.#inFlight++;
    clearTimeout(this.#idle);
    // While a run is asked, the socket keeps Node alive (the server itself never does).
    this.#sock.ref();
    const next = this.#queue
      .then(() => this.#run(req))
      .finally(() => {
        if (--this.#inFlight > 0) return;
        this.#sock.unref();
        this.#idle = setTimeout(() => void this.close(), FORKSERVER_IDLE_MS);
        this.#idle.unref();
      });
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #run(req: ForkRun): Promise<RunResult> {
    const started = performance.now();
    if (this.#closed) return ended(started);
    // Cancelled before it was sent: nothing starts, as with the process runner. (The server reads a
    // cancel only while it serves a run; one sent ahead of the request would be dropped and the
    // script would run to its end.)
    if (req.signal?.aborted) {
      const { spawnError: _none, ...rest } = ended(started);
      return { ...rest, cancelled: true };
    }
    const out = new HeadTailCapture(req.maxCaptureBytes);
    const err = new HeadTailCapture(req.maxCaptureBytes);
    const all = new HeadTailCapture(req.maxCaptureBytes);
    const status = new Promise<Frame>((resolve) => {
      this.#onFrame = (f) => {
        if (f.kind === "o" || f.kind === "e") {
          (f.kind === "o" ? out : err).push(f.payload);
          all.push(f.payload);
          req.onOutput?.(Buffer.from(f.payload), f.kind === "o" ? "stdout" : "stderr");
          return;
        }
        this.#onFrame = undefined;
        resolve(f);
      };
    });
    const cancel = (): void => {
      if (!this.#closed) this.#sock.write(frame("c"));
    };
    req.signal?.addEventListener("abort", cancel, { once: true });
    const body = {
      argv: req.argv,
      cwd: req.cwd,
      env: req.env,
      // What a plain `python3 main.py` puts first on sys.path: the script's folder.
      path0: req.cwd,
      timeoutMs: req.timeoutMs,
      killGraceMs: req.killGraceMs,
      ...(req.confine ? { confine: req.confine } : {}),
    };
    if (!this.#closed) this.#sock.write(frame("q", Buffer.from(JSON.stringify(body))));
    const f = await status;
    req.signal?.removeEventListener("abort", cancel);
    let st: {
      exitCode: number | null;
      signal: NodeJS.Signals | null;
      timedOut: boolean;
      cancelled: boolean;
      pid: number;
      /** The run's child was confined and started the script (the server saw its one byte). */
      ran: boolean;
    };
    if (f.kind === "s") st = JSON.parse(f.payload.toString("utf8"));
    else
      st = {
        exitCode: null,
        signal: "SIGKILL",
        timedOut: false,
        cancelled: req.signal?.aborted === true,
        pid: 0,
        ran: true,
      };
    if (st.timedOut) {
      // As the launcher reports its own time limit (src/exec/door.ts launcherTimedOut).
      const line = Buffer.from(`ratchet-confine: timed out after ${req.timeoutMs} ms\n`);
      err.push(line);
      all.push(line);
      st.exitCode = 124;
      st.signal = null;
    }
    const [o, e, c] = [out.snapshot(), err.snapshot(), all.snapshot()];
    // The run could not be confined: nothing of the script ran (as the launcher's exit 125). Only
    // the server's word counts: a script can exit 125 with this very line on its stderr.
    const setup =
      !st.ran && st.exitCode === 125 && e.text.startsWith(KEEPER_SETUP_FAILURE)
        ? { code: "ECONFINE", message: e.text.trim().split("\n")[0] ?? "" }
        : undefined;
    return {
      exitCode: st.exitCode,
      signal: st.signal,
      stdout: o.text,
      stderr: e.text,
      combined: c.text,
      stdoutBytes: o.totalBytes,
      stderrBytes: e.totalBytes,
      combinedBytes: c.totalBytes,
      truncated: o.truncated || e.truncated || c.truncated,
      omittedBytes: { stdout: o.omittedBytes, stderr: e.omittedBytes, combined: c.omittedBytes },
      durationMs: performance.now() - started,
      timedOut: st.timedOut,
      cancelled: st.cancelled,
      pid: st.pid,
      ...(setup ? { spawnError: setup } : {}),
    };
  }

  /** Ends the server (its supervisor kills everything left and removes the cleanup folders). */
  async close(): Promise<void> {
    clearTimeout(this.#idle);
    this.#closed = true;
    this.#sock.destroy();
    this.#stop.abort();
    await this.#process;
  }
}

/** Servers kept for later runs, one per key (see {@link pooledServer}). */
const pool = new Map<string, Promise<Forkserver | { fallback: string }>>();

/**
 * The pooled server for `key`, started with `start` when there is none (or the last one ended).
 * Answers `{ fallback }` when it cannot serve now: it did not start (that answer is kept: the next
 * runs of the key take a plain start at once) or it is busy with another run.
 */
export async function pooledServer(
  key: string,
  start: () => Promise<Forkserver | { fallback: string }>,
): Promise<Forkserver | { fallback: string }> {
  let entry = pool.get(key);
  if (entry) {
    const s = await entry;
    if (s instanceof Forkserver && !s.alive) {
      pool.delete(key);
      entry = undefined;
    }
  }
  if (!entry) {
    entry = start();
    pool.set(key, entry);
  }
  const s = await entry;
  if (s instanceof Forkserver && s.busy)
    return { fallback: "the pre-started interpreter is busy with another run" };
  return s;
}

/** Ends every pooled server (tests; a process exiting ends them through the launcher). */
export async function closePooledServers(): Promise<void> {
  const all = [...pool.values()];
  pool.clear();
  for (const e of all) {
    const s = await e;
    if (s instanceof Forkserver) await s.close();
  }
}
