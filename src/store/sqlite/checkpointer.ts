/**
 * The WAL checkpoint off the writer's path, for resident processes (the workspace daemon,
 * `ratchet serve`): a `worker_threads` worker with its own connection to the same file runs
 * `PRAGMA wal_checkpoint(PASSIVE)` when the WAL holds as many frames as the writer's own
 * autocheckpoint would wait for (`SQLITE_WAL_CHECKPOINT_BYTES`), so the syncs happen at the same WAL
 * size as before; the writer's `wal_autocheckpoint` stays on at a multiple of it as a safety net.
 * See ARCHITECTURE.md beside this file.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The writer's autocheckpoint while a checkpointer runs: this many times the checkpointer's. */
export const SAFETY_NET_FACTOR = 4;
/**
 * How often the worker reads the WAL's frame count (one 132-byte `pread` of the `-shm` file) while
 * the WAL grows; each read that finds it unchanged doubles the wait, up to {@link IDLE_POLL_MS}
 * (a 5 ms poll of an idle store cost ~22 ms of CPU a second on this VM; backed off, ~1).
 */
const POLL_MS = 5;
const IDLE_POLL_MS = 100;
/**
 * Once the WAL holds its threshold and could not restart (the writer never paused while a
 * checkpoint ran), the frames still to copy that start another checkpoint: the writer's
 * safety-net checkpoint then finds little left to copy.
 */
const CATCH_UP_DIVISOR = 8;

/** The shared slots of the worker's state (an `Int32Array` over a `SharedArrayBuffer`). */
const STOP = 0;
const DONE = 1;
const CHECKPOINTS = 2;
const FAILED = 3;
const READY = 4;
const SLOTS = 5;

/**
 * The worker (CommonJS, evaluated: the CLI is bundled and has no file of its own for it). It
 * reads `mxFrame` (the WAL's frames, offset 16 of the wal-index header) and `nBackfill` (the frames
 * already copied, offset 96) from the `-shm` file — the wal-index is the file's shared mapping, so
 * a read sees what the writer's last commit wrote — and checkpoints when the frames not yet
 * copied reach the threshold. The size of the `-wal` file cannot tell it: a PASSIVE checkpoint
 * does not shrink it, the writer reuses it from its start.
 */
const WORKER_SOURCE = `
"use strict";
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { dbPath, sqlitePath, state: sab, frames, catchUp, pollMs, idlePollMs, littleEndian } = workerData;
const state = new Int32Array(sab);
const Database = require(sqlitePath);
let db;
let fd = -1;
try {
  db = new Database(dbPath, { fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  db.pragma("synchronous = NORMAL");
  db.pragma("wal_autocheckpoint = 0");
  db.pragma("wal_checkpoint(PASSIVE)");
  fd = fs.openSync(dbPath + "-shm", "r");
  Atomics.store(state, ${READY}, 1);
  const buf = Buffer.alloc(132);
  const u32 = (o) => (littleEndian ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  let wait = pollMs;
  let last = -1;
  while (Atomics.load(state, ${STOP}) === 0) {
    Atomics.wait(state, ${STOP}, 0, wait);
    if (Atomics.load(state, ${STOP}) !== 0) break;
    if (fs.readSync(fd, buf, 0, 132, 0) < 132) continue;
    const mx = u32(16);
    wait = mx === last ? Math.min(wait * 2, idlePollMs) : pollMs;
    last = mx;
    const todo = mx - u32(96);
    if (todo >= frames || (mx >= frames && todo >= catchUp)) {
      db.pragma("wal_checkpoint(PASSIVE)");
      Atomics.add(state, ${CHECKPOINTS}, 1);
    }
  }
} catch (err) {
  Atomics.store(state, ${FAILED}, 1);
  throw err;
} finally {
  try { if (fd >= 0) fs.closeSync(fd); } catch {}
  try { if (db) db.close(); } catch {}
  Atomics.store(state, ${DONE}, 1);
  Atomics.notify(state, ${DONE});
}
`;

let sqliteEntry: string | undefined;

/** A running background checkpointer of one database file. */
export class Checkpointer {
  readonly #worker: Worker;
  readonly #state = new Int32Array(new SharedArrayBuffer(SLOTS * 4));
  #stopped = false;
  #killed = false;
  #fellBack = false;

  /**
   * @param dbPath the database file (its writer is open: the `-shm` file exists)
   * @param frames the WAL frames that start a checkpoint (the writer's normal autocheckpoint)
   * @param fallBack called once when the worker dies before {@link stop}: the writer takes over
   */
  constructor(dbPath: string, frames: number, fallBack: (why: string) => void) {
    sqliteEntry ??= createRequire(import.meta.url).resolve("better-sqlite3");
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        dbPath,
        sqlitePath: sqliteEntry,
        state: this.#state.buffer,
        frames,
        catchUp: Math.max(1, Math.floor(frames / CATCH_UP_DIVISOR)),
        pollMs: POLL_MS,
        idlePollMs: IDLE_POLL_MS,
        littleEndian: new Uint8Array(new Uint16Array([1]).buffer)[0] === 1,
      },
      stdout: false,
      stderr: false,
    });
    // The process never waits for the worker: close() stops it, an exit without close() ends it.
    this.#worker.unref();
    const died = (why: string) => {
      if (this.#stopped || this.#fellBack) return;
      this.#fellBack = true;
      fallBack(why);
    };
    this.#worker.on("error", (err) => died(err.message));
    this.#worker.on("exit", (code) => died(`the thread exited (code ${code})`));
  }

  /** Checkpoints the worker ran (its own count, for tests and benches). */
  get checkpoints(): number {
    return Atomics.load(this.#state, CHECKPOINTS);
  }

  /** Whether the worker has opened its connection and watches the WAL. */
  get ready(): boolean {
    return Atomics.load(this.#state, READY) === 1;
  }

  /** Whether the worker is still checkpointing. */
  get running(): boolean {
    return !this.#stopped && Atomics.load(this.#state, DONE) === 0;
  }

  /** The thread's id (tests: it is gone after {@link stop}). */
  get threadId(): number {
    return this.#worker.threadId;
  }

  /** Ends the thread abruptly, as a crash would (tests of the safety net). */
  kill(): Promise<number> {
    this.#killed = true;
    return this.#worker.terminate();
  }

  /**
   * Stops the worker and waits (bounded) until its connection is closed, so the writer's close
   * that follows is the file's last and removes the WAL as before.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    Atomics.store(this.#state, STOP, 1);
    Atomics.notify(this.#state, STOP);
    // A checkpoint in progress finishes first (milliseconds); a worker still starting sees STOP
    // as soon as its connection is open. A killed worker never sets DONE: the wait is bounded.
    if (!this.#killed && !this.#fellBack && Atomics.load(this.#state, DONE) === 0)
      Atomics.wait(this.#state, DONE, 0, 5000);
    void this.#worker.terminate();
  }
}
