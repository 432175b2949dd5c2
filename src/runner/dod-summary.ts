/**
 * The test counts of a DoD output, read ONLY from a test runner's own summary line (pure).
 *
 * A DoD output is mostly text the code under test controls: assertion messages, tracebacks,
 * captured stdout. Numbers in there mean nothing (`assert 1 == 13` followed by a `FAILED` line
 * once scored as "13 failed"). So every parser below accepts only a whole line in the exact shape
 * its runner prints at the end of a run, and when several lines qualify, the one printed LAST wins
 * (runners print their summary after the failure details). No summary line → `undefined`, and the
 * caller scores on pass/fail alone; it never falls back to a number found anywhere else.
 *
 * Recognised (docs/runner.md, "Scoring"): pytest (full and `-q`), unittest, jest, vitest, go test,
 * cargo test, mocha, node's test runner (TAP and spec reporters), and a plain counts line
 * (`3 passed, 1 failed` as a whole line, what a hand-written test script prints).
 */

/** The runner whose summary line was read. Printed in events; never renamed. */
export const SummaryRunner = {
  Pytest: "pytest",
  Unittest: "unittest",
  Jest: "jest",
  Vitest: "vitest",
  GoTest: "go",
  Cargo: "cargo",
  Mocha: "mocha",
  NodeTest: "node-test",
  /** A whole line of counts only: `3 passed, 1 failed`. */
  Counts: "counts",
} as const;
export type SummaryRunner = (typeof SummaryRunner)[keyof typeof SummaryRunner];

/** What a summary line says. `failed` excludes `errors`; skipped-like outcomes are in `skipped`. */
export interface TestSummary {
  runner: SummaryRunner;
  passed: number;
  failed: number;
  /** pytest/unittest errors (setup, collection, an exception that is not an assertion). */
  errors: number;
  /** Skipped, ignored, pending, todo, expected failures. */
  skipped: number;
}

interface Found {
  summary: TestSummary;
  /** Index of the (last) line the summary was read from. */
  at: number;
}

type LineParser = (lines: readonly string[]) => Found | undefined;

const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** Output split into lines without colour codes and carriage returns. */
function linesOf(output: string): string[] {
  return output
    .replace(ANSI, "")
    .split("\n")
    .map((l) => l.replace(/\r/g, "").trimEnd());
}

function summary(runner: SummaryRunner, counts: Partial<Omit<TestSummary, "runner">>): TestSummary {
  return {
    runner,
    passed: counts.passed ?? 0,
    failed: counts.failed ?? 0,
    errors: counts.errors ?? 0,
    skipped: counts.skipped ?? 0,
  };
}

/** The last line `read` accepts, with what it read. */
function lastLine<T>(lines: readonly string[], read: (line: string) => T | undefined) {
  for (let i = lines.length - 1; i >= 0; i--) {
    const value = read(lines[i] as string);
    if (value !== undefined) return { at: i, value };
  }
  return undefined;
}

type Counts = Partial<Record<keyof Omit<TestSummary, "runner">, number>>;

/**
 * `N word` items separated by `sep`. `undefined` when an item is not `N word`, or (unless
 * `ignoreUnknown`) names a word not in `words`, or when no item names a known word.
 */
function countItems(
  text: string,
  sep: RegExp,
  words: Record<string, keyof Counts | null>,
  ignoreUnknown = false,
): Counts | undefined {
  const counts: Counts = {};
  let known = false;
  for (const item of text.split(sep)) {
    const m = item.trim().match(/^(\d+) ([a-z][a-z ]*)$/);
    if (!m) return undefined;
    const word = m[2] as string;
    if (!Object.hasOwn(words, word)) {
      if (ignoreUnknown) continue;
      return undefined;
    }
    known = true;
    const key = words[word];
    if (key) counts[key] = (counts[key] ?? 0) + Number(m[1]);
  }
  return known ? counts : undefined;
}

const PYTEST_WORDS = {
  passed: "passed",
  failed: "failed",
  error: "errors",
  errors: "errors",
  skipped: "skipped",
  xfailed: "skipped",
  xpassed: "passed",
  deselected: null,
  warning: null,
  warnings: null,
  rerun: null,
} as const;

/** `=== 1 failed, 2 passed, 1 error in 0.12s ===` and `-q`'s `1 failed, 2 passed in 0.03s`. */
const pytest: LineParser = (lines) => {
  // Plugins add their own words (`3 subtests passed`, `1 rerun`): ignored, the known ones count.
  const line =
    /^(?:=+ )?(\d+ [a-z]+(?: [a-z]+)?(?:, \d+ [a-z]+(?: [a-z]+)?)*) in [\d.]+s(?: \([\d:]+\))?(?: =+)?$/;
  const hit = lastLine(lines, (l) => {
    const m = l.match(line);
    if (m) return countItems(m[1] as string, /, /, PYTEST_WORDS, true);
    return /^(?:=+ )?no tests ran in [\d.]+s(?: =+)?$/.test(l) ? {} : undefined;
  });
  return hit && { summary: summary("pytest", hit.value), at: hit.at };
};

/** `Ran 5 tests in 0.001s`, a blank line, then `OK`, `OK (skipped=1)` or `FAILED (failures=2, errors=1)`. */
const unittest: LineParser = (lines) => {
  for (let i = lines.length - 1; i >= 0; i--) {
    const verdict = (lines[i] as string).match(/^(OK|FAILED)(?: \(([a-z ]+=\d+(?:, [a-z ]+=\d+)*)\))?$/);
    if (!verdict) continue;
    const ran = (lines[i - 2] ?? "").match(/^Ran (\d+) tests? in [\d.]+s$/);
    if (!ran || (lines[i - 1] ?? "") !== "") continue;
    const n: Record<string, number> = {};
    for (const part of (verdict[2] ?? "").split(", ").filter(Boolean)) {
      const [k, v] = part.split("=");
      n[k as string] = Number(v);
    }
    const failed = (n.failures ?? 0) + (n["unexpected successes"] ?? 0);
    const errors = n.errors ?? 0;
    const skipped = (n.skipped ?? 0) + (n["expected failures"] ?? 0);
    const passed = Math.max(0, Number(ran[1]) - failed - errors - skipped);
    return { summary: summary("unittest", { passed, failed, errors, skipped }), at: i };
  }
  return undefined;
};

const JS_WORDS = {
  passed: "passed",
  failed: "failed",
  skipped: "skipped",
  todo: "skipped",
  pending: "skipped",
  "expected fail": "skipped",
} as const;

/** `Tests:       1 failed, 1 skipped, 4 passed, 6 total`. */
const jest: LineParser = (lines) => {
  const hit = lastLine(lines, (l) => {
    const m = l.match(/^Tests:\s+(.+), \d+ total$/);
    return m ? countItems(m[1] as string, /, /, JS_WORDS) : undefined;
  });
  return hit && { summary: summary("jest", hit.value), at: hit.at };
};

/** `      Tests  2 failed | 2 passed | 1 skipped (5)`. */
const vitest: LineParser = (lines) => {
  const hit = lastLine(lines, (l) => {
    const m = l.match(/^\s*Tests {2}(.+) \(\d+\)$/);
    return m ? countItems(m[1] as string, / \| /, JS_WORDS) : undefined;
  });
  return hit && { summary: summary("vitest", hit.value), at: hit.at };
};

/** Every `test result: FAILED. 2 passed; 1 failed; 1 ignored; …` line (one per test binary), summed. */
const cargo: LineParser = (lines) => {
  const re =
    /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; \d+ filtered out(?:; finished in [\d.]+s)?$/;
  let found: Found | undefined;
  lines.forEach((line, at) => {
    const m = line.match(re);
    if (!m) return;
    const s = found?.summary ?? summary("cargo", {});
    s.passed += Number(m[1]);
    s.failed += Number(m[2]);
    s.skipped += Number(m[3]);
    found = { summary: s, at };
  });
  return found;
};

/**
 * go test: only when a package line closes the run (`ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`,
 * `FAIL\tpkg [build failed]`). Failed = top-level `--- FAIL:` lines (at least one per failed package);
 * passed = top-level `--- PASS:` lines (`-v`), or, without `-v`, one per `ok` package.
 */
const goTest: LineParser = (lines) => {
  let at = -1;
  let okPackages = 0;
  let failedPackages = 0;
  let fails = 0;
  let passes = 0;
  let skips = 0;
  lines.forEach((line, i) => {
    if (/^ok \s*\S+\s+(?:[\d.]+s|\(cached\))(?:\s.*)?$/.test(line)) {
      okPackages++;
      at = i;
    } else if (/^FAIL\s+\S+\s+(?:[\d.]+s|\[[a-z ]+\])$/.test(line)) {
      failedPackages++;
      at = i;
    } else if (/^--- FAIL: \S+ \([\d.]+s\)$/.test(line)) fails++;
    else if (/^--- PASS: \S+ \([\d.]+s\)$/.test(line)) passes++;
    else if (/^--- SKIP: \S+ \([\d.]+s\)$/.test(line)) skips++;
  });
  if (at < 0) return undefined;
  const passed = passes > 0 ? passes : okPackages;
  const failed = Math.max(fails, failedPackages);
  return { summary: summary("go", { passed, failed, skipped: skips }), at };
};

/** mocha's epilogue: `  2 passing (8ms)`, then optionally `  1 pending` and `  1 failing`. */
const mocha: LineParser = (lines) => {
  const hit = lastLine(lines, (l) => l.match(/^\s*(\d+) passing \(\d+(?:ms|s|m)\)$/)?.[1]);
  if (!hit) return undefined;
  const s = summary("mocha", { passed: Number(hit.value) });
  let at = hit.at;
  for (let i = hit.at + 1; i <= hit.at + 2; i++) {
    const m = (lines[i] ?? "").match(/^\s*(\d+) (pending|failing)$/);
    if (!m) break;
    if (m[2] === "failing") s.failed = Number(m[1]);
    else s.skipped = Number(m[1]);
    at = i;
  }
  return { summary: s, at };
};

/** node --test: the TAP (`# pass 2`) or spec (`ℹ pass 2`) totals block after `tests N`. */
const nodeTest: LineParser = (lines) => {
  const start = lastLine(lines, (l) => (/^(?:#|ℹ) tests \d+$/.test(l) ? true : undefined));
  if (!start) return undefined;
  const s = summary("node-test", {});
  let at = start.at;
  for (let i = start.at + 1; i < lines.length; i++) {
    const m = (lines[i] as string).match(
      /^(?:#|ℹ) (suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/,
    );
    if (!m) break;
    const n = Number((lines[i] as string).split(" ").pop());
    if (m[1] === "pass") s.passed = n;
    else if (m[1] === "fail" || m[1] === "cancelled") s.failed += n;
    else if (m[1] === "skipped" || m[1] === "todo") s.skipped += n;
    at = i;
  }
  return { summary: s, at };
};

const COUNT_WORDS = {
  passed: "passed",
  failed: "failed",
  error: "errors",
  errors: "errors",
  skipped: "skipped",
} as const;

/** A line of counts and nothing else: `0 passed, 2 failed` (hand-written test scripts). */
const counts: LineParser = (lines) => {
  const hit = lastLine(lines, (l) => {
    const m = l.match(/^\s*(\d+ [a-z]+(?:, \d+ [a-z]+)*)\s*$/);
    return m ? countItems(m[1] as string, /, /, COUNT_WORDS) : undefined;
  });
  return hit && { summary: summary("counts", hit.value), at: hit.at };
};

const PARSERS: readonly LineParser[] = [
  pytest,
  unittest,
  jest,
  vitest,
  cargo,
  goTest,
  mocha,
  nodeTest,
  counts,
];

/**
 * The test counts of a DoD output, from the summary line its test runner printed last, or
 * `undefined` when no runner summary is recognised (never a number found elsewhere).
 */
export function parseDodSummary(output: string): TestSummary | undefined {
  const lines = linesOf(output);
  let best: Found | undefined;
  for (const parse of PARSERS) {
    const found = parse(lines);
    if (found && (!best || found.at > best.at)) best = found;
  }
  return best?.summary;
}
