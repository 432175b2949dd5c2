/** `ratchet runner …` through the built CLI, with the scripted model configured by environment. */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { DryRunReport } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { assertBuilt, query, ROOT, ratchet } from "../helpers/cli.js";
import { calcSpec, fixTurns, GIT_IDENTITY, git, makeRepo, type TestRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 60_000 });
beforeAll(() => assertBuilt());

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(over: Record<string, unknown> = {}): { r: TestRepo; spec: string } {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  const spec = join(r.root, "task.json");
  writeFileSync(spec, JSON.stringify(calcSpec(r, over)));
  return { r, spec };
}

const env = (url?: string) => ({
  ...GIT_IDENTITY,
  RATCHET_MODEL: url ? "openai-compatible:scripted" : undefined,
  OPENAI_BASE_URL: url,
  OPENAI_API_KEY: url ? "sk-test-0000000000" : undefined,
  RATCHET_DB: undefined,
});

describe("ratchet runner", () => {
  it("dry-run --explain-risk reports the preflight and the risk without a model", async () => {
    const { r, spec } = setup();
    const res = await ratchet(["runner", "dry-run", spec, "--explain-risk", "--json"], {
      cwd: r.root,
      env: env(),
    });
    expect(res.status, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as DryRunReport;
    expect(report.ok).toBe(true);
    expect(report.dod?.passed).toBe(false);
    expect(report.risk?.allowlist).toEqual([{ entry: "calc.sh", exists: true, tracked_files: 1 }]);
    expect(report.risk?.dod.argv).toEqual([["bash", "test_calc.sh"]]);
    expect(report.risk?.protected_paths).toEqual([{ entry: "test_calc.sh", tracked_files: 1 }]);
  });

  it("dry-run refuses a vacuous DoD with exit 4; a bad spec exits 2 naming the field", async () => {
    const { r, spec } = setup({ definition_of_done: { command: "echo fine", assertion: "fine" } });
    const res = await ratchet(["runner", "dry-run", spec, "--json"], { cwd: r.root, env: env() });
    expect(res.status).toBe(4);
    expect(JSON.parse(res.stdout).refusals[0].code).toBe("vacuous_dod");
    writeFileSync(spec, JSON.stringify({ ...calcSpec(r), allowlist: ["../up.txt"], surprise: 1 }));
    const bad = await ratchet(["runner", "run", spec], { cwd: r.root, env: env() });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("surprise");
  });

  it("refuses writable_paths that do not exist (exit 4 naming the field), before any worktree or model call", async () => {
    const missing = "/nonexistent/ratchet-cache";
    const { r, spec } = setup({ writable_paths: [missing] });
    const model = await startScriptedModel({ script: { turns: [] } });
    cleanups.push(() => model.close());
    for (const cmd of ["dry-run", "run"]) {
      const res = await ratchet(["runner", cmd, spec, "--json"], { cwd: r.root, env: env(model.url) });
      expect(res.status, res.stderr).toBe(4);
      const out = JSON.parse(res.stdout) as { refusals: { code: string; message: string }[] };
      expect(out.refusals).toEqual([
        {
          code: "writable_path_missing",
          message: `writable_paths[0]: ${missing} is not an existing folder (create it first)`,
        },
      ]);
    }
    expect(model.requests()).toHaveLength(0);
    expect(git(r.repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });

  it("run passes (exit 0), then status and watch read the output folder", async () => {
    const { r, spec } = setup();
    const model = await startScriptedModel({ script: { turns: fixTurns() } });
    cleanups.push(() => model.close());
    const db = join(r.root, "ratchet.db");
    const res = await ratchet(["--db", db, "runner", "run", spec, "--json"], {
      cwd: r.root,
      env: env(model.url),
    });
    expect(res.status, res.stderr).toBe(0);
    const recorded = query<{ type: string }>(
      { dbPath: db },
      "SELECT type FROM events WHERE entity_kind = 'runner_task' AND entity_id = 'fix-calc' ORDER BY id",
    ).map((e) => e.type);
    expect(recorded[0]).toBe("runner.task_started");
    expect(recorded.at(-1)).toBe("runner.task_finished");
    const result = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(result.status).toBe("passed");
    expect(result.changed_files).toEqual(["calc.sh"]);
    const st = await ratchet(["runner", "status", r.out, "--tail-events", "3", "--json"], {
      cwd: r.root,
      env: env(),
    });
    expect(st.status).toBe(0);
    const tasks = JSON.parse(st.stdout).tasks as { status: { state: string }; events: unknown[] }[];
    expect(tasks[0]?.status.state).toBe("passed");
    expect(tasks[0]?.events).toHaveLength(3);
    const w = await ratchet(["runner", "watch", r.out, "--timeout", "10"], { cwd: r.root, env: env() });
    expect(w.status).toBe(0);
    expect(w.stdout).toContain('"type":"task_finished"');
  });

  it("run exits 8 when the DoD still fails", async () => {
    const { r, spec } = setup({ max_rounds: 1 });
    const model = await startScriptedModel({
      script: { turns: [{ tool_calls: [{ name: "finish", arguments: { summary: "gave up" } }] }] },
    });
    cleanups.push(() => model.close());
    const res = await ratchet(["runner", "run", spec], { cwd: r.root, env: env(model.url) });
    expect(res.status, res.stderr).toBe(8);
    expect(res.stdout).toContain("failed");
  });

  it("commands run confined where Landlock works: the worktree, git and TMPDIR are writable, nothing else", async () => {
    const { r, spec } = setup({ max_rounds: 1 });
    const outside = join(r.root, "escaped.txt");
    const py = (code: string) => `python3 -c ${JSON.stringify(code)}`;
    const model = await startScriptedModel({
      script: {
        turns: [
          {
            tool_calls: [
              // The guard does not read Python code; the sandbox is what stops this write.
              {
                name: "run_command",
                arguments: { command: py(`open(${JSON.stringify(outside)}, "w").write("x")`) },
              },
              { name: "run_command", arguments: { command: "git status --short && echo git-ok" } },
              {
                name: "run_command",
                arguments: {
                  command: py("import tempfile; tempfile.NamedTemporaryFile().write(b'x'); print('tmp-ok')"),
                },
              },
              { name: "run_command", arguments: { command: "echo inside > notes.txt && echo worktree-ok" } },
            ],
          },
          ...fixTurns().slice(1),
        ],
      },
    });
    cleanups.push(() => model.close());
    const res = await ratchet(["runner", "run", spec, "--json"], { cwd: r.root, env: env(model.url) });
    expect(res.status, res.stderr).toBe(0);
    const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; content?: string; protection?: string });
    const sandbox = events.find((e) => e.type === "command_sandbox");
    const results = events.filter((e) => e.type === "tool_result" && e.content !== undefined);
    const text = results.map((e) => e.content).join("\n");
    expect(text).toContain("git-ok");
    expect(text).toContain("tmp-ok");
    expect(text).toContain("worktree-ok");
    if (sandbox?.protection === "landlock") {
      // EACCES from Landlock, or EROFS where the launcher's read-only mount namespace answers first.
      expect(text).toMatch(/(PermissionError: \[Errno 13\]|OSError: \[Errno 30\])/);
      expect(existsSync(outside)).toBe(false);
    } else {
      console.warn(`runner commands not confined here: ${JSON.stringify(sandbox)}`);
      expect(existsSync(join(ROOT, "dist", "native", "ratchet-confine"))).toBe(false);
    }
    // notes.txt is outside the allowlist: written in the worktree, never in the patch.
    expect(JSON.parse(res.stdout).changed_files).toEqual(["calc.sh"]);
  });

  it("doctor --json checks git, the model, the command sandbox and leaked worktrees", async () => {
    const { r } = setup();
    const model = await startScriptedModel({ script: { turns: [] } });
    cleanups.push(() => model.close());
    const res = await ratchet(["runner", "doctor", "--json"], { cwd: r.repo, env: env(model.url) });
    expect(res.status, res.stdout).toBe(0);
    const checks = JSON.parse(res.stdout).checks as { name: string; ok: boolean }[];
    expect(checks.map((c) => c.name)).toEqual([
      "git",
      "python3",
      "model",
      "model_reachable",
      "sandbox",
      "leaked_worktrees",
    ]);
    expect(checks.find((c) => c.name === "model_reachable")?.ok).toBe(true);
    expect(checks.find((c) => c.name === "leaked_worktrees")?.ok).toBe(true);
    const landlock = spawnSync(join(ROOT, "dist", "native", "ratchet-confine"), ["--probe"]).status === 0;
    expect(checks.find((c) => c.name === "sandbox")?.ok).toBe(landlock);
  });
});
