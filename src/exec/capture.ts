/**
 * Bounded output capture (pure: no I/O). A {@link HeadTailCapture} keeps the first half of its cap
 * and a rolling last half; bytes in between are counted, not kept. Memory stays at most the cap
 * plus one chunk, and nothing is allocated up front.
 */

import { truncationMarker } from "../core/index.js";

const decoder = new TextDecoder("utf-8", { fatal: false });

function concat(chunks: readonly Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]) return chunks[0];
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Where the head must end so it does not stop inside a UTF-8 sequence (looks back at most 3 bytes). */
export function headCut(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i >= 0 && i >= bytes.length - 4; i--) {
    const b = bytes[i] ?? 0;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return bytes.length - i >= need ? bytes.length : i;
  }
  return bytes.length; // not UTF-8 here: cut where the bytes end
}

/** Where the tail must start so it does not begin inside a UTF-8 sequence (skips at most 3 bytes). */
export function tailCut(bytes: Uint8Array): number {
  let i = 0;
  while (i < 3 && i < bytes.length && ((bytes[i] ?? 0) & 0xc0) === 0x80) i++;
  return i < bytes.length && ((bytes[i] ?? 0) & 0xc0) === 0x80 ? 0 : i;
}

/** What a capture holds when the stream is done. */
export interface CaptureSnapshot {
  /** The kept text: all of it, or head + truncation marker + tail. Invalid UTF-8 becomes U+FFFD. */
  text: string;
  /** Every byte pushed, kept or not. */
  totalBytes: number;
  /** Bytes missing from `text` (the number in the marker); 0 exactly when nothing was dropped. */
  omittedBytes: number;
  /** True exactly when bytes were dropped (`totalBytes` exceeded the cap). */
  truncated: boolean;
}

/**
 * Keeps at most `maxBytes` of a byte stream: the first `floor(maxBytes / 2)` bytes and a rolling
 * window of the last `maxBytes - floor(maxBytes / 2)` bytes.
 */
export class HeadTailCapture {
  readonly #headCap: number;
  readonly #tailCap: number;
  readonly #head: Uint8Array[] = [];
  #headLen = 0;
  /** Rolling tail as a queue of chunks; entries before `#tailFirst` are spent. */
  #tail: Uint8Array[] = [];
  #tailFirst = 0;
  #tailLen = 0;
  #total = 0;

  /** @param maxBytes the cap, a non-negative integer. */
  constructor(maxBytes: number) {
    this.#headCap = Math.floor(maxBytes / 2);
    this.#tailCap = maxBytes - this.#headCap;
  }

  /** Bytes pushed so far. */
  get totalBytes(): number {
    return this.#total;
  }

  /** True once bytes have been dropped. */
  get truncated(): boolean {
    return this.#total > this.#headLen + this.#tailLen;
  }

  /** Appends a chunk. The chunk is referenced, not copied: do not mutate it afterwards. */
  push(chunk: Uint8Array): void {
    this.#total += chunk.length;
    let rest = chunk;
    if (this.#headLen < this.#headCap) {
      const take = Math.min(this.#headCap - this.#headLen, rest.length);
      this.#head.push(take === rest.length ? rest : rest.subarray(0, take));
      this.#headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.#tailCap === 0) return;
    if (rest.length >= this.#tailCap) {
      this.#tail = [rest.subarray(rest.length - this.#tailCap)];
      this.#tailFirst = 0;
      this.#tailLen = this.#tailCap;
      return;
    }
    this.#tail.push(rest);
    this.#tailLen += rest.length;
    while (this.#tailLen > this.#tailCap) {
      const first = this.#tail[this.#tailFirst]!;
      const excess = this.#tailLen - this.#tailCap;
      if (first.length <= excess) {
        this.#tailFirst++;
        this.#tailLen -= first.length;
      } else {
        this.#tail[this.#tailFirst] = first.subarray(excess);
        this.#tailLen -= excess;
      }
    }
    if (this.#tailFirst > 1024 && this.#tailFirst * 2 > this.#tail.length) {
      this.#tail = this.#tail.slice(this.#tailFirst);
      this.#tailFirst = 0;
    }
  }

  /** Decodes what is kept. Cheap to call once at the end; not meant for every chunk. */
  snapshot(): CaptureSnapshot {
    const head = concat(this.#head, this.#headLen);
    const tail = concat(this.#tail.slice(this.#tailFirst), this.#tailLen);
    if (!this.truncated) {
      const all = concat([head, tail], head.length + tail.length);
      return { text: decoder.decode(all), totalBytes: this.#total, omittedBytes: 0, truncated: false };
    }
    const headEnd = headCut(head);
    const tailStart = tailCut(tail);
    const omitted = this.#total - headEnd - (tail.length - tailStart);
    const text =
      decoder.decode(head.subarray(0, headEnd)) +
      truncationMarker(omitted) +
      decoder.decode(tail.subarray(tailStart));
    return { text, totalBytes: this.#total, omittedBytes: omitted, truncated: true };
  }
}
