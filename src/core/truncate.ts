/**
 * Head/tail truncation of text by UTF-8 bytes, in one stage.
 *
 * `headTail("…", 8192, 8192)` keeps the first 8 KiB and the last 8 KiB with a marker line between
 * them that says how many bytes were cut. `truncated` is true exactly when bytes were cut.
 */

export interface Truncated {
  text: string;
  truncated: boolean;
  /** Bytes removed from the middle (0 when not truncated). */
  omittedBytes: number;
  /** Size of the input in UTF-8 bytes. */
  totalBytes: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/** The marker placed where bytes were cut. */
export function truncationMarker(omittedBytes: number): string {
  return `\n--- TRUNCATED ${omittedBytes} BYTES ---\n`;
}

/** Moves `i` back to the start of a UTF-8 character (never splits a code point). */
function charStart(bytes: Uint8Array, i: number): number {
  let j = i;
  while (j > 0 && j < bytes.length && ((bytes[j] ?? 0) & 0xc0) === 0x80) j--;
  return j;
}

/** Keeps `headBytes` from the start and `tailBytes` from the end of `input`. */
export function headTail(input: string | Uint8Array, headBytes: number, tailBytes: number): Truncated {
  const bytes = typeof input === "string" ? encoder.encode(input) : input;
  const total = bytes.length;
  if (total <= headBytes + tailBytes) {
    return {
      text: typeof input === "string" ? input : decoder.decode(bytes),
      truncated: false,
      omittedBytes: 0,
      totalBytes: total,
    };
  }
  const headEnd = charStart(bytes, headBytes);
  const tailStart = charStart(bytes, total - tailBytes);
  const omitted = tailStart - headEnd;
  const text =
    decoder.decode(bytes.subarray(0, headEnd)) +
    truncationMarker(omitted) +
    decoder.decode(bytes.subarray(tailStart));
  return { text, truncated: true, omittedBytes: omitted, totalBytes: total };
}

/** Byte length of a string in UTF-8. */
export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}
