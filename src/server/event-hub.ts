/**
 * One watcher for every live client. It wakes on changes of the database folder (the WAL file is
 * written on every commit, also by other processes) and on writes made through this server, reads
 * the events table once from the last id it saw, and hands the new rows to every subscriber.
 * A slow fallback timer covers file systems without change notifications. No client polls.
 */
import { type FSWatcher, watch } from "node:fs";
import type { EventRow, Store } from "../store/index.js";
import { SSE_BATCH, WATCH_DEBOUNCE_MS, WATCH_FALLBACK_MS } from "./limits.js";

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
  #watcher: FSWatcher | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #pending: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    private readonly store: Pick<Store, "listEvents" | "lastEventId">,
    private readonly watchDir?: string,
  ) {
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

  #start(): void {
    if (this.#timer || this.#closed) return;
    // Catch up to now so the first drain delivers only what is new for live subscribers.
    this.#lastSeen = Math.max(this.#lastSeen, this.store.lastEventId());
    if (this.watchDir) {
      try {
        this.#watcher = watch(this.watchDir, () => this.kick());
        this.#watcher.on("error", () => undefined);
      } catch {
        this.#watcher = undefined;
      }
    }
    this.#timer = setInterval(() => this.kick(), WATCH_FALLBACK_MS);
    this.#timer.unref();
  }

  #stop(): void {
    if (this.#pending) clearTimeout(this.#pending);
    this.#pending = undefined;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  close(): void {
    this.#closed = true;
    this.#subs.clear();
    this.#stop();
  }
}
