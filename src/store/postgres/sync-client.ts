/**
 * A synchronous PostgreSQL client: the `Store` contract is synchronous (better-sqlite3 style) and
 * every write flow runs inside `store.tx(fn)` with a synchronous `fn`, so the PostgreSQL store
 * needs queries that return values, not promises.
 *
 * A worker thread owns a `pg` Client (bridge-worker.ts). `query()` posts the request on a
 * MessagePort and blocks the calling thread with `Atomics.wait` on a SharedArrayBuffer flag; the
 * worker runs the query on its own event loop, posts the answer and flips the flag; the caller
 * wakes and takes the answer with `receiveMessageOnPort` (the synckit pattern). Every wait is
 * bounded: the server cancels a statement after `statement_timeout`, and the caller gives up on the
 * worker a margin later (a dead or stuck worker never hangs the process); after that — or once the
 * connection to the server is lost — the client is broken ({@link SyncPg.broken}) and every call
 * refuses at once with `store_lost`.
 */
import { createRequire } from "node:module";
import type { MessagePort, Worker } from "node:worker_threads";
import { ErrorCode, lazyBuiltin, RatchetError } from "../../core/index.js";
import { BRIDGE_WORKER_SOURCE } from "./bridge-worker.js";
import {
  PG_BRIDGE_WAIT_MARGIN_MS,
  PG_CONNECT_TIMEOUT_MS,
  PG_IDLE_IN_TX_TIMEOUT_MS,
  PG_STATEMENT_TIMEOUT_MS,
} from "./limits.js";
import { redactUrl } from "./url.js";

/** A value a query parameter may take. */
export type PgParam = string | number | boolean | null | undefined | Uint8Array;

export interface PgResult<R> {
  rows: R[];
  rowCount: number;
}

/** An error PostgreSQL (or the driver) reported, carried across the bridge. */
export class PgError extends Error {
  override readonly name = "PgError";
  /** The SQLSTATE (`23505` unique violation, `57014` statement timeout, …) when the server sent one. */
  readonly code: string | undefined;
  readonly detail: string | undefined;
  readonly constraint: string | undefined;
  readonly table: string | undefined;

  constructor(e: WireError, sql?: string) {
    super(sql ? `${e.message} (in: ${sql.length > 200 ? `${sql.slice(0, 200)}…` : sql})` : e.message);
    this.code = e.code;
    this.detail = e.detail;
    this.constraint = e.constraint;
    this.table = e.table;
  }
}

interface WireError {
  message: string;
  code?: string;
  detail?: string;
  constraint?: string;
  table?: string;
}

type Answer =
  | { ok: true; rows: unknown[]; rowCount: number }
  | { ok: false; error: WireError; lost?: string };

/**
 * Whether `e` says the session it came from is broken for good ({@link SyncPg.broken}): every error
 * the bridge throws from the breaking call on carries `details.store_broken: true`. The process
 * must open a new session (in practice: exit and be restarted); retrying on this one is pointless.
 */
export function storeBroken(e: unknown): boolean {
  return e instanceof RatchetError && e.details.store_broken === true;
}

export interface SyncPgOptions {
  /** Server-side `statement_timeout` (default {@link PG_STATEMENT_TIMEOUT_MS}). */
  statementTimeoutMs?: number;
  /** Server-side `idle_in_transaction_session_timeout` (default {@link PG_IDLE_IN_TX_TIMEOUT_MS}). */
  idleInTxTimeoutMs?: number;
  /** Connect timeout (default {@link PG_CONNECT_TIMEOUT_MS}). */
  connectTimeoutMs?: number;
  /**
   * How much longer than the statement timeout the caller waits for the worker before it declares
   * the session dead (default {@link PG_BRIDGE_WAIT_MARGIN_MS}).
   */
  waitMarginMs?: number;
  /** `application_name` of the session (default `ratchet`). */
  applicationName?: string;
}

// Loaded when a PostgreSQL session opens: a SQLite CLI write never pays for it.
const threads = lazyBuiltin<typeof import("node:worker_threads")>("node:worker_threads");

let pgEntry: string | undefined;
function resolvePg(): string {
  pgEntry ??= createRequire(import.meta.url).resolve("pg");
  return pgEntry;
}

/** One synchronous PostgreSQL session. Not shareable between threads; one request at a time. */
export class SyncPg {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #flag: Int32Array;
  readonly #waitMs: number;
  readonly #url: string;
  #broken: string | undefined;
  #closed = false;

  /**
   * Starts the worker and connects.
   * @throws workspace_not_found when the server cannot be reached or refuses the login.
   */
  constructor(url: string, opts: SyncPgOptions = {}) {
    this.#url = redactUrl(url);
    const statementTimeoutMs = opts.statementTimeoutMs ?? PG_STATEMENT_TIMEOUT_MS;
    const connectTimeoutMs = opts.connectTimeoutMs ?? PG_CONNECT_TIMEOUT_MS;
    this.#waitMs = statementTimeoutMs + (opts.waitMarginMs ?? PG_BRIDGE_WAIT_MARGIN_MS);
    const { MessageChannel, Worker } = threads();
    const { port1, port2 } = new MessageChannel();
    const shared = new SharedArrayBuffer(4);
    this.#flag = new Int32Array(shared);
    this.#port = port1;
    this.#worker = new Worker(BRIDGE_WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2, flag: this.#flag, pgPath: resolvePg() },
      transferList: [port2],
      stdout: false,
      stderr: false,
    });
    // The caller's event loop never waits for the worker: close() ends it, and a process that
    // exits without close() must not hang on it.
    this.#worker.unref();
    this.#port.unref();
    try {
      this.#call(
        {
          kind: "connect",
          url,
          statementTimeoutMs,
          idleInTxTimeoutMs: opts.idleInTxTimeoutMs ?? PG_IDLE_IN_TX_TIMEOUT_MS,
          connectTimeoutMs,
          applicationName: opts.applicationName ?? "ratchet",
        },
        connectTimeoutMs + PG_BRIDGE_WAIT_MARGIN_MS,
      );
    } catch (err) {
      this.#terminate();
      throw new RatchetError(
        ErrorCode.WorkspaceNotFound,
        `cannot connect to PostgreSQL at ${this.#url}: ${(err as Error).message}`,
        { url: this.#url },
        { cause: err },
      );
    }
  }

  /** Runs one statement with `$1…$n` parameters (prepared once per session) and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params: readonly PgParam[] = []): PgResult<R> {
    return this.#call({ kind: "query", sql, params }, this.#waitMs, sql) as PgResult<R>;
  }

  /** Runs one or more statements without parameters in one round trip (the simple query protocol). */
  exec(sql: string): void {
    this.#call({ kind: "exec", sql }, this.#waitMs, sql);
  }

  /** Ends the session and the worker. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#broken) {
      try {
        this.#call({ kind: "close" }, PG_CONNECT_TIMEOUT_MS);
      } catch {
        // the session is gone either way; the worker is ended below
      }
    }
    this.#terminate();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Why this session is unusable for good, or undefined while it works: the bridge did not answer
   * within its wait, or the connection to the server was lost (ended by
   * the server, the socket closed — a `pg` Client never reconnects). Every call refuses at once
   * after that, with `store_lost` and `details.store_broken` ({@link storeBroken}).
   */
  get broken(): string | undefined {
    return this.#broken;
  }

  #call(msg: Record<string, unknown>, waitMs: number, sql?: string): { rows: unknown[]; rowCount: number } {
    if (this.#closed && msg.kind !== "close")
      throw new RatchetError(ErrorCode.Internal, `the PostgreSQL session to ${this.#url} is closed`);
    if (this.#broken)
      throw new RatchetError(ErrorCode.StoreLost, this.#broken, { url: this.#url, store_broken: true });
    Atomics.store(this.#flag, 0, 0);
    this.#port.postMessage(msg);
    const deadline = performance.now() + waitMs;
    let received: { message: unknown } | undefined;
    for (;;) {
      const left = deadline - performance.now();
      const waited = left > 0 ? Atomics.wait(this.#flag, 0, 0, left) : "timed-out";
      received = threads().receiveMessageOnPort(this.#port);
      if (received || waited === "timed-out") break;
      // Woken with no answer on the port (seen once in a CI run with six processes migrating at
      // once): not this call's wake-up. Wait out the rest of the same bound; the answer is checked
      // again after re-arming the flag, so a reply landing in between is not slept through.
      Atomics.store(this.#flag, 0, 0);
      received = threads().receiveMessageOnPort(this.#port);
      if (received) break;
    }
    if (!received) {
      this.#broken = `the PostgreSQL bridge to ${this.#url} did not answer within ${waitMs} ms (worker dead or stuck); this session is unusable`;
      this.#terminate();
      throw new RatchetError(ErrorCode.Timeout, this.#broken, { url: this.#url, store_broken: true });
    }
    const answer = received.message as Answer;
    if (!answer.ok) {
      const pgErr = new PgError(answer.error, sql);
      if (answer.lost === undefined || msg.kind === "connect") throw pgErr;
      this.#broken = `the PostgreSQL session to ${this.#url} is lost (${answer.lost}); this session is unusable`;
      this.#terminate();
      throw new RatchetError(
        ErrorCode.StoreLost,
        this.#broken,
        { url: this.#url, store_broken: true, ...(pgErr.code ? { sqlstate: pgErr.code } : {}) },
        { cause: pgErr },
      );
    }
    return answer;
  }

  #terminate(): void {
    this.#port.close();
    void this.#worker.terminate();
  }
}
