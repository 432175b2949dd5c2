/**
 * One watcher for every live client. It wakes when another process may have committed (SQLite: a
 * change of the database folder — the WAL file is written on every commit; PostgreSQL: a
 * `NOTIFY ratchet_events` on its own `LISTEN` session, see event-wake.ts) and on writes made
 * through this server, reads the events table once from the last id it saw, and hands the new rows
 * to every subscriber. A slow fallback timer covers a lost wake-up. No client polls.
 */
import type { EventRow, Store } from "../store/index.js";
import { type EventWake, type EventWakeOptions, startEventWake } from "./event-wake.js";
import { SSE_BATCH, WATCH_DEBOUNCE_MS } from "./limits.js";

/** Where the hub's wake-ups come from: a folder to watch (SQLite) or a store URL to LISTEN on. */
export interface HubWakeSource {
  watchDir?: string;
  storeUrl?: string;
  /** Options of the wake-up source (fallback period, reconnect log). */
  wake?: EventWakeOptions;
}

/** Which events a subscriber wants. Empty fields match everything. */
export interface EventFilter {
  planId?: string;
  entityKind?: string;
  entityId?: string;
}

export function matches(e: EventRow, f: EventFilter): boolean {
  return (
    (f.planId === undefined || e.plan_id === f.planId) &&
    (f.entityKind === undefined || e.entity_kind === f.entityKind) &&
    (f.entityId === undefined || e.entity_id === f.entityId)
  );
}

export type Subscriber = (rows: readonly EventRow[]) => void;

export class EventHub {
  #lastSeen: number;
  readonly #subs = new Set<Subscriber>();
  #wake: EventWake | undefined;
  #pending: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  private readonly source: HubWakeSource;

  constructor(
    private readonly store: Pick<Store, "listEvents" | "lastEventId">,
    source: string | HubWakeSource = {},
  ) {
    this.source = typeof source === "string" ? { watchDir: source } : source;
    this.#lastSeen = store.lastEventId();
  }

  /** The newest event id this hub has delivered. */
  get lastSeen(): number {
    return this.#lastSeen;
  }

  /** Adds a subscriber; returns its removal. Starts watching on the first one. */
  subscribe(fn: Subscriber): () => void {
    this.#subs.add(fn);
    this.#start();
    return () => {
      this.#subs.delete(fn);
      if (this.#subs.size === 0) this.#stop();
    };
  }

  /** Schedules a read of new events (called by the watcher and after this server's own writes). */
  kick(): void {
    if (this.#pending || this.#closed || this.#subs.size === 0) return;
    this.#pending = setTimeout(() => this.drain(), WATCH_DEBOUNCE_MS);
  }

  /** Reads every event after the last seen one and delivers it. Synchronous. */
  drain(): void {
    this.#pending = undefined;
    if (this.#closed) return;
    for (;;) {
      const rows = this.store.listEvents({ since: this.#lastSeen, limit: SSE_BATCH });
      if (rows.length === 0) return;
      this.#lastSeen = rows[rows.length - 1]!.id;
      for (const s of [...this.#subs]) s(rows);
      if (rows.length < SSE_BATCH) return;
    }
  }

  /** Which mechanism wakes this hub while it has subscribers (undefined while it has none). */
  get wakeKind(): EventWake["kind"] | undefined {
    return this.#wake?.kind;
  }

  /** Resolves once the wake-up source is in place (the first `LISTEN` on PostgreSQL). */
  get ready(): Promise<void> {
    return this.#wake?.ready ?? Promise.resolve();
  }

  #start(): void {
    if (this.#wake || this.#closed) return;
    // Catch up to now so the first drain delivers only what is new for live subscribers.
    this.#lastSeen = Math.max(this.#lastSeen, this.store.lastEventId());
    this.#wake = startEventWake(this.source, () => this.kick(), this.source.wake);
  }

  #stop(): void {
    if (this.#pending) clearTimeout(this.#pending);
    this.#pending = undefined;
    this.#wake?.close();
    this.#wake = undefined;
  }

  close(): void {
    this.#closed = true;
    this.#subs.clear();
    this.#stop();
  }
}
