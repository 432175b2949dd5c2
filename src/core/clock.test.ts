import { describe, expect, it } from "vitest";
import { iso } from "./clock.js";

describe("iso", () => {
  it("formats each time as Date#toISOString does, also when called again with the same or another time", () => {
    const a = Date.UTC(2026, 0, 1, 12, 0, 0, 5);
    expect(iso(a)).toBe("2026-01-01T12:00:00.005Z");
    expect(iso(a)).toBe("2026-01-01T12:00:00.005Z");
    expect(iso(a + 1)).toBe("2026-01-01T12:00:00.006Z");
    expect(iso(a)).toBe("2026-01-01T12:00:00.005Z");
    expect(iso(0)).toBe("1970-01-01T00:00:00.000Z");
  });

  it("matches Date#toISOString across seconds, days, years, negative and fractional times", () => {
    const times: number[] = [];
    const base = Date.UTC(2026, 11, 31, 23, 59, 58, 990);
    for (let i = 0; i < 3_000; i += 7) times.push(base + i, base - i);
    times.push(-1, -999, -1000, -1001, 1.5, -1.5, 999.999, 253402300799999, 253402300800000, -62198755200000);
    times.push(8.64e15, -8.64e15, 8639999999999999, -8639999999999999, 1000, 999, 0);
    for (const t of times) expect(iso(t), String(t)).toBe(new Date(t).toISOString());
    // Back and forth between two seconds, the kept prefix never leaks into the other second.
    for (const t of [base, base + 20, base, base + 1020, base + 10])
      expect(iso(t)).toBe(new Date(t).toISOString());
  });

  it("still refuses a time that is not a number, every time", () => {
    expect(() => iso(Number.NaN)).toThrow(RangeError);
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });
});
