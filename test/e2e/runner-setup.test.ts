/**
 * The task's set-up starts its reads side by side (preflight's `rev-parse` and `status`, the
 * snapshot's `show-ref`, the copied settings, the launcher probe). What a refused task started
 * is over when `runTask` returns and made nothing; a change the user makes to the source while
 * the task runs is still caught by the "source unchanged" proof.
 */
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ProcessRunner, realProcessRunner } from "../../src/exec/index.js";
import type { ModelClient } from "../../src/model/index.js";
import { parseTaskSpec, runTask } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { calcSpec, fixTurns, git, makeRepo, type TestRepo } from "../helpers/runner-repo.js";

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

/** A process runner that counts the processes still running. */
function counting(): { runner: ProcessRunner; running: () => number; started: () => number } {
  let running = 0;
  let started = 0;
  return {
    runner: {
      async run(req) {
        running++;
        started++;
        try {
          return await realProcessRunner.run(req);
        } finally {
          running--;
        }
      },
    },
    running: () => running,
    started: () => started,
  };
}

/** Ratchet's worktree folders of this process under the temp folder. */
function ourWorktrees(): string[] {
  return readdirSync(realpathSync(tmpdir())).filter((n) => n.startsWith(`ratchet-runner-${process.pid}-`));
}

async function client(turns: Record<string, unknown>[]) {
  const model = await startScriptedModel({ script: { turns } });
  cleanups.push(() => model.close());
  return scriptedModelClient(model, { maxAttempts: 1 });
}

describe("runner set-up: reads started side by side", () => {
  it("refuses a cwd that is not a repository, a folder inside one, and a repository without a commit", async () => {
    const r = repo();
    const plain = join(r.root, "plain");
    mkdirSync(plain);
    const sub = join(r.repo, "sub");
    mkdirSync(sub);
    writeFileSync(join(sub, "x"), "x\n");
    const empty = join(r.root, "empty");
    mkdirSync(empty);
    git(empty, "init", "-q", "-b", "main");
    const before = ourWorktrees();
    const cases: [string, string][] = [
      [plain, "not_a_git_repo"],
      [sub, "cwd_not_repo_root"],
      [empty, "no_commit"],
    ];
    for (const [cwd, code] of cases) {
      const c = counting();
      const spec = parseTaskSpec(calcSpec(r, { cwd, output_dir: join(r.root, `out-${code}`) }));
      const result = await runTask(spec, { client: await client(fixTurns()), runner: c.runner });
      expect(result.status, cwd).toBe("refused");
      expect(result.refusals.map((x) => x.code)).toEqual([code]);
      // the reads started beside preflight ran and are over; no worktree was made
      expect(c.started()).toBeGreaterThan(1);
      expect(c.running()).toBe(0);
      expect(ourWorktrees()).toEqual(before);
    }
    expect(git(r.repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });

  it("refuses a dirty allowlisted file although the status was read beside rev-parse", async () => {
    const r = repo();
    writeFileSync(join(r.repo, "calc.sh"), "echo dirty\n");
    const c = counting();
    const spec = parseTaskSpec(calcSpec(r));
    const result = await runTask(spec, { client: await client(fixTurns()), runner: c.runner });
    expect(result.status).toBe("refused");
    expect(result.refusals.map((x) => x.code)).toEqual(["dirty_overlap"]);
    expect(c.running()).toBe(0);
  });

  it("a commit and a new file the user makes in the source during the rounds are caught", async () => {
    const r = repo();
    const inner = await client(fixTurns());
    let calls = 0;
    // the user works in the source while the model thinks
    const userAtWork: ModelClient = {
      model: inner.model,
      async complete(req) {
        if (calls++ === 0) {
          writeFileSync(join(r.repo, "README.md"), "calc, by the user\n");
          git(r.repo, "commit", "-q", "-am", "user");
          writeFileSync(join(r.repo, "notes.txt"), "mine\n");
        }
        return inner.complete(req);
      },
    };
    const result = await runTask(parseTaskSpec(calcSpec(r)), { client: userAtWork });
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("source_changed");
    expect(result.source_changes).toEqual(expect.arrayContaining(["head", "refs", "status"]));
  });

  it("the worktree is made of the commit the snapshot saw, with the source's copied settings", async () => {
    const r = repo();
    git(r.repo, "config", "core.autocrlf", "input");
    const head = git(r.repo, "rev-parse", "HEAD").trim();
    let seen: { config: string; head: string; wtHead: string } | undefined;
    const result = await runTask(parseTaskSpec(calcSpec(r)), {
      client: await client(fixTurns()),
      onWorktree: (wt) => {
        const own = join(wt, "..", "git");
        seen = {
          config: readFileSync(join(own, "config"), "utf8"),
          head: readFileSync(join(own, "HEAD"), "utf8").trim(),
          wtHead: git(wt, "rev-parse", "HEAD").trim(),
        };
      },
    });
    expect(result.status).toBe("passed");
    expect(seen?.head).toBe(head);
    expect(seen?.wtHead).toBe(head);
    expect(seen?.config).toMatch(/autocrlf = "input"/);
  });
});
