import { describe, expect, it } from "vitest";
import { normaliseDodOutput } from "./dod-normalise.js";

const same = (a: string, b: string, paths: string[] = []) =>
  expect(normaliseDodOutput(a, paths)).toBe(normaliseDodOutput(b, paths));
const differ = (a: string, b: string) => expect(normaliseDodOutput(a)).not.toBe(normaliseDodOutput(b));

describe("normaliseDodOutput", () => {
  it("durations", () => {
    same("1 failed, 2 passed in 0.12s", "1 failed, 2 passed in 0.57s");
    same("=== 1 failed in 65.12s (0:01:05) ===", "=== 1 failed in 61.00s (0:01:01) ===");
    same("✓ adds (12 ms)", "✓ adds (3 ms)");
    same("finished in 0.003s", "finished in 0.15s");
    same("Duration  257ms (transform 19ms, setup 0ms)", "Duration  244ms (transform 12ms, setup 1ms)");
    same("# duration_ms 130.283565\n  duration_ms: 0.189231", "# duration_ms 99.1\n  duration_ms: 0.2");
    same("ok  \texample.com/calc\t0.002s", "ok  \texample.com/calc\t0.010s");
  });
  it("hex addresses", () => same("<Foo object at 0x7f3a2c1d9e50>", "<Foo object at 0x7f11aa00bb10>"));
  it("temp paths, the worktree and given folders", () => {
    same(
      "E   AssertionError: /tmp/pytest-of-root/pytest-12/test_a0/out.txt missing",
      "E   AssertionError: /tmp/pytest-of-root/pytest-13/test_a0/out.txt missing",
    );
    same("open('/tmp/tmpab12cd/x')", "open('/tmp/tmpzz99qq/x')");
    same("/private/var/folders/ab/cd/T/xyz/f", "/private/var/folders/ef/gh/T/uvw/f");
    same("/work/ratchet-runner-1-a/calc.py:3: error", "/work/ratchet-runner-2-b/calc.py:3: error", [
      "/work/ratchet-runner-1-a",
      "/work/ratchet-runner-2-b",
    ]);
  });
  it("pids, clock times, ports, seeds", () => {
    same("worker pid 12345 died", "worker pid 999 died");
    same("Start at  09:23:56", "Start at  10:01:02");
    same("2026-12-01T09:23:02.123Z boom", "2026-12-02 10:00:00,5 boom");
    same("listening on 127.0.0.1:54321", "listening on 127.0.0.1:40000");
    same("Using --randomly-seed=1234", "Using --randomly-seed=98");
  });
  it("keeps what a change can change: counts, assertion values, names, line numbers", () => {
    differ("1 failed, 2 passed in 0.1s", "2 failed, 1 passed in 0.1s");
    differ("E   assert 1 == 13", "E   assert 2 == 13");
    differ("FAILED test_calc.py::test_a", "FAILED test_calc.py::test_b");
    differ("calc.py:3: AssertionError", "calc.py:4: AssertionError");
    differ("Tests  1 failed | 4 passed (5)", "Tests  2 failed | 3 passed (5)");
  });
});
