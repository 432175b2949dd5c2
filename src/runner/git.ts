/** The runner's own git calls, through the one process runner (bounded, scrubbed environment). */
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  buildEnv,
  type ProcessRunner,
  type RunRequest,
  type RunResult,
  realProcessRunner,
} from "../exec/index.js";
import { COMMAND_CAPTURE_BYTES, GIT_TIMEOUT_MS } from "./limits.js";

/** Variables passed to git besides the minimal set (identity for commits, no prompts). */
const GIT_ENV_KEYS = [
  /^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$/,
  "GIT_CONFIG_NOSYSTEM",
  "GIT_CONFIG_GLOBAL",
];

/** The environment of the runner's git calls: minimal + git identity, never model keys. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const set: Record<string, string> = { GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" };
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined && GIT_ENV_KEYS.some((p) => (typeof p === "string" ? p === k : p.test(k))))
      set[k] = v;
  }
  return buildEnv({ inherit: "minimal", base, set });
}

/** Runs `git args` in `cwd`; the result as is (never throws for a git failure). */
export function gitRun(
  args: readonly string[],
  cwd: string,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<RunResult> {
  return runner.run({
    command: "git",
    args,
    cwd,
    env: gitEnv(),
    timeoutMs: GIT_TIMEOUT_MS,
    maxCaptureBytes: COMMAND_CAPTURE_BYTES * 64,
    ...(stdin === undefined ? {} : { stdin }),
  });
}

/**
 * Runs `git args` in `cwd` and returns stdout.
 * @throws RatchetError `work_failed` with git's stderr when git exits non-zero.
 */
export async function git(
  args: readonly string[],
  cwd: string,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<string> {
  return checkedOutput(await gitRun(args, cwd, runner, stdin), args, cwd);
}

/**
 * The stdout of a finished git call.
 * @throws RatchetError `work_failed` with git's stderr when git exits non-zero.
 */
export function checkedOutput(r: RunResult, args: readonly string[], cwd: string): string {
  if (r.exitCode !== 0) {
    const why = r.spawnError?.message ?? (r.stderr.trim() || r.stdout.trim() || `exit ${r.exitCode}`);
    throw new RatchetError(ErrorCode.WorkFailed, `git ${args.join(" ")} failed in ${cwd}: ${why}`, {
      cwd,
      args: [...args],
    });
  }
  return r.stdout;
}

/**
 * A worktree as Ratchet's own git calls see it. `gitDir` is a private git dir Ratchet made and
 * alone writes (outside every folder a command may write): its `HEAD` is the commit the worktree
 * was created at, its objects come from the source through `objects/info/alternates`, its index
 * is its own, and its config holds no program. The worktree's `.git` file, its admin folder
 * (`commondir`, `config.worktree`, HEAD, index) and every system or global git config are never
 * read by these calls, so nothing a command wrote there can make them run a program.
 */
export interface PinnedRepo {
  /** The private git dir (`GIT_DIR`, and `GIT_INDEX_FILE` = `gitDir/index`). */
  gitDir: string;
  /** The worktree (`GIT_WORK_TREE`, and the cwd). */
  workTree: string;
}

/**
 * Settings forced on every pinned call (on top of the private config, which holds the same):
 * no fsmonitor, no hooks, no global attributes, no pager, no ssh, no look into submodules, no
 * automatic gc.
 */
export const PINNED_GIT_CONFIG: readonly string[] = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.attributesFile=/dev/null",
  "core.pager=cat",
  "core.sshCommand=false",
  "core.untrackedCache=false",
  // A command can put a `.git` file into a submodule's folder; git would run `git status` there
  // (its config, filters, fsmonitor) to tell whether it is dirty. Submodules are never looked into.
  "diff.ignoreSubmodules=all",
  "submodule.recurse=false",
  "status.submoduleSummary=false",
  "gc.auto=0",
  "maintenance.auto=false",
];

/** The environment of a pinned call: {@link gitEnv} with the repository pinned and no system/global config. */
export function pinnedGitEnv(
  repo: PinnedRepo,
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  return {
    ...gitEnv(base),
    GIT_DIR: repo.gitDir,
    GIT_WORK_TREE: repo.workTree,
    GIT_INDEX_FILE: join(repo.gitDir, "index"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_PAGER: "cat",
  };
}

/** The request of a pinned call (git's time limit and capture; override them for tool calls). */
export function pinnedGitRequest(args: readonly string[], repo: PinnedRepo): RunRequest {
  return {
    command: "git",
    args: [...PINNED_GIT_CONFIG.flatMap((c) => ["-c", c]), ...args],
    cwd: repo.workTree,
    env: pinnedGitEnv(repo),
    timeoutMs: GIT_TIMEOUT_MS,
    maxCaptureBytes: COMMAND_CAPTURE_BYTES * 64,
  };
}

/** Runs `git args` against a {@link PinnedRepo}; the result as is (never throws for a git failure). */
export function pinnedGitRun(
  args: readonly string[],
  repo: PinnedRepo,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<RunResult> {
  return runner.run({ ...pinnedGitRequest(args, repo), ...(stdin === undefined ? {} : { stdin }) });
}

/**
 * Runs `git args` against a {@link PinnedRepo} and returns stdout.
 * @throws RatchetError `work_failed` with git's stderr when git exits non-zero.
 */
export async function pinnedGit(
  args: readonly string[],
  repo: PinnedRepo,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<string> {
  return checkedOutput(await pinnedGitRun(args, repo, runner, stdin), args, repo.workTree);
}
