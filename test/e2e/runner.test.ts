/**
 * The runner end to end, as a library: real temporary git repositories, real worktrees, real
 * processes, and the scripted model (a real OpenAI-protocol server) behind the real client.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  compareSnapshots,
  parseTaskSpec,
  runDod,
  runTask,
  snapshotSource,
  type TaskResult,
} from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import {
  CALC_BUGGY,
  CALC_FIXED_LINE,
  calcSpec,
  fixTurns,
  git,
  makeRepo,
  type TestRepo,
} from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 60_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function repo(): TestRepo {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  return r;
}

async function run(r: TestRepo, turns: Record<string, unknown>[], over: Record<string, unknown> = {}) {
  const model = await startScriptedModel({ script: { turns } });
  cleanups.push(() => model.close());
  const spec = parseTaskSpec(calcSpec(r, over));
  const result = await runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
  return { result, model, spec };
}

function artifact(r: TestRepo, suffix: string, id = "fix-calc"): string {
  return readFileSync(join(r.out, `${id}.${suffix}`), "utf8");
}

function events(r: TestRepo): Record<string, unknown>[] {
  return artifact(r, "events.jsonl")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function worktreesOf(r: TestRepo): string[] {
  return git(r.repo, "worktree", "list", "--porcelain")
    .split("\n")
    .filter((l) => l.startsWith("worktree "));
}

function expectSourceUntouched(r: TestRepo, result: TaskResult) {
  expect(result.source_unchanged).toBe(true);
  expect(git(r.repo, "status", "--porcelain")).toBe("");
  expect(readFileSync(join(r.repo, "calc.sh"), "utf8")).toBe(CALC_BUGGY);
  expect(worktreesOf(r)).toHaveLength(1);
}

describe("runner", () => {
  it("fixes a bug in a worktree and exports the patch (read_file, edit_file, finish)", async () => {
    const r = repo();
    const { result } = await run(r, fixTurns());
    expect(result.status).toBe("passed");
    expect(result.stop_reason).toBe("dod_passed");
    expect(result.rounds).toBe(1);
    expect(result.best_score).toBe(1);
    expect(result.dod.passed).toBe(true);
    expect(result.changed_files).toEqual(["calc.sh"]);
    const patch = artifact(r, "patch");
    expect(patch).toContain(`+${CALC_FIXED_LINE}`);
    expectSourceUntouched(r, result);
    // the patch applies to the source as is
    git(r.repo, "apply", "--check", join(r.out, "fix-calc.patch"));
    for (const f of [
      "request.json",
      "status.json",
      "events.jsonl",
      "rounds.jsonl",
      "response.txt",
      "result.json",
      "hunk.md",
      "verifier.log",
    ]) {
      expect(existsSync(join(r.out, `fix-calc.${f}`)), f).toBe(true);
    }
    expect(JSON.parse(artifact(r, "status.json")).state).toBe("passed");
    expect(artifact(r, "response.txt")).toContain("calc.sh now adds");
    expect(artifact(r, "verifier.log")).toContain("0 passed, 2 failed");
  });

  it("fails after max_rounds and still exports the best patch, discarding a regressed round", async () => {
    const r = repo();
    const write = (content: string, summary: string) => [
      { tool_calls: [{ name: "write_file", arguments: { path: "calc.sh", content } }] },
      { tool_calls: [{ name: "finish", arguments: { summary } }] },
    ];
    const { result } = await run(r, [...write("echo 5\n", "half"), ...write("echo 0\n", "worse")]);
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("max_rounds");
    expect(result.rounds).toBe(2);
    expect(result.best_round).toBe(1);
    expect(result.best_score).toBeGreaterThan(0);
    expect(result.best_score).toBeLessThan(0.5);
    expect(artifact(r, "patch")).toContain("+echo 5");
    const rounds = artifact(r, "rounds.jsonl")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(rounds.map((x) => x.kept)).toEqual([true, false]);
    expect(events(r).some((e) => e.type === "round_regressed")).toBe(true);
    expectSourceUntouched(r, result);
  });

  it("refuses writes outside the allowlist (path, .., symlink escape) and blocks destructive commands", async () => {
    const r = repo();
    const outside = join(r.root, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(r.repo, "link"));
    git(r.repo, "add", "link");
    git(r.repo, "commit", "-q", "-m", "link");
    const canary = join(r.root, "canary");
    writeFileSync(canary, "alive");
    const w = (path: string) => ({ name: "write_file", arguments: { path, content: "x" } });
    const { result, model } = await run(
      r,
      [
        {
          tool_calls: [
            w("README.md"),
            w("../escape.txt"),
            w("link/pwn.txt"),
            w(join(r.repo, "test_calc.sh")),
          ],
        },
        {
          tool_calls: [
            { name: "run_command", arguments: { command: `rm -rf ${canary}` } },
            { name: "run_command", arguments: { command: "git config user.name evil" } },
            { name: "run_command", arguments: { command: "echo ok; env" } },
          ],
        },
        { tool_calls: [{ name: "finish", arguments: { summary: "tried" } }] },
      ],
      { allowlist: ["calc.sh", "link"], max_rounds: 1 },
    );
    expect(result.status).toBe("failed");
    const refused = events(r).filter((e) => e.type === "tool_refused");
    expect(refused.map((e) => e.tool)).toEqual([
      "write_file",
      "write_file",
      "write_file",
      "write_file",
      "run_command",
      "run_command",
    ]);
    expect(String(refused[0]?.reason)).toContain("outside the allowlist");
    expect(String(refused[1]?.reason)).toContain("outside the worktree");
    expect(String(refused[2]?.reason)).toContain("symlink");
    expect(existsSync(join(outside, "pwn.txt"))).toBe(false);
    expect(existsSync(join(r.root, "escape.txt"))).toBe(false);
    expect(readFileSync(canary, "utf8")).toBe("alive");
    expect(git(r.repo, "config", "--get-all", "user.name").trim()).not.toBe("evil");
    // the allowed command ran with a scrubbed environment: no model key, the source named
    const third = model.requests()[2];
    const body = JSON.stringify(third?.body ?? third);
    expect(body).toContain("CODE_RUNNER_SOURCE_CWD");
    expect(body).not.toContain("sk-scripted");
    expect(result.changed_files).toEqual([]);
    expectSourceUntouched(r, result);
  });

  it("runs the DoD against pristine protected paths, whatever a command did to them", async () => {
    const r = repo();
    const { result } = await run(
      r,
      [
        { tool_calls: [{ name: "write_file", arguments: { path: "test_calc.sh", content: "exit 0\n" } }] },
        {
          tool_calls: [{ name: "run_command", arguments: { command: "printf 'exit 0\\n' > test_calc.sh" } }],
        },
        { tool_calls: [{ name: "finish", arguments: { summary: "cheated" } }] },
      ],
      { allowlist: ["calc.sh", "test_calc.sh"], max_rounds: 1 },
    );
    expect(result.status).toBe("failed");
    expect(result.dod.passed).toBe(false);
    const ev = events(r);
    expect(ev.find((e) => e.type === "tool_refused")?.reason).toContain("protected");
    expect(ev.find((e) => e.type === "protected_restored")?.paths).toEqual(["test_calc.sh"]);
    expect(result.changed_files).toEqual([]);
  });

  it("stops on no progress: the same diff and the same DoD output twice in a row", async () => {
    const r = repo();
    const { result } = await run(
      r,
      [{ tool_calls: [{ name: "finish", arguments: { summary: "nothing to do" } }], repeat: 5 }],
      { max_rounds: 5 },
    );
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("no_progress");
    expect(result.rounds).toBe(2);
    expect(result.patch_file).toBeNull();
  });

  it("refuses a vacuous DoD (already passing) before any model call", async () => {
    const r = repo();
    const model = await startScriptedModel({ tripwire: true });
    cleanups.push(() => model.close());
    const spec = parseTaskSpec(
      calcSpec(r, { definition_of_done: { command: "true", assertion: "exit_code == 0" } }),
    );
    const result = await runTask(spec, { client: scriptedModelClient(model) });
    expect(result.status).toBe("refused");
    expect(result.refusals[0]?.code).toBe("vacuous_dod");
    expect(model.requests()).toHaveLength(0);
    expect(worktreesOf(r)).toHaveLength(1);
  });

  it("refuses when dirty source paths overlap the allowlist", async () => {
    const r = repo();
    writeFileSync(join(r.repo, "calc.sh"), "# my uncommitted change\n");
    const model = await startScriptedModel({ tripwire: true });
    cleanups.push(() => model.close());
    const result = await runTask(parseTaskSpec(calcSpec(r)), { client: scriptedModelClient(model) });
    expect(result.status).toBe("refused");
    expect(result.refusals[0]?.code).toBe("dirty_overlap");
    expect(result.refusals[0]?.message).toContain("calc.sh");
    expect(readFileSync(join(r.repo, "calc.sh"), "utf8")).toBe("# my uncommitted change\n");
  });

  it("complete-task mode applies the patch, proves it in the source and commits only allowlisted paths", async () => {
    const r = repo();
    writeFileSync(join(r.repo, "notes.txt"), "unrelated user change\n");
    const head = git(r.repo, "rev-parse", "HEAD").trim();
    const { result } = await run(r, fixTurns(), { apply_to_source: true, commit_on_success: true });
    expect(result.status).toBe("passed");
    expect(result.source_patch_applied).toBe(true);
    expect(result.source_dod_passed).toBe(true);
    expect(result.source_commit).toMatch(/^[0-9a-f]{40}$/);
    expect(git(r.repo, "rev-parse", "HEAD").trim()).toBe(result.source_commit);
    expect(git(r.repo, "rev-parse", "HEAD~1").trim()).toBe(head);
    expect(git(r.repo, "show", "--name-only", "--format=", "HEAD").trim()).toBe("calc.sh");
    expect(git(r.repo, "status", "--porcelain").trim()).toBe("?? notes.txt");
  });

  it("complete-task mode rolls back when the DoD fails in the source", async () => {
    const r = repo();
    // `.git` is a file in a worktree and a folder in the source: this DoD passes only in the worktree
    const { result } = await run(r, fixTurns(), {
      apply_to_source: true,
      commit_on_success: true,
      definition_of_done: { command: "bash test_calc.sh && test -f .git", assertion: "exit_code == 0" },
    });
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("source_dod_failed");
    expect(result.source_patch_applied).toBe(true);
    expect(result.source_dod_passed).toBe(false);
    expect(result.source_rollback_applied).toBe(true);
    expect(result.source_commit).toBeNull();
    expect(readFileSync(join(r.repo, "calc.sh"), "utf8")).toBe(CALC_BUGGY);
    expect(git(r.repo, "status", "--porcelain")).toBe("");
  });

  it("catches a change to the source's .git/config made from the worktree (source-unchanged proof, sandbox off)", async () => {
    const r = repo();
    process.env.RATCHET_SANDBOX = "off";
    try {
      const { result } = await run(r, fixTurns(), {
        definition_of_done: {
          command: "git config ratchet.touched yes; bash test_calc.sh",
          assertion: "exit_code == 0",
        },
      });
      expect(result.status).toBe("failed");
      expect(result.stop_reason).toBe("source_changed");
      expect(result.source_unchanged).toBe(false);
      expect(result.source_changes).toContain("configHash");
    } finally {
      delete process.env.RATCHET_SANDBOX;
    }
  });

  it("under the command sandbox the same write to the source's .git/config is refused", async () => {
    const r = repo();
    const { result } = await run(r, fixTurns(), {
      definition_of_done: {
        command: "git config ratchet.touched yes; bash test_calc.sh",
        assertion: "exit_code == 0",
      },
    });
    const sandbox = events(r).find((e) => e.type === "command_sandbox");
    if (sandbox?.protection !== "landlock") {
      console.warn(`runner commands not confined here: ${JSON.stringify(sandbox)}`);
      return;
    }
    expect(sandbox.writable).toEqual(expect.arrayContaining([expect.stringContaining(".git/worktrees/")]));
    expect(result.status).toBe("passed");
    expect(result.source_unchanged).toBe(true);
    expect(() => git(r.repo, "config", "--get", "ratchet.touched")).toThrow();
    expect(artifact(r, "verifier.log")).toMatch(/could not lock config file|Permission denied/);
  });

  it("the proof sees hooks, refs, stash and config (direct)", async () => {
    const r = repo();
    const before = await snapshotSource(r.repo);
    git(r.repo, "branch", "sneaky");
    writeFileSync(join(r.repo, ".git", "hooks", "post-checkout"), "#!/bin/sh\n");
    git(r.repo, "config", "core.sneaky", "1");
    const after = await snapshotSource(r.repo);
    expect(compareSnapshots(before, after).sort()).toEqual(["configHash", "hooks", "refs"]);
  });

  it("kills a hanging DoD and its children at the time limit", async () => {
    const r = repo();
    const pidFile = join(r.root, "child.pid");
    const spec = parseTaskSpec(
      calcSpec(r, {
        definition_of_done: {
          command: `sleep 300 & echo $! > ${pidFile}; sleep 300`,
          assertion: "exit_code == 0",
        },
      }),
    );
    const dod = await runDod(spec, r.repo, { timeoutMs: 1500 });
    expect(dod.timedOut).toBe(true);
    expect(dod.passed).toBe(false);
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    // gone, or a zombie waiting for a container's init to reap it: either way no longer running
    const running = () => {
      try {
        process.kill(pid, 0);
      } catch {
        return false;
      }
      const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : "";
      return !/^\d+ \([^)]*\) Z/.test(stat);
    };
    for (let i = 0; i < 30 && running(); i++) await new Promise((res) => setTimeout(res, 100));
    expect(running()).toBe(false);
  });
});
