/**
 * Disposable worktrees (`git worktree add --detach` under `os.tmpdir()`) behind the
 * {@link Worktrees} interface, and the "source unchanged" proof: a snapshot of everything a
 * worktree shares with its source (HEAD, status, refs, config, hooks, stash, worktree list).
 * Every git process costs a fork of this (large) process, so the git state is read in as few
 * calls as git allows (one `rev-parse` for the layout, one `show-ref` for HEAD and every ref) and
 * from the files git itself reads where that is the same thing.
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
import { rm, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { ProcessRunner, RunResult } from "../exec/index.js";
import { realProcessRunner } from "../exec/index.js";
import {
  checkedOutput,
  git,
  gitRun,
  PINNED_GIT_CONFIG,
  type PinnedRepo,
  pinnedGit,
  pinnedGitRun,
} from "./git.js";
import { WORKTREE_PREFIX } from "./limits.js";

/**
 * Where the source's git state lives, read with one `git rev-parse` (preflight does it; see
 * {@link readRepoLayout}). Everything here is the source's own, read before any command ran.
 */
export interface RepoLayout {
  /** The working tree's root (`--show-toplevel`). */
  top: string;
  /** The source's own git dir (`--absolute-git-dir`; its `HEAD`). */
  gitDir: string;
  /** The common git dir (config, hooks, refs, `worktrees/`). */
  common: string;
  /** `objects` (what the private git dir borrows through `alternates`). */
  objects: string;
  /** `info/exclude`. */
  exclude: string;
  /** The commit of `HEAD`, or `undefined` when there is none. */
  head: string | undefined;
}

/** The arguments of the one `git rev-parse` that reads a {@link RepoLayout} (in this order). */
export const LAYOUT_ARGS = [
  "rev-parse",
  "--show-toplevel",
  "--absolute-git-dir",
  "--git-common-dir",
  "--git-path",
  "objects",
  "--git-path",
  "info/exclude",
  "--verify",
  "-q",
  "HEAD^{commit}",
] as const;

/**
 * Parses the output of {@link LAYOUT_ARGS} run in `source` (exit 0, or 1 when `HEAD` is missing).
 * `undefined` when git did not print all four paths. Pure.
 */
export function parseRepoLayout(source: string, stdout: string): RepoLayout | undefined {
  const lines = stdout.split("\n");
  const [top, gitDir, common, objects, exclude, head] = lines;
  if (!top || !gitDir || !common || !objects || !exclude) return undefined;
  return {
    top,
    gitDir,
    common: resolve(source, common),
    objects: resolve(source, objects),
    exclude: resolve(source, exclude),
    head: head && /^[0-9a-f]{40,64}$/.test(head) ? head : undefined,
  };
}

/**
 * Reads the layout of `source` with one git call.
 * @throws RatchetError `work_failed` when `source` is not a git working tree.
 */
export async function readRepoLayout(
  source: string,
  runner: ProcessRunner = realProcessRunner,
): Promise<RepoLayout> {
  const r = await gitRun(LAYOUT_ARGS, source, runner);
  const layout = r.exitCode === 0 || r.exitCode === 1 ? parseRepoLayout(source, r.stdout) : undefined;
  if (!layout) {
    throw new RatchetError(
      ErrorCode.WorkFailed,
      `git rev-parse failed in ${source}: ${r.spawnError?.message ?? (r.stderr.trim() || `exit ${r.exitCode}`)}`,
      { cwd: source },
    );
  }
  return layout;
}

/**
 * What every worktree of one task is made from, read from the source once, before any command
 * ran: the commit (the "before" snapshot's `HEAD`), where the objects are, `info/exclude` and the
 * copied settings. The task's second worktree (the proof) is made from the same base, so nothing
 * a command did in between can reach it.
 */
export interface WorktreeBase {
  commit: string;
  objects: string;
  /** The common git dir (its `worktrees/` holds the admin folders). */
  common: string;
  exclude: Buffer;
  /** The source settings copied into the private config ({@link COPIED_CONFIG}). */
  copied: readonly (readonly [string, string])[];
}

/** A disposable worktree and the private git dir Ratchet's own git calls use for it. */
export interface Worktree {
  /** The worktree folder (its `.git` file points at `adminDir`, for the commands run in it). */
  path: string;
  /** `<source>/.git/worktrees/<name>`: commands may write there; Ratchet never reads it. */
  adminDir: string;
  /** What Ratchet's own git calls use (see {@link PinnedRepo}). */
  git: PinnedRepo;
  /** What it was made from (give it to the next `create` of the same task). */
  base?: WorktreeBase;
}

/** Creates and removes disposable worktrees of a source repository. */
export interface Worktrees {
  /**
   * Creates a detached worktree outside the source: of `base.commit` when a base is given (the
   * base of an earlier worktree of the same task, or one made from a {@link RepoLayout}), else of
   * `HEAD` as it is now.
   */
  create(source: string, base?: WorktreeBase | RepoLayout): Promise<Worktree>;
  /** Removes it (the folder, its admin folder, the private git dir); never throws. */
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

/** The copied settings of `source` (one `git config` call; it only reads). */
export async function readCopiedConfig(source: string, runner: ProcessRunner): Promise<[string, string][]> {
  const listed = await gitRun(["config", "-z", "--get-regexp", COPIED_CONFIG.source], source, runner);
  return listed.stdout
    .split("\0")
    .filter(Boolean)
    .map((entry): [string, string] => {
      const nl = entry.indexOf("\n");
      return nl < 0 ? [entry, "true"] : [entry.slice(0, nl), entry.slice(nl + 1)];
    });
}

function isBase(b: WorktreeBase | RepoLayout): b is WorktreeBase {
  return "commit" in b;
}

/**
 * The base of a new worktree: `given` when it is one; else made from a layout (or a fresh
 * `git rev-parse`) and the copied config. The config is read while `checkout` (the
 * `git worktree add` of the commit) runs, so the two processes overlap.
 */
async function withBase(
  source: string,
  given: WorktreeBase | RepoLayout | undefined,
  runner: ProcessRunner,
  checkout: (commit: string, common: string) => Promise<unknown>,
): Promise<WorktreeBase> {
  if (given && isBase(given)) {
    await checkout(given.commit, given.common);
    return given;
  }
  const layout = given ?? (await readRepoLayout(source, runner));
  const commit = layout.head;
  if (commit === undefined)
    throw new RatchetError(ErrorCode.WorkFailed, `${source} has no commit (HEAD does not exist)`, {
      cwd: source,
    });
  const [copied] = await Promise.all([readCopiedConfig(source, runner), checkout(commit, layout.common)]);
  return worktreeBase(layout, commit, copied);
}

/**
 * The base of a task's worktrees from the source's layout, the commit and the copied settings
 * ({@link readCopiedConfig}), read before any worktree exists; `info/exclude` is read now.
 */
export function worktreeBase(
  layout: RepoLayout,
  commit: string,
  copied: readonly (readonly [string, string])[],
): WorktreeBase {
  const exclude = existsSync(layout.exclude) ? readFileSync(layout.exclude) : Buffer.alloc(0);
  return { commit, objects: layout.objects, common: layout.common, exclude, copied };
}

/**
 * Checks `commit` out into a new linked worktree at `path` (which must not exist) and returns its
 * admin folder: what `git worktree add --detach` does, in one git process instead of three (its
 * own, `update-ref` and `reset --hard`). The admin folder `<common>/worktrees/wt-XXXXXX` gets the
 * files git's own command writes (`gitdir`, `commondir`, a detached `HEAD`; `locked` while it is
 * made, so a concurrent `git worktree prune` leaves it alone), the worktree its `.git` file, and
 * then `git read-tree --reset -u` checks the commit out through that admin folder, exactly as
 * `reset --hard` would there: the source's settings, attributes and filters (LFS), no hook, no
 * fsmonitor, no submodule. Its index, with the stat data of every file, is the one the worktree's
 * own git then uses.
 */
async function checkOut(
  path: string,
  commit: string,
  common: string,
  runner: ProcessRunner,
): Promise<string> {
  mkdirSync(path);
  const worktrees = join(realpathSync(common), "worktrees");
  mkdirSync(worktrees, { recursive: true });
  const admin = mkdtempSync(join(worktrees, "wt-"));
  try {
    writeFileSync(join(admin, "locked"), "initializing\n");
    writeFileSync(join(admin, "commondir"), "../..\n");
    writeFileSync(join(admin, "gitdir"), `${join(path, ".git")}\n`);
    writeFileSync(join(admin, "HEAD"), `${commit}\n`);
    writeFileSync(join(path, ".git"), `gitdir: ${admin}\n`);
    await git(
      [
        "--git-dir",
        admin,
        "--work-tree",
        path,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "read-tree",
        "--reset",
        "-u",
        "--no-recurse-submodules",
        commit,
      ],
      path,
      runner,
    );
    rmSync(join(admin, "locked"));
    return admin;
  } catch (err) {
    await removeWorktree(path, admin);
    throw err;
  }
}

/**
 * Makes the private git dir of a new worktree (see {@link PinnedRepo}) from `base` and fills its
 * index: a copy of the one the checkout ({@link checkOut}) just wrote in the admin folder (nothing else has
 * written there yet), which has the stat data of every checked-out file. The copy is newer than
 * every checkout write, and nothing writes the worktree before it is made, so its stat data are
 * exact (no entry needs hashing again, and no refresh is run). A split index (whose shared part
 * stays in the admin folder) is not copied: the index is built from HEAD and refreshed instead.
 */
async function makePrivateGitDir(
  base: WorktreeBase,
  gitDir: string,
  workTree: string,
  adminDir: string,
  runner: ProcessRunner,
): Promise<PinnedRepo> {
  mkdirSync(join(gitDir, "objects", "info"), { recursive: true, mode: 0o700 });
  mkdirSync(join(gitDir, "refs", "heads"), { recursive: true });
  mkdirSync(join(gitDir, "info"), { recursive: true });
  writeFileSync(join(gitDir, "HEAD"), `${base.commit}\n`);
  writeFileSync(join(gitDir, "objects", "info", "alternates"), `${base.objects}\n`);
  writeFileSync(join(gitDir, "config"), privateConfig(base.copied));
  writeFileSync(join(gitDir, "info", "exclude"), base.exclude);
  const repo = { gitDir, workTree };
  const index = join(gitDir, "index");
  const fromAdmin = join(adminDir, "index");
  const split = readdirSync(adminDir).some((n) => n.startsWith("sharedindex."));
  if (!split && existsSync(fromAdmin)) {
    copyFileSync(fromAdmin, index);
    return repo;
  }
  await pinnedGit(["read-tree", "HEAD"], repo, runner);
  // stat data for the checked-out files (a failure only makes later diffs compare contents)
  await pinnedGitRun(["update-index", "-q", "--refresh"], repo, runner);
  return repo;
}

/**
 * The real adapter: git worktrees under `os.tmpdir()` named `ratchet-runner-<pid>-…/wt`, with the
 * private git dir beside them (`…/git`). The source's hooks do not run for Ratchet's worktree.
 * One git process per worktree when the task's base is given (the checkout, {@link checkOut});
 * without it, `rev-parse` and `git config` run beside the checkout.
 */
export function gitWorktrees(runner: ProcessRunner = realProcessRunner): Worktrees {
  return {
    async create(source, given) {
      const parent = mkdtempSync(join(realpathSync(tmpdir()), `${WORKTREE_PREFIX}${process.pid}-`));
      const path = join(parent, "wt");
      let adminDir: string | undefined;
      try {
        const base = await withBase(source, given, runner, async (commit, common) => {
          adminDir = await checkOut(path, commit, common, runner);
        });
        const admin = adminDir as string;
        try {
          const repo = await makePrivateGitDir(base, join(parent, "git"), path, admin, runner);
          return { path, adminDir: admin, git: repo, base };
        } catch (err) {
          await removeWorktree(path, admin);
          throw err;
        }
      } catch (err) {
        rmSync(parent, { recursive: true, force: true });
        throw err;
      }
    },
    async remove(_source, wt) {
      await removeWorktree(wt.path, wt.adminDir);
      await rm(resolve(wt.path, ".."), { recursive: true, force: true });
    },
  };
}

/**
 * Removes a worktree without letting git read its admin folder (a command may have rewritten it):
 * the folders are deleted directly (symlinks in them are unlinked, never followed). That is all
 * `git worktree prune` would do for it (the entry is its admin folder), so git is not run: its
 * prune would also drop the user's own stale worktree entries, which are not ours to touch. The
 * `worktrees/` folder goes when it is left empty, as git's prune does.
 */
async function removeWorktree(path: string, adminDir: string): Promise<void> {
  // off the main thread: the folders go while the task does its next step
  await Promise.all([
    rm(path, { recursive: true, force: true }),
    rm(adminDir, { recursive: true, force: true }),
  ]);
  if (basename(dirname(adminDir)) !== "worktrees") return;
  try {
    await rmdir(dirname(adminDir));
  } catch {
    // not empty (other worktrees) or already gone
  }
}

/** The snapshot's one call for `HEAD` and every ref. */
export const SHOW_REF_ARGS = ["show-ref", "--head"] as const;

/** The source's status as preflight and the snapshots read it. */
export const STATUS_ARGS = ["status", "--porcelain=v1", "--untracked-files=all"] as const;

/** A snapshot's two git calls, started ahead of its file reads (see {@link startSnapshotReads}). */
export interface SnapshotReads {
  shown: Promise<RunResult>;
  status: Promise<string>;
  /** Resolves once both calls are over (never rejects). */
  settled(): Promise<void>;
}

/**
 * Starts the git calls of a snapshot of `source` now; {@link snapshotSource} takes them
 * (`known`) and reads the files when it runs. For a caller that knows nothing can change what
 * these calls read until the files are read.
 */
export function startSnapshotReads(source: string, runner: ProcessRunner = realProcessRunner): SnapshotReads {
  const shown = gitRun(SHOW_REF_ARGS, source, runner);
  const status = gitRun(STATUS_ARGS, source, runner).then((r) => checkedOutput(r, STATUS_ARGS, source));
  return {
    shown,
    status,
    settled: async () => {
      await Promise.all([shown.catch(() => undefined), status.catch(() => undefined)]);
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
 * The linked worktrees of the source as `git worktree list --porcelain` sees them, read from their
 * admin folders in `<common>/worktrees/`: name, the worktree path (`gitdir`), whether it still
 * exists (prunable), HEAD and the lock. Entries whose worktree is in `ours` are left out.
 */
function worktreeEntries(common: string, ours: readonly string[]): string {
  const dir = join(common, "worktrees");
  if (!existsSync(dir)) return "";
  const read = (f: string) => (existsSync(f) ? readFileSync(f, "utf8") : "-");
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const admin = join(dir, name);
    const gitdir = read(join(admin, "gitdir")).trim();
    const path = dirname(gitdir);
    if (ours.includes(path)) continue;
    const lock = existsSync(join(admin, "locked")) ? `locked ${read(join(admin, "locked"))}` : "unlocked";
    out.push(`${name}\0${gitdir}\0${existsSync(gitdir)}\0${read(join(admin, "HEAD")).trim()}\0${lock}`);
  }
  return out.join("\n");
}

/**
 * Takes the snapshot: two git processes (`show-ref --head`, `status`), run side by side; the rest
 * is read from the files git itself reads (config, hooks, the stash's reflog, the worktrees' admin
 * folders and `HEAD`). `ignore`: absolute paths excluded from the worktree list (ours) and from
 * the status (an output folder inside the source). `known`: the layout (from preflight) and the
 * status preflight just read, so the "before" snapshot does not read them again.
 */
export async function snapshotSource(
  source: string,
  ignore: readonly string[] = [],
  runner: ProcessRunner = realProcessRunner,
  known: { layout?: RepoLayout; status?: string | Promise<string>; shown?: Promise<RunResult> } = {},
): Promise<SourceSnapshot> {
  const layout = known.layout ?? (await readRepoLayout(source, runner));
  const { top, common } = layout;
  const ignoredRel = ignore
    .map((p) => (p.startsWith(`${top}/`) ? p.slice(top.length + 1) : undefined))
    .filter((p): p is string => p !== undefined);
  // The stash's entries are the reflog of refs/stash (what `git stash list` prints), a file
  // unless the refs live in a reftable.
  const reftable = existsSync(join(common, "reftable"));
  const [shown, rawStatus, stashList] = await Promise.all([
    known.shown ?? gitRun(SHOW_REF_ARGS, source, runner),
    known.status ?? git(STATUS_ARGS, source, runner),
    reftable ? gitRun(["stash", "list"], source, runner) : undefined,
  ]);
  const status = rawStatus
    .split("\n")
    .filter((l) => l !== "" && !ignoredRel.some((p) => l.slice(3) === p || l.slice(3).startsWith(`${p}/`)))
    .join("\n");
  const lines = shown.stdout.split("\n").filter(Boolean);
  const head = lines.find((l) => l.endsWith(" HEAD"))?.slice(0, -" HEAD".length) ?? "";
  const refs = lines.filter((l) => !l.endsWith(" HEAD")).join("\n");
  const configPath = join(common, "config");
  const configHash = existsSync(configPath) ? sha(readFileSync(configPath)) : "";
  const hooks = hashDir(join(common, "hooks")).join("\n");
  const stashLog = join(common, "logs", "refs", "stash");
  const stash = stashList ? stashList.stdout : existsSync(stashLog) ? sha(readFileSync(stashLog)) : "";
  const ours = ignore.flatMap((p) => [p, existsSync(p) ? realpathSync(p) : p]);
  // The main worktree's own HEAD file: which branch it is on, not only the commit.
  const headFile = join(layout.gitDir, "HEAD");
  const worktrees = [
    existsSync(headFile) ? readFileSync(headFile, "utf8").trim() : "",
    worktreeEntries(common, ours),
  ].join("\n");
  return { head, status, refs, configHash, hooks, stash, worktrees };
}

/** The fields that differ between two snapshots (empty: the source is unchanged). Pure. */
export function compareSnapshots(before: SourceSnapshot, after: SourceSnapshot): string[] {
  const keys = Object.keys(before) as (keyof SourceSnapshot)[];
  return keys.filter((k) => before[k] !== after[k]);
}
