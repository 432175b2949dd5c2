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
let lastSecond = Number.NaN;
let lastSecondPrefix = "";
const MILLIS = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, "0")}Z`);

/**
 * ISO-8601 UTC text of a time in milliseconds, exactly as `Date#toISOString` writes it. The last
 * answer is kept (a write transaction stamps several rows within the same millisecond), and so is
 * the text up to the last second's dot: a later time in the same second only swaps its
 * milliseconds. Formatting a date is the costly part of stamping a row.
 */
export function iso(ms: number): string {
  if (ms === lastMs) return lastIso;
  if (Number.isSafeInteger(ms)) {
    // Exact for every safe integer (a float division is not, near the largest dates).
    const milli = ((ms % 1000) + 1000) % 1000;
    const second = (ms - milli) / 1000;
    if (second !== lastSecond) {
      lastSecondPrefix = new Date(second * 1000).toISOString().slice(0, -4);
      lastSecond = second;
    }
    lastIso = lastSecondPrefix + MILLIS[milli];
  } else {
    lastIso = new Date(ms).toISOString();
  }
  lastMs = ms;
  return lastIso;
}

/** `YYYYMMDDHHMMSS` in UTC: the timestamp part of plan ids. */
export function compactStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:T]/g, "").slice(0, 14);
}
