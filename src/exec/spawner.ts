/**
 * The resident spawner: `dist/native/ratchet-spawner`, one per Node process, started lazily by
 * the process runner, starts every process on its behalf so a start costs the same at any Node
 * RSS (libuv forks Node itself). The children's stdio are Unix stream connections the spawner
 * opens to a socket Node listens on, each announced with a single-use 128-bit nonce; the child
 * holds them directly (no relay). ARCHITECTURE.md "The spawner" has the lifecycle and fallback.
 */

import type { ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants, mkdtempSync, rmSync } from "node:fs";
import type { Server, Socket } from "node:net";
import { constants as osConstants, tmpdir } from "node:os";
import { join } from "node:path";
import { getSystemErrorName } from "node:util";
import { findAbove, lazyBuiltin } from "../core/index.js";
import { signalGroup } from "./process-group.js";
import type { CompiledRunRequest } from "./run-request.js";
import { SpawnerChild } from "./spawner-child.js";
import {
  decodeReply,
  encodeRequest,
  MAX_SPAWNER_REQUEST_BYTES,
  NONCE_BYTES,
  nodeSpawnMessage,
  REPLY_BYTES,
  type Reply,
  SPAWNER_PROTOCOL_VERSION,
  STREAM_HELLO_BYTES,
  Stream,
} from "./spawner-protocol.js";

const childProcess = lazyBuiltin<typeof import("node:child_process")>("node:child_process");
const net = lazyBuiltin<typeof import("node:net")>("node:net");
// Loaded on the first start, like the rest: a CLI that never spawns does not pay for them.
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

export { SPAWNER_LOST, SpawnerChild } from "./spawner-child.js";

export const SPAWNER_FILE = "ratchet-spawner";
/** After the spawner's death, ms between SIGTERM and SIGKILL to the groups it was running. */
const LOST_KILL_GRACE_MS = 500;
/** A connection that has not named its stream within this many ms is dropped. */
const STREAM_HELLO_TIMEOUT_MS = 5000;

/** `RATCHET_NO_SPAWNER=1` makes every run use Node's own spawn (read at each run). */
export function spawnerWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.RATCHET_NO_SPAWNER;
  return v === undefined || v === "" || v === "0";
}

let binary: string | null | undefined;
/** The built spawner, found by walking up from this module; undefined when it was not built. */
export function findSpawner(): string | undefined {
  binary ??=
    findAbove(import.meta.url, [join("native", SPAWNER_FILE), join("dist", "native", SPAWNER_FILE)], (p) => {
      try {
        accessSync(p, fsConstants.X_OK);
        return true;
      } catch {
        return false;
      }
    }) ?? null;
  return binary ?? undefined;
}

let signalNames: Map<number, NodeJS.Signals> | undefined;
function signalName(n: number): NodeJS.Signals | null {
  signalNames ??= new Map(
    Object.entries(osConstants.signals).map(([name, k]) => [k, name as NodeJS.Signals]),
  );
  return signalNames.get(n) ?? null;
}

/** How a start through the spawner ended. */
export type SpawnerStart =
  | { kind: "started"; child: SpawnerChild }
  | { kind: "failed"; error: Error & { code: string } }
  | { kind: "lost"; pid: number | undefined }
  | { kind: "fallback" };

interface Pending {
  id: number;
  nonce: string;
  command: string;
  holds: boolean;
  wantStdin: boolean;
  streams: (Socket | undefined)[];
  missing: number;
  pid?: number;
  exit?: [number | null, NodeJS.Signals | null];
  child?: SpawnerChild;
  resolve(s: SpawnerStart): void;
}

/** One running spawner process and the requests in flight through it. */
class Spawner {
  private readonly byId = new Map<number, Pending>();
  private readonly byNonce = new Map<string, Pending>();
  private nextId = 1;
  private holds = 0;
  private pendingBytes = Buffer.alloc(0);
  private dead = false;
  /** The hello arrived (requests go out at once). */
  isReady = false;
  readonly ready: Promise<boolean>;
  private markReady!: (ok: boolean) => void;
  private control!: Socket;

  constructor(
    readonly proc: ChildProcess,
    private readonly onGone: (s: Spawner) => void,
  ) {
    this.ready = new Promise((r) => {
      this.markReady = r;
    });
    // libuv's stdio pipes are net.Sockets (the types say Readable/Writable).
    const out = proc.stdout as Socket | null;
    const input = proc.stdin as Socket | null;
    if (!out || !input) throw new Error("spawner started without its control pipes");
    proc.unref();
    out.unref();
    input.unref();
    input.on("error", () => {}); // EPIPE once it is gone; `close` on its stdout tells us
    this.control = out;
    proc.on("error", () => this.gone());
    out.on("data", (chunk: Buffer) => this.onData(chunk));
    out.on("close", () => this.gone());
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /**
   * Sends one request; `done` is called once the child runs with its streams connected, or did
   * not start — synchronously in that I/O callback, so the caller's listeners are on the streams
   * before an end already read could be emitted.
   */
  request(c: CompiledRunRequest, done: (s: SpawnerStart) => void): void {
    const id = this.nextId++;
    const nonceBytes = crypto().randomBytes(NONCE_BYTES);
    const frame = encodeRequest({
      id,
      nonce: nonceBytes,
      withStdin: c.stdin !== undefined,
      file: c.command,
      // Ours as it is now (Node may have chdir'd since the spawner started).
      cwd: c.cwd ?? process.cwd(),
      argv: [c.command, ...c.args],
      env: c.env,
    });
    if (frame.length > MAX_SPAWNER_REQUEST_BYTES) {
      done({ kind: "fallback" });
      return;
    }
    {
      const p: Pending = {
        id,
        nonce: nonceBytes.toString("hex"),
        command: c.command,
        holds: c.holdsLoop,
        wantStdin: c.stdin !== undefined,
        streams: [undefined, undefined, undefined],
        missing: c.stdin !== undefined ? 3 : 2,
        resolve: done,
      };
      this.byId.set(id, p);
      this.byNonce.set(p.nonce, p);
      if (p.holds && this.holds++ === 0) this.control.ref();
      this.proc.stdin?.write(frame);
    }
  }

  /** A connection to the stream socket named this nonce and stream; false: drop it. */
  claim(nonce: string, stream: number, sock: Socket): boolean {
    const p = this.byNonce.get(nonce);
    if (!p || stream > Stream.stderr || p.streams[stream] !== undefined) return false;
    if (stream === Stream.stdin && !p.wantStdin) return false;
    p.streams[stream] = sock;
    p.missing--;
    if (p.missing === 0) {
      this.byNonce.delete(nonce); // single-use: a replay is now unknown
      lastUsedNonce = nonce;
    }
    this.maybeStarted(p);
    return true;
  }

  private onData(chunk: Buffer): void {
    let buf = this.pendingBytes.length ? Buffer.concat([this.pendingBytes, chunk]) : chunk;
    let at = 0;
    for (; at + REPLY_BYTES <= buf.length; at += REPLY_BYTES) this.onReply(decodeReply(buf, at));
    buf = buf.subarray(at);
    this.pendingBytes = buf.length ? Buffer.from(buf) : Buffer.alloc(0);
  }

  private onReply(r: Reply): void {
    if (r.kind === "hello") {
      if (r.version === SPAWNER_PROTOCOL_VERSION) {
        this.isReady = true;
        this.markReady(true);
      } else {
        this.markReady(false);
        this.proc.kill("SIGKILL");
      }
      return;
    }
    const p = this.byId.get(r.id);
    if (!p) return;
    if (r.kind === "started") {
      p.pid = r.pid;
      this.maybeStarted(p);
    } else if (r.kind === "noStreams") {
      // Our socket is unusable here: this run and every later one use Node's spawn.
      this.forget(p);
      for (const s of p.streams) s?.destroy();
      disabled = true;
      p.resolve({ kind: "fallback" });
    } else if (r.kind === "failed") {
      this.forget(p);
      for (const s of p.streams) s?.destroy();
      const code = errnoName(r.errno);
      const error = Object.assign(new Error(nodeSpawnMessage(p.command, code)), { code, errno: -r.errno });
      p.resolve({ kind: "failed", error });
    } else {
      // Its streams may still be on their way (a child that exits at once): the nonce stays.
      this.byId.delete(p.id);
      const sig = r.signal === null ? null : signalName(r.signal);
      if (p.child) {
        this.unhold(p);
        p.child.exited(r.code, sig);
      } else p.exit = [r.code, sig]; // the loop stays held until its streams are here
    }
  }

  private maybeStarted(p: Pending): void {
    if (p.pid === undefined || p.missing > 0 || p.child) return;
    const [stdin, stdout, stderr] = p.streams;
    if (!stdout || !stderr) return;
    if (p.holds) for (const s of p.streams) s?.ref();
    p.child = new SpawnerChild(p.pid, stdin ?? null, stdout, stderr);
    if (p.exit) {
      this.unhold(p);
      p.child.exited(...p.exit);
    }
    p.resolve({ kind: "started", child: p.child });
  }

  private forget(p: Pending): void {
    this.byId.delete(p.id);
    this.byNonce.delete(p.nonce);
    this.unhold(p);
  }

  /** A run that holds the loop holds it until its outcome is known and its streams are ours. */
  private unhold(p: Pending): void {
    if (!p.holds) return;
    p.holds = false;
    if (--this.holds === 0) this.control.unref();
  }

  /** The spawner exited (or could not start): every run through it settles, the next run starts another. */
  private gone(): void {
    if (this.dead) return;
    this.dead = true;
    this.isReady = false;
    this.markReady(false);
    this.onGone(this);
    // Every run not settled yet: running, or exited with its streams still on their way.
    for (const p of new Set([...this.byId.values(), ...this.byNonce.values()])) {
      this.forget(p);
      // Started (or maybe started): nothing reports its exit any more, so nothing of it may run on.
      if (p.pid !== undefined) killLost(p.pid);
      if (p.child) p.child.lost();
      else {
        for (const s of p.streams) s?.destroy();
        p.resolve({ kind: "lost", pid: p.pid });
      }
    }
    this.proc.stdin?.destroy();
  }
}

/**
 * Ends the group of a run whose spawner died: SIGTERM, SIGKILL {@link LOST_KILL_GRACE_MS} later.
 * Not SIGKILL at once: a `ratchet-confine` in it must live to kill its own descendants.
 */
function killLost(pgid: number): void {
  signalGroup(pgid, "SIGTERM");
  setTimeout(() => signalGroup(pgid, "SIGKILL"), LOST_KILL_GRACE_MS).unref();
}

function errnoName(errno: number): string {
  try {
    return getSystemErrorName(-errno);
  } catch {
    return "UNKNOWN";
  }
}

/** The stream socket: Node's side of every child's stdio, one per Node process. */
let listener: { server: Server; dir: string; path: string } | undefined;
let current: Spawner | undefined;
/** Set when a spawner could not start at all: every later run uses Node's spawn. */
let disabled = false;

function listen(): { server: Server; dir: string; path: string } {
  if (listener) return listener;
  const dir = mkdtempSync(join(tmpdir(), "ratchet-spawner-")); // 0700
  const path = join(dir, "s");
  const server = net().createServer((sock) => acceptStream(sock));
  server.on("error", () => {
    // Cannot listen (the temp folder is not usable): every run uses Node's spawn.
    disabled = true;
    current?.proc.kill("SIGKILL");
  });
  server.listen(path);
  server.unref();
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  listener = { server, dir, path };
  return listener;
}

/** Reads a connection's nonce and stream number and hands it to its request, or drops it. */
function acceptStream(sock: Socket): void {
  sock.unref();
  sock.on("error", () => {});
  const timer = setTimeout(() => sock.destroy(), STREAM_HELLO_TIMEOUT_MS);
  timer.unref();
  const onReadable = (): void => {
    const hello = sock.read(STREAM_HELLO_BYTES) as Buffer | null;
    if (hello === null) return;
    sock.off("readable", onReadable);
    sock.off("end", onEnd);
    clearTimeout(timer);
    const nonce = hello.subarray(0, NONCE_BYTES).toString("hex");
    if (hello.length !== STREAM_HELLO_BYTES || !current?.claim(nonce, hello[NONCE_BYTES] ?? 255, sock))
      sock.destroy();
  };
  const onEnd = (): void => {
    clearTimeout(timer);
    sock.destroy();
  };
  sock.on("readable", onReadable);
  sock.on("end", onEnd);
}

/** The running spawner, started on first use; undefined when none can run here. */
async function spawner(): Promise<Spawner | undefined> {
  if (disabled) return undefined;
  if (!current) {
    const bin = findSpawner();
    if (!bin) {
      disabled = true;
      return undefined;
    }
    let proc: ChildProcess;
    try {
      const { path } = listen();
      proc = childProcess().spawn(bin, [path], {
        stdio: ["pipe", "pipe", "ignore"],
        detached: true,
        env: {},
      });
    } catch {
      disabled = true;
      return undefined;
    }
    current = new Spawner(proc, (s) => {
      if (current === s) current = undefined;
    });
    const s = current;
    if (!(await s.ready)) {
      if (current === s) current = undefined;
      disabled = true;
      return undefined;
    }
    return s;
  }
  const s = current;
  return (await s.ready) ? s : undefined;
}

/**
 * Starts `c` through the spawner and calls `done` with the outcome (synchronously in the I/O
 * callback that completes it: attach to the child's streams right there); `fallback` when no
 * spawner is ready (Node's spawn then runs it).
 */
export function startThroughSpawner(c: CompiledRunRequest, done: (s: SpawnerStart) => void): void {
  if (current?.isReady) {
    current.request(c, done);
    return;
  }
  // None running yet (this process's first run, or the first after its death): this run uses
  // Node's spawn, and the spawner starts right after it, off this run's path.
  if (!disabled && !current && !startScheduled) {
    startScheduled = true;
    setImmediate(() => {
      startScheduled = false;
      void spawner();
    });
  }
  done({ kind: "fallback" });
}

let startScheduled = false;

/**
 * Starts the spawner now if none runs and resolves once it takes runs; false when there can be
 * none here (tests and the bench, which must know which transport they measure).
 */
export async function startSpawner(timeoutMs = 5000): Promise<boolean> {
  // The spawner's pipes are unref'd: a caller with nothing else running (a script, the bench)
  // would see its loop empty and exit before the hello; a ref'd timer holds it and bounds the wait.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    return (await Promise.race([spawner(), late])) !== undefined;
  } finally {
    clearTimeout(timer);
  }
}

let lastUsedNonce: string | undefined;

/** The pid of the running spawner, if any (tests, the bench). */
export function spawnerPid(): number | undefined {
  return current?.pid;
}

/**
 * What the escape tests attack: the stream socket's path and the hex nonce of the last start
 * whose streams all connected (a replay must be refused). In-process callers are trusted anyway.
 */
export function spawnerInternals(): { socketPath: string | undefined; lastUsedNonce: string | undefined } {
  return { socketPath: listener?.path, lastUsedNonce };
}
