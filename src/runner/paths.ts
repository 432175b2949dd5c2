/** Resolving a model-given path inside the worktree, for reading or for writing (allowlist). */
import { existsSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { inList } from "./spec.js";

export class PathRefused extends Error {
  override readonly name = "PathRefused";
}

/** The real path of `p`, or of its deepest existing ancestor joined with the rest. */
function realish(p: string): string {
  let cur = p;
  const rest: string[] = [];
  while (!existsSync(cur)) {
    const parent = dirname(cur);
    if (parent === cur) break;
    rest.unshift(cur.slice(parent.length + 1));
    cur = parent;
  }
  return resolve(realpathSync(cur), ...rest);
}

function relInside(root: string, abs: string): string | undefined {
  const rel = relative(root, abs);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return rel.split(sep).join("/");
}

/**
 * Resolves `path` (relative to the worktree, or absolute inside it) for reading.
 * @throws PathRefused when it leaves the worktree (also through a symlink) or enters `.git`.
 */
export function resolveForRead(worktree: string, path: string): { abs: string; rel: string } {
  const root = realpathSync(worktree);
  const abs = resolve(root, path);
  const rel = relInside(root, abs);
  if (rel === undefined) throw new PathRefused(`${path} is outside the worktree`);
  const real = realish(abs);
  const realRel = relInside(root, real);
  if (realRel === undefined) throw new PathRefused(`${path} resolves outside the worktree (symlink)`);
  if (realRel === ".git" || realRel.startsWith(".git/") || rel === ".git" || rel.startsWith(".git/")) {
    throw new PathRefused(`${path} is inside .git`);
  }
  return { abs: real, rel: realRel };
}

/**
 * Resolves `path` for writing: inside the worktree, inside the allowlist both as given and after
 * following symlinks, and not a protected path.
 * @throws PathRefused naming the path and the reason.
 */
export function resolveForWrite(
  worktree: string,
  path: string,
  allowlist: readonly string[],
  protectedPaths: readonly string[],
): { abs: string; rel: string } {
  const root = realpathSync(worktree);
  const given = relInside(root, resolve(root, path));
  const { abs, rel } = resolveForRead(worktree, path);
  for (const r of [given, rel]) {
    if (r === undefined || !inList(r, allowlist)) {
      throw new PathRefused(`${path} is outside the allowlist (${allowlist.join(", ")})`);
    }
    if (inList(r, protectedPaths)) throw new PathRefused(`${path} is a protected path`);
  }
  return { abs, rel };
}
