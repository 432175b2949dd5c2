import { describe, expect, it } from "vitest";
import { headTail, truncationMarker, utf8Length } from "./truncate.js";

const enc = new TextEncoder();

describe("truncationMarker", () => {
  it("is one line with the byte count", () => {
    expect(truncationMarker(42)).toBe("\n--- TRUNCATED 42 BYTES ---\n");
  });
});

describe("headTail: ASCII exactness", () => {
  const rows = [
    { name: "empty", input: "", head: 4, tail: 4, text: "", truncated: false, omitted: 0 },
    {
      name: "under the limit",
      input: "abcdefg",
      head: 4,
      tail: 4,
      text: "abcdefg",
      truncated: false,
      omitted: 0,
    },
    {
      name: "at the limit",
      input: "abcdefgh",
      head: 4,
      tail: 4,
      text: "abcdefgh",
      truncated: false,
      omitted: 0,
    },
    {
      name: "one byte over",
      input: "abcdefghi",
      head: 4,
      tail: 4,
      text: `abcd${truncationMarker(1)}fghi`,
      truncated: true,
      omitted: 1,
    },
    {
      name: "far over",
      input: "0123456789".repeat(10),
      head: 3,
      tail: 2,
      text: `012${truncationMarker(95)}89`,
      truncated: true,
      omitted: 95,
    },
    {
      name: "head only",
      input: "abcdef",
      head: 2,
      tail: 0,
      text: `ab${truncationMarker(4)}`,
      truncated: true,
      omitted: 4,
    },
    {
      name: "tail only",
      input: "abcdef",
      head: 0,
      tail: 2,
      text: `${truncationMarker(4)}ef`,
      truncated: true,
      omitted: 4,
    },
  ];

  it.each(rows)("$name", ({ input, head, tail, text, truncated, omitted }) => {
    const r = headTail(input, head, tail);
    expect(r).toEqual({ text, truncated, omittedBytes: omitted, totalBytes: input.length });
  });

  it("accepts bytes as well as strings", () => {
    expect(headTail(enc.encode("abcdefghi"), 4, 4)).toEqual(headTail("abcdefghi", 4, 4));
    expect(headTail(enc.encode("abc"), 4, 4).text).toBe("abc");
  });

  it("at 8 KiB + 8 KiB: 16384 bytes kept whole, 16385 cut once", () => {
    const at = "x".repeat(16384);
    expect(headTail(at, 8192, 8192)).toEqual({
      text: at,
      truncated: false,
      omittedBytes: 0,
      totalBytes: 16384,
    });
    const over = `${"h".repeat(8192)}M${"t".repeat(8192)}`;
    const r = headTail(over, 8192, 8192);
    expect(r.truncated).toBe(true);
    expect(r.omittedBytes).toBe(1);
    expect(r.text).toBe(`${"h".repeat(8192)}\n--- TRUNCATED 1 BYTES ---\n${"t".repeat(8192)}`);
    expect(r.text.match(/--- TRUNCATED/g)).toHaveLength(1);
  });
});

describe("headTail: UTF-8", () => {
  // "é" is 2 bytes, "€" 3 bytes, "😀" 4 bytes.
  const rows = [
    { name: "2-byte char across the head cut", input: `a${"é".repeat(10)}`, head: 2, tail: 3 },
    { name: "3-byte char across the head cut", input: "€".repeat(10), head: 4, tail: 4 },
    { name: "4-byte char across both cuts", input: "😀".repeat(10), head: 6, tail: 6 },
    { name: "mixed text", input: "aé€😀".repeat(20), head: 7, tail: 9 },
  ];

  it.each(rows)("$name: never splits a character and accounts for every byte", ({ input, head, tail }) => {
    const total = utf8Length(input);
    const r = headTail(input, head, tail);
    expect(r.truncated).toBe(true);
    expect(r.totalBytes).toBe(total);
    expect(r.text).not.toContain("\uFFFD");
    const marker = truncationMarker(r.omittedBytes);
    const at = r.text.indexOf(marker);
    expect(at).toBeGreaterThanOrEqual(0);
    const keptHead = r.text.slice(0, at);
    const keptTail = r.text.slice(at + marker.length);
    // The kept parts are exactly the start and the end of the input.
    expect(input.startsWith(keptHead)).toBe(true);
    expect(input.endsWith(keptTail)).toBe(true);
    // The head never exceeds its budget; the cut bytes plus the kept bytes are the whole input.
    expect(utf8Length(keptHead)).toBeLessThanOrEqual(head);
    expect(utf8Length(keptHead) + r.omittedBytes + utf8Length(keptTail)).toBe(total);
  });

  it("counts bytes, not characters", () => {
    // 8 chars but 16 bytes: over a 4+4 byte budget.
    const r = headTail("éééééééé", 4, 4);
    expect(r).toEqual({
      text: `éé${truncationMarker(8)}éé`,
      truncated: true,
      omittedBytes: 8,
      totalBytes: 16,
    });
  });
});

describe("utf8Length", () => {
  it.each([
    ["", 0],
    ["abc", 3],
    ["é", 2],
    ["€", 3],
    ["😀", 4],
  ])("%j → %i", (s, n) => {
    expect(utf8Length(s)).toBe(n);
  });
});
