/** Temporary git repositories for the runner's end-to-end tests. */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Commit identity for tests (no global git config needed). */
export const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: "Ratchet Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Ratchet Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
};
Object.assign(process.env, GIT_IDENTITY);

export const CALC_BUGGY = "#!/bin/bash\n# add two numbers\necho $(( $1 - $2 ))\n";
export const CALC_FIXED_LINE = "echo $(( $1 + $2 ))";
export const TEST_SCRIPT = [
  "#!/bin/bash",
  "p=0; f=0",
  'if [ "$(bash calc.sh 2 3)" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi',
  'if [ "$(bash calc.sh 10 4)" = 14 ]; then p=$((p+1)); else f=$((f+1)); fi',
  'echo "$p passed, $f failed"',
  '[ "$f" -eq 0 ]',
  "",
].join("\n");

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...GIT_IDENTITY } });
}

export interface TestRepo {
  root: string;
  repo: string;
  out: string;
  remove(): void;
}

/** A repo with calc.sh (buggy) and test_calc.sh, one commit; an output folder beside it. */
export function makeRepo(prefix = "ratchet-runner-test-"): TestRepo {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const repo = join(root, "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  writeFileSync(join(repo, "calc.sh"), CALC_BUGGY);
  writeFileSync(join(repo, "test_calc.sh"), TEST_SCRIPT);
  writeFileSync(join(repo, "README.md"), "calc\n");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "init");
  return { root, repo, out: join(root, "out"), remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** A spec object for the calc repo (override any field). */
export function calcSpec(r: TestRepo, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    task_id: "fix-calc",
    title: "Fix calc.sh addition",
    prompt: "calc.sh subtracts; make it add.",
    backend: "scripted",
    cwd: r.repo,
    output_dir: r.out,
    allowlist: ["calc.sh"],
    protected_paths: ["test_calc.sh"],
    definition_of_done: { command: "bash test_calc.sh", assertion: "exit_code == 0", timeout_seconds: 30 },
    max_rounds: 2,
    ...over,
  };
}

/** Scripted turns of a round that fixes calc.sh: read, edit, finish. */
export function fixTurns(): Record<string, unknown>[] {
  return [
    { tool_calls: [{ name: "read_file", arguments: { path: "calc.sh" } }] },
    {
      tool_calls: [
        {
          name: "edit_file",
          arguments: {
            path: "calc.sh",
            start_line: 3,
            end_line: 3,
            expected_text: "echo $(( $1 - $2 ))",
            new_text: CALC_FIXED_LINE,
          },
        },
      ],
    },
    { tool_calls: [{ name: "finish", arguments: { summary: "calc.sh now adds" } }] },
  ];
}
