/**
 * The registered project a folder belongs to: the one whose repository holds it (the deepest when
 * repositories nest). The one rule of every provenance edge that infers the project from a
 * folder — the prompt hook, `note`/`reference add`, `why`, `graph`. Pure over the project rows, so
 * the hook can use it without loading the store.
 */
import { realpathSync } from "node:fs";
import { resolve, sep } from "node:path";

/** The name of the project whose `repo_path` holds `path` (symlinks resolved), if any. */
export function projectHolding(
  projects: readonly { name: string; repo_path: string | null }[],
  path: string,
): string | undefined {
  let p: string;
  try {
    p = realpathSync(path);
  } catch {
    p = resolve(path);
  }
  let best: { name: string; repo: string } | undefined;
  for (const r of projects) {
    if (!r.repo_path) continue;
    const repo = r.repo_path.endsWith(sep) ? r.repo_path.slice(0, -1) : r.repo_path;
    if ((p === repo || p.startsWith(repo + sep)) && (!best || repo.length > best.repo.length))
      best = { name: r.name, repo };
  }
  return best?.name;
}
