/**
 * The daemon: one resident process per SQLite workspace that serves the ledger's write flows over
 * `.ratchet/daemon.sock`, keeping the store open between commands. It runs each command exactly as
 * the in-process CLI does (`runFlowCommand`, the same FLOWS), one at a time, and answers only
 * after the op's transaction has committed. See ARCHITECTURE.md and docs/daemon.md.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { plainWriteFlow } from "../cli/entry.js";
import { type CommandIo, withCommandIo } from "../cli/io.js";
import { runFlowCommand } from "../cli/write-flows.js";
import { Redactor } from "../core/index.js";
import { Ledger } from "../ledger/index.js";
import { BlobStore, configuredStoreUrl, findWorkspace, SqliteStore, type Workspace } from "../store/index.js";
import { buildIdOf, myUid, trustedFolder } from "./files.js";
import {
  type Hello,
  isServedCommand,
  KEY_FILE,
  LOCK_FILE,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  type Refusal,
  RefusalReason,
  type Reply,
  type Request,
  SOCKET_FILE,
} from "./protocol.js";

export interface DaemonOptions {
  /** The workspace folder (`.ratchet/`). */
  wsDir: string;
  /** The daemon's bundle on disk (its build id is checked before every command). */
  buildFile: string;
  /** Exit after this long without a command. */
  idleMs: number;
  /** How long to wait for another daemon to let go of the lock before giving up (ms). */
  lockWaitMs?: number;
  log?: (line: string) => void;
}

/** How often the daemon checks that its socket and build are still its own (ms). */
const WATCH_MS = 1000;
const LOCK_POLL_MS = 50;

/**
 * Runs the daemon until it is idle, its build or socket changes, or it gets SIGTERM/SIGINT.
 * Resolves with the process's exit status: 0 after a clean stop (also when another daemon already
 * serves the workspace), 2 when it may not serve it (not a SQLite workspace, an untrusted folder).
 */
export async function runDaemon(opts: DaemonOptions): Promise<number> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`));
  const uid = myUid();
  const ws = findWorkspace(join(opts.wsDir, ".."));
  if (uid === undefined || !ws || ws.dir !== opts.wsDir || ws.storeUrl) {
    log(`daemon: ${opts.wsDir} is not a SQLite workspace; not serving it`);
    return 2;
  }
  if (!trustedFolder(ws.dir, uid)) {
    log(`daemon: ${ws.dir} is not owned by uid ${uid} alone (owner or group/other-writable); not serving it`);
    return 2;
  }
  const lock = await takeLock(join(ws.dir, LOCK_FILE), opts.lockWaitMs ?? 3000);
  if (!lock) {
    log("daemon: another daemon holds the workspace lock; exiting");
    return 0;
  }
  const socketPath = join(ws.dir, SOCKET_FILE);
  const build = buildIdOf(opts.buildFile);
  try {
    // Holding the lock, any socket here is a dead daemon's, unless it belongs to someone else.
    const st = statOrUndefined(socketPath);
    if (st && (!st.isSocket() || st.uid !== uid)) {
      log(`daemon: ${socketPath} exists and is not this user's socket; not touching it`);
      return 2;
    }
    if (st) {
      unlinkSync(socketPath);
      log("daemon: removed a stale socket");
    }
    if (!build) throw new Error(`no build at ${opts.buildFile}`);
    const served = new Daemon(ws, socketPath, build, opts, log);
    return await served.run();
  } finally {
    lock.close();
  }
}

/**
 * Runs `fn` with `process.env` holding exactly `env` (the caller's), then restores the daemon's
 * own. Flows read the environment as in-process (the publishing session's id, the extensions
 * file, `HOME`); commands run one at a time, so no other command sees the swap.
 */
async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const own = { ...process.env };
  const replace = (next: Record<string, string | undefined>) => {
    for (const k of Object.keys(process.env)) if (!(k in next)) delete process.env[k];
    for (const [k, v] of Object.entries(next)) if (typeof v === "string") process.env[k] = v;
  };
  replace(env);
  try {
    return await fn();
  } finally {
    replace(own);
  }
}

function statOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The workspace lock: an EXCLUSIVE transaction held on `daemon.lock` (a small SQLite file) for
 * the daemon's life. SQLite's lock is a POSIX record lock, so the kernel drops it when the process
 * dies, even by SIGKILL: two live daemons never hold it, and a crash never leaves it stuck.
 */
async function takeLock(path: string, waitMs: number): Promise<Database.Database | undefined> {
  const until = Date.now() + waitMs;
  for (;;) {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout: 0 });
      db.pragma("journal_mode = DELETE");
      db.exec("BEGIN EXCLUSIVE");
      return db;
    } catch (e) {
      db?.close();
      if ((e as { code?: string }).code !== "SQLITE_BUSY" || Date.now() >= until) return undefined;
    }
    await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
  }
}

class Daemon {
  readonly #server: Server;
  readonly #store: SqliteStore;
  readonly #blobs: BlobStore;
  /** Commands run one after another: the CLI's I/O and cwd are per process (withCommandIo, chdir). */
  #queue: Promise<void> = Promise.resolve();
  #idle: NodeJS.Timeout | undefined;
  #watch: NodeJS.Timeout | undefined;
  #socketIno = 0;
  readonly #key = randomBytes(32).toString("hex");
  #stopping = false;
  #served = 0;
  #stopped!: () => void;

  constructor(
    readonly ws: Workspace,
    readonly socketPath: string,
    readonly build: string,
    readonly opts: DaemonOptions,
    readonly log: (line: string) => void,
  ) {
    this.#store = SqliteStore.open(ws.dbPath, { checkpoint: "background", log });
    this.#blobs = new BlobStore(ws.blobsDir);
    this.#server = createServer((socket) => this.#accept(socket));
  }

  async run(): Promise<number> {
    const done = new Promise<void>((resolve) => {
      this.#stopped = resolve;
    });
    // The key first: a client reads it after the hello, so it exists before anyone can connect.
    writeKey(join(this.ws.dir, KEY_FILE), this.#key);
    // Created 0600 from the start (a chmod after listen would leave a moment of wider access).
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        this.#server.once("error", reject);
        this.#server.listen(this.socketPath, () => {
          this.#server.off("error", reject);
          resolve();
        });
      });
    } finally {
      process.umask(umask);
    }
    this.#socketIno = lstatSync(this.socketPath).ino;
    this.log(
      `daemon: pid ${process.pid} serving ${this.ws.dir} (build ${this.build}, idle ${this.opts.idleMs} ms)`,
    );
    const onSignal = (sig: string) => this.stop(`${sig} received`);
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    process.on("SIGHUP", () => {});
    this.#watch = setInterval(() => this.#check(), WATCH_MS);
    this.#touch();
    await done;
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    return 0;
  }

  /** Stops accepting, lets queued commands finish, removes its socket, closes the store. */
  stop(reason: string): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.log(`daemon: stopping: ${reason} (served ${this.#served} commands)`);
    clearTimeout(this.#idle);
    clearInterval(this.#watch);
    this.#server.close();
    if (statOrUndefined(this.socketPath)?.ino === this.#socketIno) {
      try {
        unlinkSync(this.socketPath);
      } catch {
        // already gone
      }
    }
    removeKey(join(this.ws.dir, KEY_FILE), this.#key);
    void this.#queue.then(() => {
      this.#store.close();
      this.#stopped();
    });
  }

  #touch(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.stop(`idle for ${this.opts.idleMs} ms`), this.opts.idleMs);
  }

  /** Still ours? The socket file (a removed workspace, a replaced socket) and the build on disk. */
  #check(): boolean {
    if (this.#stopping) return false;
    if (statOrUndefined(this.socketPath)?.ino !== this.#socketIno) {
      this.stop("the socket file was removed or replaced");
      return false;
    }
    if (buildIdOf(this.opts.buildFile) !== this.build) {
      this.stop("the Ratchet build on disk changed");
      return false;
    }
    return true;
  }

  #accept(socket: Socket): void {
    // A stale daemon never serves: a new build on disk closes the connection before the hello,
    // which tells the client nothing ran.
    if (!this.#check()) {
      socket.destroy();
      return;
    }
    this.#touch();
    const hello: Hello = { ratchet_daemon: PROTOCOL_VERSION, build: this.build, pid: process.pid };
    socket.write(`${JSON.stringify(hello)}\n`);
    let buf = "";
    let got = false;
    socket.setEncoding("utf8");
    socket.on("error", () => socket.destroy());
    socket.on("data", (chunk: string) => {
      if (got) return;
      buf += chunk;
      if (buf.length > MAX_FRAME_BYTES) {
        got = true;
        this.#answer(socket, { refused: RefusalReason.BadRequest, message: "request too large" });
        return;
      }
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      got = true;
      let req: Request;
      try {
        req = JSON.parse(buf.slice(0, nl)) as Request;
      } catch {
        this.#answer(socket, { refused: RefusalReason.BadRequest, message: "request is not JSON" });
        return;
      }
      // Queued even while stopping: a request that got its hello is answered.
      this.#queue = this.#queue.then(async () => {
        const answer = await this.#serve(req);
        this.#answer(socket, answer);
        if (!this.#stopping) this.#touch();
      });
    });
  }

  #answer(socket: Socket, answer: Reply | Refusal): void {
    if (!socket.destroyed) socket.end(`${JSON.stringify(answer)}\n`);
  }

  /** Runs one command as the in-process CLI would, or refuses it (nothing run). */
  async #serve(req: Request): Promise<Reply | Refusal> {
    if (!keyMatches(req.key, this.#key)) return { refused: RefusalReason.Key };
    if (req.build !== this.build || buildIdOf(this.opts.buildFile) !== this.build) {
      this.stop("a client of another build");
      return { refused: RefusalReason.Build };
    }
    if (!Array.isArray(req.args) || typeof req.cwd !== "string" || !req.env || typeof req.env !== "object")
      return { refused: RefusalReason.BadRequest, message: "args, cwd and env are required" };
    const flow = isServedCommand(req.args) ? plainWriteFlow(req.args) : undefined;
    if (!flow || flow.op === "run-step" || flow.db !== undefined) return { refused: RefusalReason.NotServed };
    let storeUrl: string | undefined;
    try {
      storeUrl = configuredStoreUrl(this.ws.dir);
      process.chdir(req.cwd);
    } catch {
      return { refused: RefusalReason.NotServed };
    }
    // The command must resolve to this workspace from its own folder, as in-process it would.
    if (storeUrl || findWorkspace(req.cwd)?.dir !== this.ws.dir) return { refused: RefusalReason.Store };
    const ledger = new Ledger({
      store: this.#store,
      blobs: this.#blobs,
      holder: `${Number(req.pid)}@${hostname()}`,
      redactor: new Redactor().addFromEnv(req.env),
    });
    const stdin = req.stdin === undefined ? Buffer.alloc(0) : Buffer.from(req.stdin, "base64");
    let stdout = "";
    let stderr = "";
    const io: CommandIo = {
      stdin: () => stdin,
      stdinIsTTY: req.stdinIsTTY === true,
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
    };
    let status: number;
    try {
      status = await withEnv(req.env, () =>
        withCommandIo(io, () =>
          runFlowCommand(flow.op, flow.args, {
            context: { workspace: this.ws, store: this.#store, blobs: this.#blobs, ledger },
          }),
        ),
      );
    } catch (e) {
      // What bin/ratchet.js prints for an error that escaped the command.
      stderr += `ratchet: internal error: ${(e as Error)?.stack ?? e}\n`;
      status = 1;
    }
    this.#served++;
    return { status, stdout, stderr };
  }
}

/** Writes the key file: mode 0600 from its creation, fsynced, renamed into place. */
function writeKey(path: string, key: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, `${key}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** Removes the key file when it is still this daemon's (a newer daemon may have replaced it). */
function removeKey(path: string, key: string): void {
  try {
    if (readFileSync(path, "utf8").trim() === key) unlinkSync(path);
  } catch {
    // gone already
  }
}

/** Constant-time comparison of a request's key with the daemon's. */
function keyMatches(given: unknown, key: string): boolean {
  if (typeof given !== "string" || given.length !== key.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(key));
}
