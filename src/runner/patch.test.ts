/**
 * The worktree view spares the rounds git calls (`status` of the protected paths, `ls-files
 * --others` of the allowlist) only when it can tell the answer for certain. Each test changes a
 * real worktree the way a determined command would and checks that the protected paths still come
 * back pristine and that every new allowlisted file still reaches the patch.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeRepo, type TestRepo } from "../../test/helpers/runner-repo.js";
import {
  diffAllowlisted,
  patchPaths,
  rawDiffSettings,
  restoreProtected,
  restoreTo,
  WorktreeView,
} from "./patch.js";
import { gitWorktrees, type Worktree } from "./worktree.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const worktrees = gitWorktrees();

/** The calc repo plus a protected folder `tests/` (two files) and an allowlisted folder `src/`. */
async function fixture(): Promise<{ r: TestRepo; wt: Worktree; view: WorktreeView }> {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  mkdirSync(join(r.repo, "tests"));
  writeFileSync(join(r.repo, "tests", "a.sh"), "echo a\n");
  writeFileSync(join(r.repo, "tests", "b.sh"), "echo b\n");
  mkdirSync(join(r.repo, "src"));
  writeFileSync(join(r.repo, "src", "lib.sh"), "lib\n");
  writeFileSync(join(r.repo, ".gitignore"), "*.log\n");
  execFileSync("git", ["add", "-A"], { cwd: r.repo });
  execFileSync("git", ["commit", "-q", "-m", "more"], { cwd: r.repo });
  const wt = await worktrees.create(r.repo);
  cleanups.push(() => worktrees.remove(r.repo, wt));
  const view = WorktreeView.capture(wt.path, ALLOW, PROTECTED);
  return { r, wt, view };
}

const ALLOW = ["calc.sh", "src"];
const PROTECTED = ["test_calc.sh", "tests"];

/** restoreProtected through the view, then the same check by git alone must find nothing left. */
async function restoredByView(wt: Worktree, view: WorktreeView): Promise<string[]> {
  const first = await restoreProtected(wt.git, PROTECTED, undefined, view);
  const again = await restoreProtected(wt.git, PROTECTED);
  expect(again.changed).toEqual([]);
  expect(readFileSync(join(wt.path, "tests", "a.sh"), "utf8")).toBe("echo a\n");
  expect(readFileSync(join(wt.path, "tests", "b.sh"), "utf8")).toBe("echo b\n");
  expect(readFileSync(join(wt.path, "test_calc.sh"), "utf8")).toMatch(/passed/);
  return first.changed;
}

describe("WorktreeView: protected paths", () => {
  it("untouched protected paths are reported pristine, with the same hash every round", async () => {
    const { wt, view } = await fixture();
    expect(view.protectedPristine(PROTECTED)).toBe(true);
    const a = await restoreProtected(wt.git, PROTECTED, undefined, view);
    const b = await restoreProtected(wt.git, PROTECTED, undefined, view);
    expect(a).toEqual({ changed: [], hash: b.hash });
    expect(a.hash).toMatch(/^[0-9a-f]{16}$/);
  });

  it("a same-size rewrite with the old timestamps put back is seen and restored", async () => {
    const { wt, view } = await fixture();
    const file = join(wt.path, "tests", "a.sh");
    const st = statSync(file);
    writeFileSync(file, "exit 0\n");
    utimesSync(file, st.atime, st.mtime);
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    expect(await restoredByView(wt, view)).toEqual(["tests/a.sh"]);
  });

  it("an executable bit, a deletion and an added file are each seen and undone", async () => {
    const { wt, view } = await fixture();
    chmodSync(join(wt.path, "tests", "a.sh"), 0o755);
    rmSync(join(wt.path, "test_calc.sh"));
    writeFileSync(join(wt.path, "tests", "conftest.sh"), "exit 0\n");
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    expect((await restoredByView(wt, view)).sort()).toEqual([
      "test_calc.sh",
      "tests/a.sh",
      "tests/conftest.sh",
    ]);
    expect(statSync(join(wt.path, "tests", "a.sh")).mode & 0o111).toBe(0);
    expect(() => statSync(join(wt.path, "tests", "conftest.sh"))).toThrow();
  });

  it("a protected file swapped for a symlink to the same bytes is not pristine", async () => {
    const { wt, view } = await fixture();
    const file = join(wt.path, "tests", "b.sh");
    writeFileSync(join(wt.path, "copy.sh"), readFileSync(file));
    rmSync(file);
    symlinkSync(join(wt.path, "copy.sh"), file);
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    expect(await restoredByView(wt, view)).toContain("tests/b.sh");
    expect(statSync(file).isFile()).toBe(true);
  });

  it("a protected folder replaced by a symlink to an edited copy is not pristine", async () => {
    const { wt, view } = await fixture();
    const dir = join(wt.path, "tests");
    renameSync(dir, join(wt.path, "elsewhere"));
    writeFileSync(join(wt.path, "elsewhere", "a.sh"), "exit 0\n");
    symlinkSync(join(wt.path, "elsewhere"), dir);
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    await restoreProtected(wt.git, PROTECTED, undefined, view);
    // git restores the tracked files (the symlink is replaced by a folder) on the view's say-so
    expect(view.protectedPristine(PROTECTED)).toBe(true);
  });

  it("an ignored file dropped into a protected folder sends the check to git", async () => {
    const { wt, view } = await fixture();
    writeFileSync(join(wt.path, "tests", "run.log"), "x\n");
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    // git does not report an ignored file; the view only declines to answer
    expect((await restoreProtected(wt.git, PROTECTED, undefined, view)).changed).toEqual([]);
  });
});

describe("WorktreeView: beyond its limits git answers", () => {
  it("more than 1 MiB of protected files: nothing kept, every check and restore by git", async () => {
    const r = makeRepo();
    cleanups.push(() => r.remove());
    mkdirSync(join(r.repo, "tests"));
    writeFileSync(join(r.repo, "tests", "a.sh"), "echo a\n");
    writeFileSync(join(r.repo, "tests", "b.sh"), "echo b\n");
    writeFileSync(join(r.repo, "tests", "fixture.bin"), Buffer.alloc(1024 * 1024 + 1, 7));
    execFileSync("git", ["add", "-A"], { cwd: r.repo });
    execFileSync("git", ["commit", "-q", "-m", "big"], { cwd: r.repo });
    const wt = await worktrees.create(r.repo);
    cleanups.push(() => worktrees.remove(r.repo, wt));
    const view = WorktreeView.capture(wt.path, ALLOW, PROTECTED);
    expect(view.pristineHash).toBeUndefined();
    expect(view.protectedPristine(PROTECTED)).toBe(false);
    const clean = await restoreProtected(wt.git, PROTECTED, undefined, view);
    expect(clean.changed).toEqual([]);
    writeFileSync(join(wt.path, "tests", "a.sh"), "exit 0\n");
    const dirty = await restoreProtected(wt.git, PROTECTED, undefined, view);
    expect(dirty).toEqual({ changed: ["tests/a.sh"], hash: clean.hash });
    expect(readFileSync(join(wt.path, "tests", "a.sh"), "utf8")).toBe("echo a\n");
  });
});

describe("WorktreeView: new allowlisted files reach the patch", () => {
  it("a file the view has not seen is added (intent-to-add) and diffed", async () => {
    const { wt, view } = await fixture();
    writeFileSync(join(wt.path, "calc.sh"), "echo fixed\n");
    expect(view.allTracked(ALLOW)).toBe(true);
    expect(patchPaths(await diffAllowlisted(wt.git, ALLOW, undefined, view))).toEqual(["calc.sh"]);
    writeFileSync(join(wt.path, "src", "new.sh"), "new\n");
    expect(view.allTracked(ALLOW)).toBe(false);
    const patch = await diffAllowlisted(wt.git, ALLOW, undefined, view);
    expect(patchPaths(patch)).toEqual(["calc.sh", "src/new.sh"]);
    // now tracked (intent-to-add): the next round needs no ls-files, and the file stays in the patch
    expect(view.allTracked(ALLOW)).toBe(true);
    expect(await diffAllowlisted(wt.git, ALLOW, undefined, view)).toBe(patch);
  });

  it("after a restore to an earlier patch the index is HEAD's again: a new file is found again", async () => {
    const { wt, view } = await fixture();
    writeFileSync(join(wt.path, "src", "new.sh"), "new\n");
    const withNew = await diffAllowlisted(wt.git, ALLOW, undefined, view);
    await restoreTo(wt.git, ALLOW, withNew, undefined, view);
    // git apply wrote src/new.sh back, untracked in the reset index
    expect(view.allTracked(ALLOW)).toBe(false);
    expect(await diffAllowlisted(wt.git, ALLOW, undefined, view)).toBe(withNew);
  });

  it("a file turned into a folder of files, and a file in a new nested folder, are in the patch", async () => {
    const { wt, view } = await fixture();
    rmSync(join(wt.path, "src", "lib.sh"));
    mkdirSync(join(wt.path, "src", "lib.sh"));
    writeFileSync(join(wt.path, "src", "lib.sh", "inner.sh"), "x\n");
    mkdirSync(join(wt.path, "src", "deep", "er"), { recursive: true });
    writeFileSync(join(wt.path, "src", "deep", "er", "f.sh"), "y\n");
    const paths = patchPaths(await diffAllowlisted(wt.git, ALLOW, undefined, view));
    expect(paths).toEqual(["src/deep/er/f.sh", "src/lib.sh", "src/lib.sh/inner.sh"]);
  });

  it("the view and git alone give the same patch, ignored files left out by both", async () => {
    const { wt, view } = await fixture();
    writeFileSync(join(wt.path, "src", "debug.log"), "ignored\n");
    writeFileSync(join(wt.path, "src", "kept.sh"), "kept\n");
    const viaView = await diffAllowlisted(wt.git, ALLOW, undefined, view);
    expect(patchPaths(viaView)).toEqual(["src/kept.sh"]);
    expect(await diffAllowlisted(wt.git, ALLOW)).toBe(viaView);
  });
});

describe("WorktreeView.fingerprint: equal exactly when git's allowlist diff is", () => {
  it("follows the bytes and the executable bit, not the other permission bits", async () => {
    const { wt, view } = await fixture();
    const fp = () => view.fingerprint(ALLOW, true);
    const diff = () => diffAllowlisted(wt.git, ALLOW, undefined, view);
    const start = fp();
    expect(start).toBeDefined();
    chmodSync(join(wt.path, "calc.sh"), 0o600); // git records no difference
    expect(fp()).toBe(start);
    expect(await diff()).toBe("");
    chmodSync(join(wt.path, "calc.sh"), 0o755);
    const exec = fp();
    expect(exec).not.toBe(start);
    expect(await diff()).toMatch(/new mode 100755/);
    writeFileSync(join(wt.path, "src", "lib.sh"), "lib2\n");
    expect(fp()).not.toBe(exec);
    writeFileSync(join(wt.path, "src", "lib.sh"), "lib\n");
    expect(fp()).toBe(exec);
  });

  it("cannot tell (undefined) with a file git does not diff yet, a .gitattributes above, or converting settings", async () => {
    const { wt, view } = await fixture();
    expect(view.fingerprint(ALLOW, false)).toBeUndefined();
    writeFileSync(join(wt.path, "src", "new.sh"), "new\n");
    expect(view.fingerprint(ALLOW, true)).toBeUndefined();
    rmSync(join(wt.path, "src", "new.sh"));
    expect(view.fingerprint(ALLOW, true)).toBeDefined();
    writeFileSync(join(wt.path, ".gitattributes"), "*.sh text eol=crlf\n");
    expect(view.fingerprint(ALLOW, true)).toBeUndefined();
    rmSync(join(wt.path, ".gitattributes"));
    writeFileSync(join(wt.path, "src", ".gitattributes"), "lib.sh -diff\n");
    expect(view.fingerprint(ALLOW, true)).toBeUndefined();
  });

  it("rawDiffSettings: only settings under which git compares bytes and modes as they are", () => {
    expect(rawDiffSettings([])).toBe(true);
    expect(rawDiffSettings(undefined)).toBe(false);
    expect(rawDiffSettings([["core.autocrlf", "false"]])).toBe(true);
    expect(rawDiffSettings([["core.autocrlf", "input"]])).toBe(false);
    expect(rawDiffSettings([["core.autocrlf", "true"]])).toBe(false);
    expect(rawDiffSettings([["core.filemode", "false"]])).toBe(false);
    expect(rawDiffSettings([["core.symlinks", "no"]])).toBe(false);
    expect(
      rawDiffSettings([
        ["core.filemode", "true"],
        ["core.ignorecase", "true"],
      ]),
    ).toBe(true);
  });
});
