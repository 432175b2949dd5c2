/**
 * Disposable worktrees (`git worktree add --detach` under `os.tmpdir()`) behind the
 * {@link Worktrees} interface, and the "source unchanged" proof: a snapshot of everything a
 * worktree shares with its source (HEAD, status, refs, config, hooks, stash, worktree list).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ProcessRunner } from "../exec/index.js";
import { realProcessRunner } from "../exec/index.js";
import { git, gitRun } from "./git.js";
import { WORKTREE_PREFIX } from "./limits.js";

/** Creates and removes disposable worktrees of a source repository. */
export interface Worktrees {
  /** Creates a detached worktree of `HEAD` outside the source; returns its absolute path. */
  create(source: string): Promise<string>;
  /** Removes it (`git worktree remove --force`, then prune); never throws. */
  remove(source: string, path: string): Promise<void>;
}

/** The real adapter: git worktrees under `os.tmpdir()` named `ratchet-runner-<pid>-…`. */
export function gitWorktrees(runner: ProcessRunner = realProcessRunner): Worktrees {
  return {
    async create(source) {
      const parent = mkdtempSync(join(realpathSync(tmpdir()), `${WORKTREE_PREFIX}${process.pid}-`));
      const path = join(parent, "wt");
      try {
        await git(["worktree", "add", "--detach", path, "HEAD"], source, runner);
      } catch (err) {
        rmSync(parent, { recursive: true, force: true });
        throw err;
      }
      return path;
    },
    async remove(source, path) {
      await gitRun(["worktree", "remove", "--force", path], source, runner);
      rmSync(resolve(path, ".."), { recursive: true, force: true });
      await gitRun(["worktree", "prune"], source, runner);
    },
  };
}

/** What a worktree could change in its source without `git status` noticing. */
export interface SourceSnapshot {
  head: string;
  status: string;
  refs: string;
  configHash: string;
  hooks: string;
  stash: string;
  worktrees: string;
}

function sha(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function hashDir(dir: string, prefix = ""): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    const st = statSync(full);
    if (st.isDirectory()) out.push(...hashDir(full, `${prefix}${name}/`));
    else out.push(`${prefix}${name} ${st.mode.toString(8)} ${sha(readFileSync(full))}`);
  }
  return out;
}

/**
 * Takes the snapshot. `ignore`: absolute paths excluded from the worktree list (ours) and from the
 * status (an output folder inside the source).
 */
export async function snapshotSource(
  source: string,
  ignore: readonly string[] = [],
  runner: ProcessRunner = realProcessRunner,
): Promise<SourceSnapshot> {
  const common = resolve(source, (await git(["rev-parse", "--git-common-dir"], source, runner)).trim());
  const top = (await git(["rev-parse", "--show-toplevel"], source, runner)).trim();
  const ignoredRel = ignore
    .map((p) => (p.startsWith(`${top}/`) ? p.slice(top.length + 1) : undefined))
    .filter((p): p is string => p !== undefined);
  const head = (await gitRun(["rev-parse", "HEAD"], source, runner)).stdout.trim();
  const status = (await git(["status", "--porcelain=v1", "--untracked-files=all"], source, runner))
    .split("\n")
    .filter((l) => l !== "" && !ignoredRel.some((p) => l.slice(3) === p || l.slice(3).startsWith(`${p}/`)))
    .join("\n");
  const refs = await git(["for-each-ref", "--format=%(refname) %(objectname)"], source, runner);
  const configPath = join(common, "config");
  const configHash = existsSync(configPath) ? sha(readFileSync(configPath)) : "";
  const hooks = hashDir(join(common, "hooks")).join("\n");
  const stash = (await gitRun(["stash", "list"], source, runner)).stdout;
  const wt = await git(["worktree", "list", "--porcelain"], source, runner);
  const ours = ignore.flatMap((p) => [p, existsSync(p) ? realpathSync(p) : p]);
  const worktrees = wt
    .split("\n\n")
    .filter((block) => {
      const line = block.split("\n").find((l) => l.startsWith("worktree "));
      const path = line?.slice("worktree ".length) ?? "";
      return block.trim() !== "" && !ours.includes(path);
    })
    .join("\n\n");
  return { head, status, refs, configHash, hooks, stash, worktrees };
}

/** The fields that differ between two snapshots (empty: the source is unchanged). Pure. */
export function compareSnapshots(before: SourceSnapshot, after: SourceSnapshot): string[] {
  const keys = Object.keys(before) as (keyof SourceSnapshot)[];
  return keys.filter((k) => before[k] !== after[k]);
}
