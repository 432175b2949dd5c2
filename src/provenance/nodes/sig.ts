/** The one hash of the node source: first 16 hex of sha1 over a normalised text. */
import { createHash } from "node:crypto";

export function sig16(text: string): string {
  return createHash("sha1").update(text).digest("hex").slice(0, 16);
}

/** Offsets where each line starts, for turning an offset into a 1-based line. */
export function lineStarts(source: string): number[] {
  const starts = [0];
  for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/** The 1-based line of `offset` (binary search over {@link lineStarts}). */
export function lineOf(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] as number) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}
