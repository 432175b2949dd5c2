/**
 * The worktree's state as a patch: computed from git (`git diff --binary HEAD -- <allowlist>`,
 * new files included through intent-to-add), never from what the model says; restoring the
 * worktree to a patch; pristine protected paths. Every call goes through the worktree's
 * {@link PinnedRepo} (Ratchet's private git dir and index), never through its `.git` file.
 */
import { createHash } from "node:crypto";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import { type PinnedRepo, pinnedGit, pinnedGitRun } from "./git.js";
import { inList } from "./spec.js";

const literal = (paths: readonly string[]) => paths.map((p) => `:(literal)${p}`);

/** The allowlist-scoped diff of the worktree against HEAD (binary-safe; "" when unchanged). */
export async function diffAllowlisted(
  worktree: PinnedRepo,
  allowlist: readonly string[],
  runner: ProcessRunner = realProcessRunner,
): Promise<string> {
  const untracked = (
    await pinnedGit(
      ["ls-files", "-z", "--others", "--exclude-standard", "--", ...literal(allowlist)],
      worktree,
      runner,
    )
  )
    .split("\0")
    .filter(Boolean);
  if (untracked.length > 0) await pinnedGit(["add", "-N", "--", ...literal(untracked)], worktree, runner);
  return pinnedGit(
    [
      "diff",
      "--binary",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "--ignore-submodules=all",
      "HEAD",
      "--",
      ...literal(allowlist),
    ],
    worktree,
    runner,
  );
}

/** The paths a patch touches (both sides of `diff --git a/X b/Y`). Pure. */
export function patchPaths(patch: string): string[] {
  const out = new Set<string>();
  for (const m of patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) {
    out.add(unquote(m[1] as string));
    out.add(unquote(m[2] as string));
  }
  for (const m of patch.matchAll(/^(?:rename|copy) (?:from|to) (.+)$/gm)) out.add(unquote(m[1] as string));
  return [...out].sort();
}

function unquote(p: string): string {
  return p.startsWith('"') ? (JSON.parse(p) as string).replace(/^[ab]\//, "") : p;
}

/** Paths of the patch outside the allowlist (must be empty before export). Pure. */
export function pathsOutside(patch: string, allowlist: readonly string[]): string[] {
  return patchPaths(patch).filter((p) => !inList(p, allowlist));
}

export function hashText(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** Puts the worktree back to HEAD in the allowlist, then applies `patch`. */
export async function restoreTo(
  worktree: PinnedRepo,
  allowlist: readonly string[],
  patch: string,
  runner: ProcessRunner = realProcessRunner,
): Promise<void> {
  await pinnedGit(["reset", "-q"], worktree, runner);
  await pinnedGit(["checkout", "-q", "HEAD", "--", "."], worktree, runner);
  await pinnedGitRun(["clean", "-fdq", "--", ...literal(allowlist)], worktree, runner);
  if (patch !== "")
    await pinnedGit(["apply", "--binary", "--whitespace=nowarn", "-"], worktree, runner, patch);
}

/**
 * Restores protected paths to their HEAD copies (and removes files added under them). Returns the
 * paths that had changed, and a hash of the pristine contents.
 */
export async function restoreProtected(
  worktree: PinnedRepo,
  protectedPaths: readonly string[],
  runner: ProcessRunner = realProcessRunner,
): Promise<{ changed: string[]; hash: string }> {
  if (protectedPaths.length === 0) return { changed: [], hash: "" };
  const spec = literal(protectedPaths);
  const status = await pinnedGit(
    ["status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=all", "--", ...spec],
    worktree,
    runner,
  );
  const changed = status
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(3));
  if (changed.length > 0) {
    const tracked = (await pinnedGit(["ls-files", "-z", "--", ...spec], worktree, runner))
      .split("\0")
      .filter(Boolean);
    if (tracked.length > 0)
      await pinnedGit(["checkout", "-q", "HEAD", "--", ...literal(tracked)], worktree, runner);
    await pinnedGitRun(["clean", "-fdq", "--", ...spec], worktree, runner);
  }
  const tree = await pinnedGitRun(["ls-tree", "-r", "HEAD", "--", ...spec], worktree, runner);
  return { changed, hash: hashText(tree.stdout) };
}
