import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { git, makeRepo, type TestRepo } from "../../test/helpers/runner-repo.js";
import { PINNED_GIT_CONFIG } from "./git.js";
import { compareSnapshots, gitWorktrees, privateConfig, snapshotSource } from "./worktree.js";

describe("privateConfig", () => {
  it("is a config git reads: copied settings, the pinned ones, and no program", () => {
    const dir = mkdtempSync(join(tmpdir(), "ratchet-private-config-"));
    try {
      const file = join(dir, "config");
      writeFileSync(
        file,
        privateConfig([
          ["core.autocrlf", "input"],
          ["extensions.objectformat", "sha256"],
        ]),
      );
      const list = execFileSync("git", ["config", "-f", file, "--list"], { encoding: "utf8" })
        .trim()
        .split("\n");
      expect(list).toEqual(
        expect.arrayContaining([
          "core.repositoryformatversion=1",
          "core.bare=false",
          "core.autocrlf=input",
          "extensions.objectformat=sha256",
          ...PINNED_GIT_CONFIG.map((c) =>
            c.replace(/^(\w+)\.(\w+)=/, (_m, s: string, k: string) => `${s}.${k.toLowerCase()}=`),
          ),
        ]),
      );
      expect(list.some((l) => /filter\.|textconv|\.command=|external=/.test(l))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("snapshotSource: what git state it reads from files", () => {
  const made: TestRepo[] = [];
  afterEach(() => {
    for (const r of made.splice(0)) r.remove();
  });
  const repo = () => {
    const r = makeRepo();
    made.push(r);
    return r;
  };

  it("sees a stash entry dropped from below the top, a branch switch at the same commit, and a lock", async () => {
    const r = repo();
    for (const n of [1, 2]) {
      writeFileSync(join(r.repo, "README.md"), `stash ${n}\n`);
      git(r.repo, "stash", "-q");
    }
    git(r.repo, "worktree", "add", "-q", "--detach", join(r.root, "other"));
    const before = await snapshotSource(r.repo);
    git(r.repo, "stash", "drop", "-q", "stash@{1}");
    expect(compareSnapshots(before, await snapshotSource(r.repo))).toEqual(["stash"]);
    const s2 = await snapshotSource(r.repo);
    git(r.repo, "checkout", "-q", "-b", "same-commit");
    expect(compareSnapshots(s2, await snapshotSource(r.repo)).sort()).toEqual(["refs", "worktrees"]);
    const s3 = await snapshotSource(r.repo);
    git(r.repo, "worktree", "lock", join(r.root, "other"));
    expect(compareSnapshots(s3, await snapshotSource(r.repo))).toEqual(["worktrees"]);
  });

  it("removing Ratchet's worktree leaves the user's own stale worktree entries alone", async () => {
    const r = repo();
    const stale = join(r.root, "stale");
    git(r.repo, "worktree", "add", "-q", "--detach", stale);
    rmSync(stale, { recursive: true, force: true });
    const before = await snapshotSource(r.repo);
    const wts = gitWorktrees();
    const wt = await wts.create(r.repo);
    await wts.remove(r.repo, wt);
    expect(compareSnapshots(before, await snapshotSource(r.repo))).toEqual([]);
    expect(git(r.repo, "worktree", "list", "--porcelain")).toContain("prunable");
    expect(existsSync(wt.path) || existsSync(wt.adminDir) || existsSync(wt.git.gitDir)).toBe(false);
  });

  it("a worktree made from the task's base is of that commit, even after HEAD moved", async () => {
    const r = repo();
    const first = git(r.repo, "rev-parse", "HEAD").trim();
    const wts = gitWorktrees();
    const a = await wts.create(r.repo);
    writeFileSync(join(r.repo, "README.md"), "moved\n");
    git(r.repo, "commit", "-qam", "move");
    const b = await wts.create(r.repo, a.base);
    try {
      expect(readFileSync(join(b.git.gitDir, "HEAD"), "utf8").trim()).toBe(first);
      expect(readFileSync(join(b.path, "README.md"), "utf8")).toBe("calc\n");
    } finally {
      await wts.remove(r.repo, a);
      await wts.remove(r.repo, b);
    }
    expect(existsSync(join(r.repo, ".git", "worktrees"))).toBe(false);
  });

  it("the one-process checkout is a linked worktree git knows, with the source's filters and no hook", async () => {
    const r = repo();
    // a clean/smudge filter of the source (as LFS is) and a post-checkout hook that would leave a mark
    writeFileSync(join(r.repo, ".gitattributes"), "*.up filter=upper\n");
    writeFileSync(join(r.repo, "a.up"), "hello\n");
    git(r.repo, "config", "filter.upper.smudge", "tr a-z A-Z");
    git(r.repo, "config", "filter.upper.clean", "tr A-Z a-z");
    git(r.repo, "add", "-A");
    git(r.repo, "commit", "-qm", "filtered");
    const mark = join(r.root, "hook-ran");
    writeFileSync(join(r.repo, ".git", "hooks", "post-checkout"), `#!/bin/sh\ntouch ${mark}\n`, {
      mode: 0o755,
    });
    const wts = gitWorktrees();
    const wt = await wts.create(r.repo);
    try {
      expect(readFileSync(join(wt.path, "a.up"), "utf8")).toBe("HELLO\n");
      expect(existsSync(mark)).toBe(false);
      // the worktree's own git (what a DoD runs) sees a clean checkout of the commit, detached
      expect(git(wt.path, "status", "--porcelain")).toBe("");
      expect(git(wt.path, "rev-parse", "HEAD").trim()).toBe(git(r.repo, "rev-parse", "HEAD").trim());
      expect(() => git(wt.path, "symbolic-ref", "-q", "HEAD")).toThrow();
      // the source lists it, unlocked and not prunable, and a prune leaves it
      const listed = () => git(r.repo, "worktree", "list", "--porcelain");
      expect(listed()).toContain(`worktree ${wt.path}\n`);
      git(r.repo, "worktree", "prune");
      expect(listed()).toContain(`worktree ${wt.path}\n`);
      expect(listed()).not.toMatch(/locked|prunable/);
      // Ratchet's own pinned git agrees: nothing to diff
      expect(readFileSync(join(wt.git.gitDir, "HEAD"), "utf8").trim()).toBe(
        git(r.repo, "rev-parse", "HEAD").trim(),
      );
    } finally {
      await wts.remove(r.repo, wt);
    }
    expect(git(r.repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });
});
