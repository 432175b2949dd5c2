/**
 * False pass: a model makes the DoD pass in its worktree with a change OUTSIDE the allowlist (it
 * rewrites a test file nobody protected, adds a `conftest.py` that turns failures into passes,
 * or makes the allowlisted file lean on a helper it wrote elsewhere). The exported patch holds only
 * allowlisted paths, so such a task must never report `passed`: the DoD that decides runs on a
 * fresh worktree holding nothing but the exported patch.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseTaskSpec, runTask, type TaskResult } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { calcSpec, fixTurns, git, makeRepo, type TestRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 90_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function repo(): TestRepo {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  return r;
}

const cmd = (command: string) => ({ tool_calls: [{ name: "run_command", arguments: { command } }] });
const finish = { tool_calls: [{ name: "finish", arguments: { summary: "done" } }] };

async function run(r: TestRepo, turns: Record<string, unknown>[], over: Record<string, unknown> = {}) {
  const model = await startScriptedModel({ script: { turns } });
  cleanups.push(() => model.close());
  const spec = parseTaskSpec(calcSpec(r, { max_rounds: 1, ...over }));
  return runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
}

function events(r: TestRepo, id = "fix-calc"): Record<string, unknown>[] {
  return readFileSync(join(r.out, `${id}.events.jsonl`), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function expectFalsePassRefused(r: TestRepo, result: TaskResult, id = "fix-calc") {
  expect(result.status, JSON.stringify(result)).toBe("failed");
  expect(result.stop_reason).toBe("fresh_dod_failed");
  expect(result.dod.passed).toBe(false);
  expect(result.dod.verified_on_fresh_worktree).toBe(true);
  const verified = events(r, id).filter((e) => e.type === "dod_verified");
  expect(verified).toHaveLength(1);
  expect(verified[0]?.passed).toBe(false);
  // the round itself "passed" in the model's worktree: that is what must not count
  const rounds = events(r, id).filter((e) => e.type === "dod_run" && String(e.label).startsWith("round"));
  expect(rounds.at(-1)?.passed).toBe(true);
  expect(result.source_unchanged).toBe(true);
  expect(git(r.repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
}

describe("escape: a change outside the allowlist never makes a task pass", () => {
  it("an unprotected test file rewritten by a command (empty patch) is not a pass", async () => {
    const r = repo();
    const result = await run(
      r,
      [cmd(`printf 'echo "2 passed, 0 failed"\\nexit 0\\n' > test_calc.sh`), finish],
      {
        protected_paths: [],
      },
    );
    expect(result.changed_files).toEqual([]);
    expectFalsePassRefused(r, result);
  });

  it("an allowlisted file that leans on a helper written outside the allowlist is not a pass", async () => {
    const r = repo();
    const result = await run(r, [
      cmd(`printf 'echo $(( $1 + $2 ))\\n' > helper.sh`),
      {
        tool_calls: [{ name: "write_file", arguments: { path: "calc.sh", content: "source ./helper.sh\n" } }],
      },
      finish,
    ]);
    // calc.sh is exported; helper.sh (outside the allowlist) is not, so the patch alone fails
    expect(result.changed_files).toEqual(["calc.sh"]);
    expectFalsePassRefused(r, result);
  });

  const pytest = spawnSync("python3", ["-m", "pytest", "--version"]).status === 0;
  it.skipIf(!pytest)("a conftest.py that turns failures into passes is not a pass", async () => {
    const r = repo();
    writeFileSync(join(r.repo, "calc.py"), "def add(a, b):\n    return a - b\n");
    writeFileSync(
      join(r.repo, "test_calc.py"),
      "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_add_more():\n    assert add(10, 4) == 14\n",
    );
    git(r.repo, "add", "-A");
    git(r.repo, "commit", "-q", "-m", "python");
    const conftest = [
      "import pytest",
      "@pytest.hookimpl(hookwrapper=True)",
      "def pytest_runtest_makereport(item, call):",
      "    outcome = yield",
      "    report = outcome.get_result()",
      "    if report.failed:",
      '        report.outcome = "passed"',
      "",
    ].join("\n");
    const py = `open("conftest.py", "w").write(${JSON.stringify(conftest)})`;
    const b64 = Buffer.from(py).toString("base64");
    const result = await run(
      r,
      [cmd(`python3 -c "import base64; exec(base64.b64decode('${b64}'))"`), finish],
      {
        allowlist: ["calc.py"],
        protected_paths: ["test_calc.py"],
        definition_of_done: {
          command: "python3 -m pytest -q -p no:cacheprovider test_calc.py",
          assertion: "exit_code == 0",
          timeout_seconds: 60,
        },
      },
    );
    expect(result.changed_files).toEqual([]);
    expectFalsePassRefused(r, result);
  });

  it("a real allowlisted fix still passes, verified on the fresh worktree", async () => {
    const r = repo();
    const result = await run(r, fixTurns(), { protected_paths: [] });
    expect(result.status).toBe("passed");
    expect(result.stop_reason).toBe("dod_passed");
    expect(result.dod.passed).toBe(true);
    expect(result.dod.verified_on_fresh_worktree).toBe(true);
    expect(events(r).find((e) => e.type === "dod_verified")?.passed).toBe(true);
    expect(readFileSync(join(r.out, "fix-calc.verifier.log"), "utf8")).toContain(
      "=== fresh worktree: PASSED",
    );
  });

  it("a new allowlisted file travels in the patch and passes on the fresh worktree", async () => {
    const r = repo();
    const result = await run(
      r,
      [
        {
          tool_calls: [
            { name: "write_file", arguments: { path: "lib/add.sh", content: "echo $(( $1 + $2 ))\n" } },
            { name: "write_file", arguments: { path: "calc.sh", content: "source ./lib/add.sh\n" } },
          ],
        },
        finish,
      ],
      { allowlist: ["calc.sh", "lib"] },
    );
    expect(result.status, JSON.stringify(result)).toBe("passed");
    expect(result.changed_files).toEqual(["calc.sh", "lib/add.sh"]);
    expect(result.dod.verified_on_fresh_worktree).toBe(true);
  });
});
