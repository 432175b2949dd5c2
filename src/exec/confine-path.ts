/**
 * The one path confinement of Ratchet: a model- or script-given path resolved inside a root (the
 * runner's worktree, the Builder's code folder), or refused. One semantics for every caller:
 *
 * - empty paths are refused;
 * - relative paths are resolved against the root; absolute paths are accepted only with
 *   `allowAbsolute` and only inside the root;
 * - a `..` that leaves the root is refused;
 * - symbolic links are followed only while they stay inside the root: the deepest existing
 *   ancestor is resolved, and a link leading out is refused; in `write` mode the path itself may
 *   not be a symbolic link at all (a write must not go through one);
 * - `forbidden` first segments (`.git` for the runner, `fix-diffs` for the Builder) are refused,
 *   both as given and after resolution.
 *
 * The result is the real path (`abs`), its `/`-separated path relative to the real root (`rel`),
 * and the path as given relative to the root (`givenRel`; differs from `rel` through a link).
 */

import { lstatSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** A path refused by {@link confinePath}; the message says why, naming the path. */
export class PathRefused extends Error {
  override readonly name = "PathRefused";
}

export interface ConfinePathOptions {
  mode: "read" | "write";
  /** Accept absolute paths that lie inside the root. Default false. */
  allowAbsolute?: boolean;
  /** First path segments that are refused (`.git`). */
  forbidden?: readonly string[];
  /** How the root is named in refusals (`worktree`, `folder`). Default `folder`. */
  rootName?: string;
}

function relInside(root: string, abs: string): string | undefined {
  const rel = relative(root, abs);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return rel.split(sep).join("/");
}

/** The real path of `p`, or of its deepest existing ancestor joined with the rest. */
function realish(p: string): string {
  let cur = p;
  const rest: string[] = [];
  while (!statSync(cur, { throwIfNoEntry: false })) {
    const parent = dirname(cur);
    if (parent === cur) break;
    rest.unshift(cur.slice(parent.length + 1));
    cur = parent;
  }
  return resolve(realpathSync(cur), ...rest);
}

/**
 * Resolves `path` inside `root` (see the module comment for the rules).
 * @throws PathRefused naming the path and the reason.
 */
export function confinePath(
  root: string,
  path: string,
  opts: ConfinePathOptions,
): { abs: string; rel: string; givenRel: string } {
  const where = opts.rootName ?? "folder";
  if (path.trim() === "") throw new PathRefused(`${JSON.stringify(path)} is not a path`);
  if (isAbsolute(path) && !opts.allowAbsolute)
    throw new PathRefused(`${path} must be a path relative to the ${where}`);
  const realRoot = realpathSync(root);
  // An absolute path may name the root as given or as resolved.
  const base =
    isAbsolute(path) && relInside(resolve(root), resolve(path)) !== undefined ? resolve(root) : realRoot;
  const given = resolve(base, path);
  const rel = relInside(base, given);
  if (rel === undefined) throw new PathRefused(`${path} is outside the ${where}`);
  const lexical = resolve(realRoot, rel);
  const real = realish(lexical);
  const realRel = relInside(realRoot, real);
  if (realRel === undefined)
    throw new PathRefused(`${path} resolves outside the ${where} through a symbolic link (symlink)`);
  if (opts.mode === "write" && lstatSync(lexical, { throwIfNoEntry: false })?.isSymbolicLink())
    throw new PathRefused(`${path} is a symbolic link`);
  for (const r of [rel, realRel]) {
    const first = r.split("/")[0] ?? "";
    if (opts.forbidden?.includes(first))
      throw new PathRefused(`${path} is inside ${first}/, which is not yours to change`);
  }
  return { abs: real, rel: realRel, givenRel: rel };
}
