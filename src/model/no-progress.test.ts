import { describe, expect, it } from "vitest";
import { canonicalJson, detectNoProgress, type RoundFingerprint } from "./no-progress.js";

const call = (name: string, args: unknown) => ({ name, args });
const round = (...calls: { name: string; args: unknown }[]): RoundFingerprint => ({ calls });

describe("detectNoProgress", () => {
  it("is true when the same calls with the same arguments repeat three rounds in a row", () => {
    const r = round(call("read_file", { path: "a.py" }), call("run_command", { cmd: "pytest" }));
    expect(detectNoProgress([r, r])).toBe(false);
    expect(detectNoProgress([r, r, r])).toBe(true);
    expect(detectNoProgress([round(call("x", {})), r, r, r])).toBe(true);
  });

  it("ignores argument key order, but not values, order of calls or names", () => {
    const a = round(call("edit", { path: "a", line: 1 }));
    const b = round(call("edit", { line: 1, path: "a" }));
    expect(detectNoProgress([a, b, a])).toBe(true);
    expect(detectNoProgress([a, a, round(call("edit", { path: "a", line: 2 }))])).toBe(false);
    expect(detectNoProgress([a, a, round(call("write", { path: "a", line: 1 }))])).toBe(false);
    const two = round(call("a", {}), call("b", {}));
    const swapped = round(call("b", {}), call("a", {}));
    expect(detectNoProgress([two, two, swapped])).toBe(false);
  });

  it("counts the caller's progress key: a changing key is progress", () => {
    const calls = [call("run_command", { cmd: "pytest" })];
    expect(detectNoProgress([1, 2, 3].map((i) => ({ calls, progress: `passed ${i}` })))).toBe(false);
    expect(detectNoProgress([1, 2, 3].map(() => ({ calls, progress: "passed 1" })))).toBe(true);
  });

  it("never fires on rounds without tool calls, nor with fewer rounds than the window", () => {
    expect(detectNoProgress([round(), round(), round()])).toBe(false);
    expect(detectNoProgress([])).toBe(false);
    const r = round(call("a", {}));
    expect(detectNoProgress([r, r], 2)).toBe(true);
    expect(detectNoProgress([r, r, r, r], 5)).toBe(false);
  });

  it("canonicalJson sorts keys at every level and drops undefined fields", () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined, e: null })).toBe(
      '{"b":[{"c":2,"d":1}],"e":null}',
    );
  });
});
