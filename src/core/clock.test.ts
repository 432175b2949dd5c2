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

  it("still refuses a time that is not a number, every time", () => {
    expect(() => iso(Number.NaN)).toThrow(RangeError);
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });
});
