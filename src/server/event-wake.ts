/**
 * What wakes a reader of the events table when another process commits: on SQLite a watch of the
 * database's folder (every commit writes the WAL file), on PostgreSQL a dedicated async `pg`
 * session that `LISTEN`s on {@link EVENTS_CHANNEL} (`appendEvent` calls `pg_notify` inside the
 * write transaction, so a notification is delivered only on commit, in commit order). A wake-up
 * carries no data: the reader then reads `events WHERE id > last`, so a lost or coalesced
 * notification never loses an event, and a slow fallback timer covers a notification that never
 * comes (a file system without change notifications; a listener between reconnects).
 *
 * The listener reconnects by itself (the database restarted, the session was terminated): with a
 * backoff, then `LISTEN` again, then one wake-up so the reader catches up by id on whatever was
 * committed while nobody listened.
 */
import { type FSWatcher, watch } from "node:fs";
import type pg from "pg";
import { redactUrl } from "../store/index.js";
import {
  PG_LISTEN_BACKOFF_MAX_MS,
  PG_LISTEN_BACKOFF_MS,
  PG_LISTEN_CONNECT_TIMEOUT_MS,
  PG_WAKE_FALLBACK_MS,
  WATCH_FALLBACK_MS,
} from "./limits.js";

/** The NOTIFY channel of new events; the payload is the event id (informational only). */
export const EVENTS_CHANNEL = "ratchet_events";

/** A running source of wake-ups. */
export interface EventWake {
  /** Which mechanism wakes the reader. */
  readonly kind: "file-watch" | "listen";
  /** Resolves once the first wake-up source is in place (the first `LISTEN` answered). */
  readonly ready: Promise<void>;
  close(): void;
}

/** Options of {@link startEventWake}. */
export interface EventWakeOptions {
  /** Milliseconds of the fallback timer. Default 1 s on SQLite, 5 s (or `RATCHET_EVENTS_FALLBACK_MS`) on PostgreSQL. */
  fallbackMs?: number;
  /** One line per lost listener session and reconnect. Default: none. */
  log?: (line: string) => void;
  /**
   * Keep the process alive while this runs (`events --follow`, whose only work is waiting): the
   * fallback timer is then not `unref`'d, so neither a failed watch nor a listener between
   * reconnects lets the process exit. Default false (the server's listening socket keeps it alive).
   */
  keepAlive?: boolean;
}

/** The fallback period on PostgreSQL: `RATCHET_EVENTS_FALLBACK_MS` when it is a positive integer. */
function pgFallbackMs(): number {
  const raw = process.env.RATCHET_EVENTS_FALLBACK_MS;
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : PG_WAKE_FALLBACK_MS;
}

/**
 * Calls `wake` whenever new events may have been committed: `LISTEN` on `storeUrl` when it is set,
 * else a watch of `watchDir`; plus the fallback timer. `wake` should coalesce (debounce) calls.
 */
export function startEventWake(
  where: { storeUrl?: string | undefined; watchDir?: string | undefined },
  wake: () => void,
  opts: EventWakeOptions = {},
): EventWake {
  if (where.storeUrl) {
    const listener = new PgEventListener(where.storeUrl, wake, opts.log);
    const timer = setInterval(wake, opts.fallbackMs ?? pgFallbackMs());
    if (!opts.keepAlive) timer.unref();
    return {
      kind: "listen",
      ready: listener.ready,
      close() {
        clearInterval(timer);
        listener.close();
      },
    };
  }
  let watcher: FSWatcher | undefined;
  if (where.watchDir) {
    try {
      watcher = watch(where.watchDir, wake);
      watcher.on("error", () => undefined);
    } catch {
      watcher = undefined;
    }
  }
  const timer = setInterval(wake, opts.fallbackMs ?? WATCH_FALLBACK_MS);
  if (!opts.keepAlive) timer.unref();
  return {
    kind: "file-watch",
    ready: Promise.resolve(),
    close() {
      clearInterval(timer);
      watcher?.close();
    },
  };
}

/**
 * One async `pg` session doing nothing but `LISTEN ratchet_events`. Reconnects with a doubling
 * backoff (100 ms … 5 s) until closed; each (re)connection ends with one wake-up.
 */
export class PgEventListener {
  #client: pg.Client | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #closed = false;
  #resolveReady!: () => void;
  /** Resolves on the first successful `LISTEN` (never rejects: a failure is retried). */
  readonly ready = new Promise<void>((res) => {
    this.#resolveReady = res;
  });
  /** Completed `LISTEN`s, reconnects included (tests read it). */
  connections = 0;

  constructor(
    private readonly url: string,
    private readonly wake: () => void,
    private readonly log?: (line: string) => void,
  ) {
    void this.#connect();
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    if (this.#closed) return;
    // Loaded here: a SQLite server or `events --follow` never pays for the driver.
    const { default: driver } = await import("pg");
    const client = new driver.Client({
      connectionString: this.url,
      connectionTimeoutMillis: PG_LISTEN_CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // Named apart from the store's sessions (`ratchet`) in pg_stat_activity.
      application_name: "ratchet-listen",
    });
    let lost = false;
    const onLost = (why: string) => {
      if (lost) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
      client.removeAllListeners("notification");
      client.end().catch(() => undefined);
      if (this.#closed) return;
      this.log?.(`event listener on ${redactUrl(this.url)} lost (${why}); reconnecting`);
      const delay = Math.min(PG_LISTEN_BACKOFF_MS * 2 ** this.#attempt, PG_LISTEN_BACKOFF_MAX_MS);
      this.#attempt++;
      this.#retry = setTimeout(() => void this.#connect(), delay);
      this.#retry.unref();
    };
    client.on("notification", (m) => {
      if (m.channel === EVENTS_CHANNEL) this.wake();
    });
    client.on("error", (e) => onLost(e.message));
    client.on("end", () => onLost("connection ended"));
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (e) {
      onLost(e instanceof Error ? e.message : String(e));
      return;
    }
    if (this.#closed || lost) {
      if (!lost) client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#attempt = 0;
    this.connections++;
    this.#resolveReady();
    // Whatever committed while nobody listened: the reader catches up by id.
    this.wake();
  }

  close(): void {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    const c = this.#client;
    this.#client = undefined;
    c?.end().catch(() => undefined);
    this.#resolveReady();
  }
}
