/** Time and ids come in through these interfaces so pure code never reads the system clock. */

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(ms: number): void {
    this.t = ms;
  }
}

let lastMs = Number.NaN;
let lastIso = "";

/**
 * ISO-8601 UTC text of a time in milliseconds. The last answer is kept: a write transaction stamps
 * several rows within the same millisecond, and formatting the date is the costly part.
 */
export function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** `YYYYMMDDHHMMSS` in UTC: the timestamp part of plan ids. */
export function compactStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, "").slice(0, 14);
}
