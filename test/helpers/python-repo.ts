/** A temporary git repository whose definition of done is a real pytest run (escape tests). */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git, type TestRepo } from "./runner-repo.js";

/** The DoD: quiet pytest, no cache folder written into the worktree. */
export const PYTEST_DOD = "python3 -m pytest -q -p no:cacheprovider test_calc.py";

/** A repo with `calc.py` (`add` subtracts) and `test_calc.py`, one commit; an output folder beside it. */
export function makePythonRepo(tests: string, calc = "def add(a, b):\n    return a - b\n"): TestRepo {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-escape-py-")));
  const repo = join(root, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "calc.py"), calc);
  writeFileSync(join(repo, "test_calc.py"), tests);
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "init");
  return { root, repo, out: join(root, "out"), remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** A task spec for a python repo: allowlist `calc.py`, `test_calc.py` protected, pytest as DoD. */
export function pythonSpec(r: TestRepo, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    task_id: "fix-add",
    title: "Fix add",
    prompt: "add() subtracts; make it add.",
    backend: "scripted",
    cwd: r.repo,
    output_dir: r.out,
    allowlist: ["calc.py"],
    protected_paths: ["test_calc.py"],
    definition_of_done: { command: PYTEST_DOD, assertion: "exit_code == 0", timeout_seconds: 60 },
    max_rounds: 2,
    ...over,
  };
}

/** Scripted turns of one round that writes `calc.py` and finishes. */
export function writeCalcTurns(content: string, summary: string): Record<string, unknown>[] {
  return [
    { tool_calls: [{ name: "write_file", arguments: { path: "calc.py", content } }] },
    { tool_calls: [{ name: "finish", arguments: { summary } }] },
  ];
}
