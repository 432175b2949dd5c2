import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseDodSummary, type TestSummary } from "./dod-summary.js";

const FIXTURES = join(import.meta.dirname, "../../test/fixtures/dod-summary");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");
const s = (runner: TestSummary["runner"], passed: number, failed: number, errors = 0, skipped = 0) => ({
  runner,
  passed,
  failed,
  errors,
  skipped,
});

describe("parseDodSummary on real runner outputs (numbers inside assertions ignored)", () => {
  it.each([
    // generated on this machine (test/fixtures/dod-summary/README.md)
    ["pytest-full.txt", s("pytest", 2, 1, 1, 2)],
    ["pytest-q.txt", s("pytest", 2, 1, 1, 2)],
    ["pytest-q-numbers.txt", s("pytest", 3, 2)],
    ["pytest-rA-captured.txt", s("pytest", 3, 2)],
    ["pytest-q-pass.txt", s("pytest", 2, 0)],
    ["pytest-one-failed.txt", s("pytest", 0, 1)],
    ["pytest-collect-error.txt", s("pytest", 0, 0, 1)],
    ["unittest-failed.txt", s("unittest", 3, 1, 1)],
    ["unittest-ok.txt", s("unittest", 1, 0, 0, 1)],
    ["vitest-failed.txt", s("vitest", 2, 2, 0, 1)],
    ["vitest-ok.txt", s("vitest", 1, 0)],
    ["cargo-failed.txt", s("cargo", 2, 1, 0, 1)],
    ["node-test-tap.txt", s("node-test", 2, 1)],
    ["node-test-spec.txt", s("node-test", 2, 1)],
    // verbatim-shaped samples (runner not installed here)
    ["jest-sample.txt", s("jest", 2, 1, 0, 1)],
    ["mocha-sample.txt", s("mocha", 2, 1, 0, 1)],
    ["go-sample.txt", s("go", 1, 1)],
    ["go-verbose-sample.txt", s("go", 3, 1)],
    ["go-ok-sample.txt", s("go", 2, 0)],
  ])("%s", (name, expected) => {
    expect(parseDodSummary(fixture(name))).toEqual(expected);
  });
});

describe("parseDodSummary on text that is not a summary line", () => {
  it("the original bug: a number in an assertion before a FAILED line is not a count", () => {
    expect(
      parseDodSummary("E       assert 1 == 13\nFAILED test_x.py::test_a - assert 1 == 13\n"),
    ).toBeUndefined();
  });
  it.each([
    ["AssertionError: 3 failed, 9 passed"],
    ["Error: expected 5 passed but got 2 failed"],
    ["FAILED (failures=2)"], // a unittest verdict without its `Ran N tests` line
    ["Ran 5 tests in 0.01s\nFAILED (failures=2)"], // the blank line between them is missing
    ["test result: 3 passed; 1 failed"],
    ["    Tests  4 passed (4)x"],
    ["2 passed, 3 apples"],
    ["nothing at all"],
    [""],
  ])("%j", (text) => expect(parseDodSummary(text)).toBeUndefined());

  it("a plain counts line (hand-written test scripts) is a summary", () => {
    expect(parseDodSummary("checking…\n1 passed, 1 failed\n")).toEqual(s("counts", 1, 1));
  });
  it("the line printed last wins: a fake summary in captured output before the real one loses", () => {
    const out =
      "=== 40 passed in 0.01s ===\nTests:       9 passed, 9 total\n=== 1 failed, 1 passed in 0.02s ===\n";
    expect(parseDodSummary(out)).toEqual(s("pytest", 1, 1));
  });
  it("colour codes and CRLF do not hide a summary", () => {
    expect(
      parseDodSummary("\u001b[31m\u001b[1m1 failed\u001b[0m, \u001b[32m2 passed\u001b[0m in 0.03s\r\n"),
    ).toEqual(s("pytest", 2, 1));
  });
  it("pytest long runs and no tests", () => {
    expect(parseDodSummary("===== 3 passed, 1 warning in 65.12s (0:01:05) =====")).toEqual(s("pytest", 3, 0));
    expect(parseDodSummary("============ no tests ran in 0.01s ============")).toEqual(s("pytest", 0, 0));
  });
  it("pytest plugin words are ignored, the known ones count", () => {
    expect(parseDodSummary("==== 1 failed, 4 passed, 3 subtests passed, 1 rerun in 0.30s ====")).toEqual(
      s("pytest", 4, 1),
    );
    expect(parseDodSummary("==== 3 subtests passed in 0.30s ====")).toBeUndefined();
  });
  it("a later line of the right shape but unknown words does not hide an earlier summary", () => {
    expect(parseDodSummary("2 passed, 1 failed\n3 apples, 4 pears\n")).toEqual(s("counts", 2, 1));
  });
  it("cargo sums one result line per test binary", () => {
    const line = (p: number, f: number) =>
      `test result: ${f ? "FAILED" : "ok"}. ${p} passed; ${f} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s`;
    expect(parseDodSummary(`${line(3, 1)}\n\n${line(2, 0)}\n`)).toEqual(s("cargo", 5, 1));
  });
  it("unittest unexpected successes and expected failures", () => {
    const out =
      "Ran 6 tests in 0.002s\n\nFAILED (failures=1, skipped=1, expected failures=1, unexpected successes=1)\n";
    expect(parseDodSummary(out)).toEqual(s("unittest", 2, 2, 0, 2));
  });
});
