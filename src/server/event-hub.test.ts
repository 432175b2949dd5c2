/** The shared watcher: one read of the events table per wake-up, whatever the number of clients. */
import { describe, expect, it } from "vitest";
import type { EventQuery, EventRow } from "../store/index.js";
import { EventHub, matches } from "./event-hub.js";

/** An in-memory event log that counts the reads made of it. */
class CountingLog {
  rows: EventRow[] = [];
  reads = 0;
  add(type: string, planId: string | null = "p1") {
    const id = this.rows.length + 1;
    this.rows.push({
      id,
      at: "t",
      entity_kind: "step",
      entity_id: `s${id}`,
      plan_id: planId,
      type,
      payload: "{}",
    });
  }
  listEvents(q: EventQuery): EventRow[] {
    this.reads++;
    return this.rows.filter((r) => r.id > (q.since ?? 0)).slice(0, q.limit ?? 1000);
  }
  lastEventId(): number {
    return this.rows.length;
  }
}

describe("EventHub", () => {
  it("hands each new event to every subscriber with one read per drain", () => {
    const log = new CountingLog();
    log.add("before");
    const hub = new EventHub(log);
    const got: number[][] = [];
    const subs = Array.from({ length: 10 }, (_, i) => {
      got[i] = [];
      return hub.subscribe((rows) => got[i]!.push(...rows.map((r) => r.id)));
    });
    log.add("a");
    log.add("b");
    log.reads = 0;
    hub.drain();
    expect(log.reads).toBe(1);
    for (const g of got) expect(g).toEqual([2, 3]);
    hub.drain();
    expect(got[0]).toEqual([2, 3]);
    for (const off of subs) off();
    hub.close();
  });

  it("does nothing without subscribers, and kick coalesces a burst into one drain", async () => {
    const log = new CountingLog();
    const hub = new EventHub(log);
    log.reads = 0;
    hub.kick();
    await new Promise((r) => setTimeout(r, 30));
    expect(log.reads).toBe(0);
    const seen: number[] = [];
    const off = hub.subscribe((rows) => seen.push(...rows.map((r) => r.id)));
    log.reads = 0;
    for (let i = 0; i < 50; i++) {
      log.add(`e${i}`);
      hub.kick();
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toHaveLength(50);
    expect(log.reads).toBeLessThanOrEqual(2);
    off();
    hub.close();
  });

  it("filters by plan and entity", () => {
    const e: EventRow = {
      id: 1,
      at: "t",
      entity_kind: "run",
      entity_id: "r1",
      plan_id: "p",
      type: "x",
      payload: "{}",
    };
    expect(matches(e, {})).toBe(true);
    expect(matches(e, { planId: "p", entityKind: "run", entityId: "r1" })).toBe(true);
    expect(matches(e, { planId: "q" })).toBe(false);
    expect(matches(e, { entityKind: "step" })).toBe(false);
  });
});
