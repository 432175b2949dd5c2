import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandSandbox } from "./confine.js";
import { type MadeProof, proofLeavesSourceAlone } from "./verify.js";
import type { RepoLayout } from "./worktree.js";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A source (`repo/.git`), a proof worktree with its admin folder and private git dir, a TMPDIR. */
function layout() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-verify-test-")));
  roots.push(root);
  const dir = (...p: string[]) => {
    const d = join(root, ...p);
    mkdirSync(d, { recursive: true });
    return d;
  };
  const top = dir("repo");
  const common = dir("repo", ".git");
  const admin = dir("repo", ".git", "worktrees", "wt");
  const wt = dir("proof", "wt");
  const gitDir = dir("proof", "git");
  const tmp = dir("tmp");
  const source: RepoLayout = {
    top,
    gitDir: common,
    common,
    objects: join(common, "objects"),
    exclude: join(common, "info", "exclude"),
    head: undefined,
  };
  const made = (writable: string[], protection: "landlock" | "none" = "landlock"): MadeProof => ({
    wt: { path: wt, adminDir: admin, git: { gitDir, workTree: wt } },
    sandbox: { protection, writable } as unknown as CommandSandbox,
  });
  return { root, dir, source, made, wt, admin, tmp };
}

describe("proofLeavesSourceAlone: when the after-snapshot's git calls may run beside the proof", () => {
  it("confined, every writable folder outside the source: yes (its own admin folder allowed)", () => {
    const l = layout();
    expect(proofLeavesSourceAlone(l.made([l.wt, l.admin, l.tmp]), l.source)).toBe(true);
  });

  it("not confined, or no sandbox made: no", () => {
    const l = layout();
    expect(proofLeavesSourceAlone(l.made([l.wt, l.admin, l.tmp], "none"), l.source)).toBe(false);
    expect(proofLeavesSourceAlone({ wt: l.made([]).wt }, l.source)).toBe(false);
  });

  it("a writable folder inside the working tree or the git folder, or holding them: no", () => {
    const l = layout();
    const inTree = l.dir("repo", "build");
    const inGit = l.dir("repo", ".git", "refs");
    const other = l.dir("repo", ".git", "worktrees", "someone-else");
    for (const w of [inTree, inGit, other, l.root, l.source.top]) {
      expect(proofLeavesSourceAlone(l.made([l.wt, l.admin, l.tmp, w]), l.source), w).toBe(false);
    }
  });

  it("a writable folder reaching the source through a symlink, or one that does not resolve: no", () => {
    const l = layout();
    const link = join(l.root, "link");
    symlinkSync(l.source.top, link);
    expect(proofLeavesSourceAlone(l.made([l.wt, l.admin, join(link, "sub")]), l.source)).toBe(false);
    expect(proofLeavesSourceAlone(l.made([l.wt, l.admin, link]), l.source)).toBe(false);
  });

  it("an admin folder that is not one of <common>/worktrees/: no", () => {
    const l = layout();
    const made = l.made([l.wt, l.tmp]);
    made.wt.adminDir = l.dir("repo", ".git", "refs", "wt");
    expect(proofLeavesSourceAlone(made, l.source)).toBe(false);
  });

  it("what Ratchet itself writes meanwhile is held to the same rule", () => {
    const l = layout();
    const made = l.made([l.wt, l.admin, l.tmp]);
    expect(proofLeavesSourceAlone(made, l.source, [l.dir("rounds", "wt")])).toBe(true);
    expect(proofLeavesSourceAlone(made, l.source, [l.dir("repo", "rounds")])).toBe(false);
  });
});
