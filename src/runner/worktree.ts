/**
 * Disposable worktrees (`git worktree add --detach` under `os.tmpdir()`) behind the
 * {@link Worktrees} interface, and the "source unchanged" proof: a snapshot of everything a
 * worktree shares with its source (HEAD, status, refs, config, hooks, stash, worktree list).
 */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ProcessRunner } from "../exec/index.js";
import { realProcessRunner } from "../exec/index.js";
import { git, gitRun, PINNED_GIT_CONFIG, type PinnedRepo, pinnedGit, pinnedGitRun } from "./git.js";
import { WORKTREE_PREFIX } from "./limits.js";

/** A disposable worktree and the private git dir Ratchet's own git calls use for it. */
export interface Worktree {
  /** The worktree folder (its `.git` file points at `adminDir`, for the commands run in it). */
  path: string;
  /** `<source>/.git/worktrees/<name>`: commands may write there; Ratchet never reads it. */
  adminDir: string;
  /** What Ratchet's own git calls use (see {@link PinnedRepo}). */
  git: PinnedRepo;
}

/** Creates and removes disposable worktrees of a source repository. */
export interface Worktrees {
  /** Creates a detached worktree of `HEAD` outside the source. */
  create(source: string): Promise<Worktree>;
  /** Removes it (the folder, its admin folder, the private git dir, then prune); never throws. */
  remove(source: string, worktree: Worktree): Promise<void>;
}

/**
 * Source settings copied into the private config: how files are compared and written, never a
 * program (no driver, hook, fsmonitor, pager or command). Read from the source before any
 * command ran.
 */
const COPIED_CONFIG =
  /^(core\.(autocrlf|eol|filemode|symlinks|ignorecase|precomposeunicode|safecrlf|checkroundtripencoding|quotepath)|extensions\.objectformat)$/;

/** The private config: repository format, the copied source settings, then {@link PINNED_GIT_CONFIG}. Pure. */
export function privateConfig(copied: readonly (readonly [string, string])[]): string {
  const format = copied.find(([k]) => k === "extensions.objectformat")?.[1];
  const sections = new Map<string, string[]>([
    ["core", [`repositoryformatversion = ${format ? 1 : 0}`, "bare = false"]],
  ]);
  const put = (key: string, value: string) => {
    const dot = key.lastIndexOf(".");
    const section = key.slice(0, dot);
    sections.set(section, [...(sections.get(section) ?? []), `${key.slice(dot + 1)} = ${value}`]);
  };
  for (const [k, v] of copied) put(k, JSON.stringify(v));
  for (const c of PINNED_GIT_CONFIG) {
    const eq = c.indexOf("=");
    put(c.slice(0, eq), c.slice(eq + 1));
  }
  const lines = [
    "# Written by Ratchet for its own git calls in one disposable worktree; nothing else writes it.",
  ];
  for (const [section, entries] of sections) lines.push(`[${section}]`, ...entries.map((e) => `\t${e}`));
  return `${lines.join("\n")}\n`;
}

/**
 * Makes the private git dir of a new worktree (see {@link PinnedRepo}) from the source's state
 * (read now, before any command ran in the worktree) and fills its index from `commit`.
 */
async function makePrivateGitDir(
  source: string,
  gitDir: string,
  workTree: string,
  adminDir: string,
  commit: string,
  runner: ProcessRunner,
): Promise<PinnedRepo> {
  const objects = resolve(source, (await git(["rev-parse", "--git-path", "objects"], source, runner)).trim());
  const exclude = resolve(
    source,
    (await git(["rev-parse", "--git-path", "info/exclude"], source, runner)).trim(),
  );
  const listed = await gitRun(["config", "-z", "--get-regexp", COPIED_CONFIG.source], source, runner);
  const copied = listed.stdout
    .split("\0")
    .filter(Boolean)
    .map((entry): [string, string] => {
      const nl = entry.indexOf("\n");
      return nl < 0 ? [entry, "true"] : [entry.slice(0, nl), entry.slice(nl + 1)];
    });
  mkdirSync(join(gitDir, "objects", "info"), { recursive: true, mode: 0o700 });
  mkdirSync(join(gitDir, "refs", "heads"), { recursive: true });
  mkdirSync(join(gitDir, "info"), { recursive: true });
  writeFileSync(join(gitDir, "HEAD"), `${commit}\n`);
  writeFileSync(join(gitDir, "objects", "info", "alternates"), `${objects}\n`);
  writeFileSync(join(gitDir, "config"), privateConfig(copied));
  writeFileSync(join(gitDir, "info", "exclude"), existsSync(exclude) ? readFileSync(exclude) : "");
  const repo = { gitDir, workTree };
  // The index `git worktree add` just wrote (nothing else has written there yet) has the stat
  // data of every checked-out file: a copy saves hashing them all again. When it cannot be used
  // here (e.g. a split index whose shared part stays in the admin folder), build it from HEAD.
  const index = join(gitDir, "index");
  const fromAdmin = join(adminDir, "index");
  if (existsSync(fromAdmin)) copyFileSync(fromAdmin, index);
  const refresh = await pinnedGitRun(["update-index", "-q", "--refresh"], repo, runner);
  if (!existsSync(index) || refresh.exitCode === 128) {
    rmSync(index, { force: true });
    await pinnedGit(["read-tree", "HEAD"], repo, runner);
    // stat data for the checked-out files (a failure only makes later diffs compare contents)
    await pinnedGitRun(["update-index", "-q", "--refresh"], repo, runner);
  }
  return repo;
}

/**
 * The real adapter: git worktrees under `os.tmpdir()` named `ratchet-runner-<pid>-…/wt`, with the
 * private git dir beside them (`…/git`). The source's hooks do not run for Ratchet's worktree.
 */
export function gitWorktrees(runner: ProcessRunner = realProcessRunner): Worktrees {
  return {
    async create(source) {
      const parent = mkdtempSync(join(realpathSync(tmpdir()), `${WORKTREE_PREFIX}${process.pid}-`));
      const path = join(parent, "wt");
      try {
        const commit = (await git(["rev-parse", "--verify", "HEAD^{commit}"], source, runner)).trim();
        await git(
          [
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "worktree",
            "add",
            "--detach",
            path,
            commit,
          ],
          source,
          runner,
        );
        // Read once, now, while nothing but git has written in the worktree.
        const adminDir = (await git(["rev-parse", "--absolute-git-dir"], path, runner)).trim();
        try {
          const repo = await makePrivateGitDir(source, join(parent, "git"), path, adminDir, commit, runner);
          return { path, adminDir, git: repo };
        } catch (err) {
          await removeWorktree(source, path, adminDir, runner);
          throw err;
        }
      } catch (err) {
        rmSync(parent, { recursive: true, force: true });
        throw err;
      }
    },
    async remove(source, wt) {
      await removeWorktree(source, wt.path, wt.adminDir, runner);
      rmSync(resolve(wt.path, ".."), { recursive: true, force: true });
    },
  };
}

/**
 * Removes a worktree without letting git read its admin folder (a command may have rewritten it):
 * the folders are deleted directly (symlinks in them are unlinked, never followed), then
 * `git worktree prune` drops nothing but the now-missing entry.
 */
async function removeWorktree(source: string, path: string, adminDir: string, runner: ProcessRunner) {
  rmSync(path, { recursive: true, force: true });
  rmSync(adminDir, { recursive: true, force: true });
  await gitRun(["worktree", "prune"], source, runner);
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
