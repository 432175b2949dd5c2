/**
 * Resolving a model-given path inside the worktree, for reading or for writing (allowlist), with
 * the one path confinement of `exec/` (`confinePath`: relative or absolute inside the worktree, no
 * `..` out, symbolic links only while they stay inside, never `.git`).
 */
import { confinePath, PathRefused } from "../exec/index.js";
import { inList } from "./spec.js";

export { PathRefused };

/**
 * Resolves `path` (relative to the worktree, or absolute inside it) for reading.
 * @throws PathRefused when it leaves the worktree (also through a symlink) or enters `.git`.
 */
export function resolveForRead(worktree: string, path: string): { abs: string; rel: string } {
  const { abs, rel } = confinePath(worktree, path, {
    mode: "read",
    allowAbsolute: true,
    forbidden: [".git"],
    rootName: "worktree",
  });
  return { abs, rel };
}

/**
 * Resolves `path` for writing: inside the worktree, not through a symbolic link, inside the
 * allowlist both as given and after resolution, and not a protected path.
 * @throws PathRefused naming the path and the reason.
 */
export function resolveForWrite(
  worktree: string,
  path: string,
  allowlist: readonly string[],
  protectedPaths: readonly string[],
): { abs: string; rel: string } {
  const { abs, rel, givenRel } = confinePath(worktree, path, {
    mode: "write",
    allowAbsolute: true,
    forbidden: [".git"],
    rootName: "worktree",
  });
  for (const r of [givenRel, rel]) {
    if (!inList(r, allowlist))
      throw new PathRefused(`${path} is outside the allowlist (${allowlist.join(", ")})`);
    if (inList(r, protectedPaths)) throw new PathRefused(`${path} is a protected path`);
  }
  return { abs, rel };
}
