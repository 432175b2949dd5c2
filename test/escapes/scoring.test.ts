/**
 * Attack class: scoring fooled by numbers in assertion messages (issue 13, item 3).
 *
 * The round score came from every `N failed` / `N passed` anywhere in the DoD output, so
 * `assert 0 == 13000` followed by pytest's next `FAILED …` line counted as 13000 failures: a
 * better round scored 0 and was thrown away (restored to a worse one). Now only the test runner's
 * own summary line counts; without one, a failing round scores 0 on pass/fail alone.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseTaskSpec, runTask, scoreRound } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { makePythonRepo, pythonSpec, writeCalcTurns } from "../helpers/python-repo.js";

vi.setConfig({ testTimeout: 120_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fixture = (name: string) =>
  readFileSync(join(import.meta.dirname, "../fixtures/dod-summary", name), "utf8");

// The first failing test's message ends in a big number; pytest's short summary puts the next
// `FAILED` line right after it.
const TESTS = [
  "from calc import add",
  "def test_big():\n    assert add(6000, 7000) == 13000",
  "def test_one():\n    assert add(1, 1) == 2",
  "def test_two():\n    assert add(2, 2) == 4",
  "def test_three():\n    assert add(3, 3) == 6",
  "",
].join("\n\n");

describe("escape: scoring reads numbers out of assertion messages", () => {
  it("real pytest/unittest/vitest outputs score by their summary line only", () => {
    // 3 passed, 2 failed; messages `assert 1 == 13`, `assert 0 == 20`, a printed fake summary
    expect(scoreRound(false, fixture("pytest-q-numbers.txt"))).toBeCloseTo(0.49 * 0.6, 3);
    expect(scoreRound(false, fixture("pytest-rA-captured.txt"))).toBeCloseTo(0.49 * 0.6, 3);
    // unittest: an assertion message "3 failed, 9 passed", an error "Ran 99 tests"; 3 of 5 passed
    expect(scoreRound(false, fixture("unittest-failed.txt"))).toBeCloseTo(0.49 * 0.6, 3);
    // vitest: an error message holding "Tests  9 passed (9)"; 2 of 4 passed
    expect(scoreRound(false, fixture("vitest-failed.txt"))).toBeCloseTo(0.49 * 0.5, 3);
  });

  it("without a recognised summary line a failing round scores 0 (pass/fail only), whatever numbers it holds", () => {
    expect(scoreRound(false, "AssertionError: expected 99 passed, got 1 failed\nFAILED")).toBe(0);
    expect(scoreRound(false, "E   assert 1 == 13\nFAILED test_x.py::test_a")).toBe(0);
    expect(scoreRound(true, "E   assert 1 == 13\nFAILED")).toBe(1);
  });

  it("a better round is kept, not scored 0 and thrown away (real pytest DoD, scripted model)", async () => {
    const r = makePythonRepo(TESTS);
    cleanups.push(() => r.remove());
    const model = await startScriptedModel({
      script: {
        turns: [
          // round 1: only test_big passes (1 of 4); failures `assert 0 == 2/4/6`
          ...writeCalcTurns("def add(a, b):\n    return a + b if a > 100 else 0\n", "big numbers"),
          // round 2: better (2 of 4); failures `assert 0 == 13000` then `FAILED …`, `assert 0 == 6`
          ...writeCalcTurns("def add(a, b):\n    return a + b if a < 3 else 0\n", "small numbers"),
        ],
      },
    });
    cleanups.push(() => model.close());
    const spec = parseTaskSpec(pythonSpec(r));
    const result = await runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
    const rounds = readFileSync(join(r.out, "fix-add.rounds.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { round: number; score: number; kept: boolean });
    expect(result.stop_reason).toBe("max_rounds");
    expect(rounds.map((x) => x.score)).toEqual([0.123, 0.245]);
    expect(rounds.map((x) => x.kept)).toEqual([true, true]);
    expect(result.best_round).toBe(2);
    expect(result.best_score).toBe(0.245);
    expect(readFileSync(join(r.out, "fix-add.patch"), "utf8")).toContain("+    return a + b if a < 3 else 0");
  });
});
