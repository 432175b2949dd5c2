import { describe, expect, it } from "vitest";
import { truncationMarker } from "../core/index.js";
import { HeadTailCapture, headCut, tailCut } from "./capture.js";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);

function feed(cap: number, chunks: readonly string[]): HeadTailCapture {
  const c = new HeadTailCapture(cap);
  for (const ch of chunks) c.push(bytes(ch));
  return c;
}

describe("HeadTailCapture", () => {
  it("keeps everything up to the cap, exactly", () => {
    const s = feed(10, ["01234", "56789"]).snapshot();
    expect(s).toEqual({ text: "0123456789", totalBytes: 10, omittedBytes: 0, truncated: false });
  });

  it("drops the middle one byte past the cap and says so", () => {
    const s = feed(10, ["0123456789X"]).snapshot();
    expect(s.truncated).toBe(true);
    expect(s.omittedBytes).toBe(1);
    expect(s.totalBytes).toBe(11);
    expect(s.text).toBe(`01234${truncationMarker(1)}6789X`);
  });

  it("keeps a rolling tail across many small chunks", () => {
    const chunks = Array.from({ length: 5000 }, (_, i) => String(i % 10));
    const s = feed(8, chunks).snapshot();
    expect(s.text).toBe(`0123${truncationMarker(4992)}6789`);
    expect(s.totalBytes).toBe(5000);
  });

  it("replaces the tail when one chunk is larger than it", () => {
    const s = feed(6, ["ab", "cdefghijklmnop", "qr"]).snapshot();
    expect(s.text).toBe(`abc${truncationMarker(12)}pqr`);
  });

  it("counts exactly with an odd cap (head gets the smaller half)", () => {
    const s = feed(5, ["abcdefgh"]).snapshot();
    expect(s.text).toBe(`ab${truncationMarker(3)}fgh`);
  });

  it("keeps nothing with cap 0 but counts every byte", () => {
    const c = feed(0, ["abc", "de"]);
    expect(c.truncated).toBe(true);
    expect(c.snapshot()).toEqual({
      text: truncationMarker(5),
      totalBytes: 5,
      omittedBytes: 5,
      truncated: true,
    });
    expect(new HeadTailCapture(0).snapshot().truncated).toBe(false);
  });

  it("never splits a UTF-8 character at either cut", () => {
    // "€" is 3 bytes: with a cap of 6 (3 + 3) both cuts fall inside one.
    const s = feed(6, ["a€bcd€z"]).snapshot();
    expect(s.text).toBe(`a${truncationMarker(9)}z`);
    expect(s.totalBytes).toBe(11);
    expect(s.omittedBytes).toBe(9);
  });

  it("decodes multi-byte characters split across chunks", () => {
    const c = new HeadTailCapture(100);
    const e = bytes("é");
    c.push(e.subarray(0, 1));
    c.push(e.subarray(1));
    expect(c.snapshot().text).toBe("é");
  });

  it("is safe on invalid UTF-8", () => {
    const c = new HeadTailCapture(100);
    c.push(new Uint8Array([0xff, 0xfe, 0x41]));
    expect(c.snapshot()).toMatchObject({ text: "\uFFFD\uFFFDA", totalBytes: 3 });
  });
});

describe("UTF-8 cut points", () => {
  it("headCut backs off an incomplete sequence only", () => {
    expect(headCut(bytes("ab"))).toBe(2);
    expect(headCut(bytes("aé"))).toBe(3);
    expect(headCut(bytes("aé").subarray(0, 2))).toBe(1);
    expect(headCut(bytes("a€").subarray(0, 3))).toBe(1);
    expect(headCut(new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80]))).toBe(5);
  });

  it("tailCut skips leading continuation bytes, at most 3", () => {
    expect(tailCut(bytes("ab"))).toBe(0);
    expect(tailCut(bytes("€a").subarray(1))).toBe(2);
    expect(tailCut(new Uint8Array([0x80, 0x80, 0x80, 0x80]))).toBe(0);
  });
});
