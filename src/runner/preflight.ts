/**
 * Preflight: deterministic checks before any model call. The repository (cwd is a git repository
 * root with a commit), dirty paths overlapping the allowlist, and the DoD run once in a fresh
 * worktree, which must FAIL (a passing DoD proves nothing) unless `allow_passing_dod`.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import { type CommandSandbox, commandSandbox } from "./confine.js";
import { type DodRun, runDod } from "./dod.js";
import { checkedOutput, gitRun } from "./git.js";
import { checkCommand, parseCommandLine } from "./guard.js";
import { inList, type TaskSpec, underEntry } from "./spec.js";
import {
  gitWorktrees,
  LAYOUT_ARGS,
  parseRepoLayout,
  type RepoLayout,
  STATUS_ARGS,
  type Worktrees,
} from "./worktree.js";

/** Why preflight refused. Stored and printed as strings; never renamed. */
export const Refusal = {
  NotARepo: "not_a_git_repo",
  NotRepoRoot: "cwd_not_repo_root",
  NoCommit: "no_commit",
  DirtyOverlap: "dirty_overlap",
  VacuousDod: "vacuous_dod",
  OutsideAllowlist: "patch_outside_allowlist",
  WritablePathMissing: "writable_path_missing",
  SecretInPatch: "patch_contains_secret",
} as const;
export type Refusal = (typeof Refusal)[keyof typeof Refusal];

export interface RefusalItem {
  code: Refusal;
  message: string;
}

export interface StaticPreflight {
  ok: boolean;
  refusals: RefusalItem[];
  repoRoot: string | undefined;
  dirtyPaths: string[];
  dirtyOverlaps: string[];
  /** Where the source's git state lives and its HEAD (set when the checks got that far). */
  layout?: RepoLayout;
  /** The source's `git status --porcelain=v1 --untracked-files=all` (set with `layout`). */
  status?: string;
}

/** Paths of `git status --porcelain` lines (both sides of a rename). */
export function porcelainPaths(status: string): string[] {
  const out: string[] = [];
  for (const line of status.split("\n")) {
    if (line.length < 4) continue;
    const rest = line.slice(3);
    for (const p of rest.split(" -> ")) out.push(p.replace(/^"|"$/g, ""));
  }
  return out;
}

/** Dirty paths that overlap an entry (a dirty file under an entry, or a dirty folder holding one). */
export function overlaps(paths: readonly string[], entries: readonly string[]): string[] {
  return paths.filter((p) => {
    const clean = p.replace(/\/$/, "");
    return inList(clean, entries) || entries.some((e) => underEntry(e, clean));
  });
}

/** The repository checks (no worktree, no DoD). */
export async function preflightRepo(
  spec: TaskSpec,
  runner: ProcessRunner = realProcessRunner,
): Promise<StaticPreflight> {
  const refusals: RefusalItem[] = [];
  const done = (
    repoRoot?: string,
    dirtyPaths: string[] = [],
    dirtyOverlaps: string[] = [],
    seen: { layout?: RepoLayout; status?: string } = {},
  ): StaticPreflight => ({
    ok: refusals.length === 0,
    refusals,
    repoRoot,
    dirtyPaths,
    dirtyOverlaps,
    ...seen,
  });
  if (!existsSync(spec.cwd)) {
    refusals.push({ code: Refusal.NotARepo, message: `cwd ${spec.cwd} does not exist` });
    return done();
  }
  // The command sandbox can only open folders that exist.
  spec.writable_paths.forEach((p, i) => {
    if (!existsSync(p) || !statSync(p).isDirectory())
      refusals.push({
        code: Refusal.WritablePathMissing,
        message: `writable_paths[${i}]: ${p} is not an existing folder (create it first)`,
      });
  });
  // One git call for the root, the git folders and HEAD (exit 1: no HEAD; 128: not a repository),
  // and beside it the status, which is read only once that call says cwd is a repository root
  // with a commit (both only read the repository; the status of a refused cwd is dropped).
  const [top, statusRun] = await Promise.all([
    gitRun(LAYOUT_ARGS, spec.cwd, runner),
    gitRun(STATUS_ARGS, spec.cwd, runner),
  ]);
  const layout = top.exitCode === 0 || top.exitCode === 1 ? parseRepoLayout(spec.cwd, top.stdout) : undefined;
  if (!layout) {
    refusals.push({
      code: Refusal.NotARepo,
      message: `cwd ${spec.cwd} is not a git repository: ${top.stderr.trim()}`,
    });
    return done();
  }
  const root = layout.top;
  if (realpathSync(root) !== realpathSync(spec.cwd)) {
    refusals.push({
      code: Refusal.NotRepoRoot,
      message: `cwd ${spec.cwd} must be the repository root ${root}`,
    });
    return done(root);
  }
  if (layout.head === undefined) {
    refusals.push({ code: Refusal.NoCommit, message: `${root} has no commit (HEAD does not exist)` });
    return done(root);
  }
  const status = checkedOutput(statusRun, STATUS_ARGS, spec.cwd);
  const dirty = porcelainPaths(status);
  const hit = overlaps(dirty, [...spec.allowlist, ...spec.protected_paths]);
  if (hit.length > 0) {
    refusals.push({
      code: Refusal.DirtyOverlap,
      message: `uncommitted changes overlap the allowlist or protected paths: ${hit.join(", ")} (commit or stash them first)`,
    });
  }
  return done(root, dirty, hit, { layout, status });
}

/** The DoD check: run it in `worktree` before any change. */
export async function preflightDod(
  spec: TaskSpec,
  worktree: string,
  runner: ProcessRunner = realProcessRunner,
  sandbox?: Pick<CommandSandbox, "wrap">,
): Promise<{ dod: DodRun; refusal: RefusalItem | undefined }> {
  const dod = await runDod(spec, worktree, { runner, ...(sandbox ? { sandbox } : {}) });
  const refusal =
    dod.passed && !spec.allow_passing_dod
      ? {
          code: Refusal.VacuousDod,
          message: `the definition of done already passes before any change (vacuous): ${spec.definition_of_done.command} (set allow_passing_dod to accept)`,
        }
      : undefined;
  return { dod, refusal };
}

/** What `dry-run --explain-risk` reports. */
export interface RiskReport {
  allowlist: { entry: string; exists: boolean; tracked_files: number }[];
  allowlist_files: number;
  dod: { command: string; argv: string[][]; guard: string };
  protected_paths: { entry: string; tracked_files: number }[];
  dirty_overlaps: string[];
  apply_to_source: boolean;
  commit_on_success: boolean;
}

/** Computes the risk report from the spec and the repository (no model, no worktree). */
export async function explainRisk(
  spec: TaskSpec,
  repo: StaticPreflight,
  runner: ProcessRunner = realProcessRunner,
): Promise<RiskReport> {
  const count = async (entry: string) => {
    if (!repo.repoRoot) return 0;
    const r = await gitRun(["ls-files", "-z", "--", `:(literal)${entry}`], spec.cwd, runner);
    return r.stdout.split("\0").filter(Boolean).length;
  };
  const allowlist = [];
  for (const entry of spec.allowlist) {
    allowlist.push({ entry, exists: existsSync(`${spec.cwd}/${entry}`), tracked_files: await count(entry) });
  }
  const protectedPaths = [];
  for (const entry of spec.protected_paths) protectedPaths.push({ entry, tracked_files: await count(entry) });
  const parsed = parseCommandLine(spec.definition_of_done.command);
  const verdict = checkCommand(spec.definition_of_done.command, { worktree: spec.cwd });
  return {
    allowlist,
    allowlist_files: allowlist.reduce((n, a) => n + a.tracked_files, 0),
    dod: {
      command: spec.definition_of_done.command,
      argv: parsed ? parsed.segments.map((s) => s.words) : [],
      guard: verdict.allowed ? "allowed" : `would be blocked for the model: ${verdict.reason}`,
    },
    protected_paths: protectedPaths,
    dirty_overlaps: repo.dirtyOverlaps,
    apply_to_source: spec.apply_to_source,
    commit_on_success: spec.commit_on_success,
  };
}

/** The result of `ratchet runner dry-run`. */
export interface DryRunReport {
  task_id: string;
  ok: boolean;
  refusals: RefusalItem[];
  dod: { passed: boolean; exit_code: number | null; timed_out: boolean; output_tail: string } | undefined;
  risk?: RiskReport;
}

/** Validate + preflight, no model call: the repository checks, then the DoD in a fresh worktree. */
export async function dryRun(
  spec: TaskSpec,
  opts: { explainRisk?: boolean; runner?: ProcessRunner; worktrees?: Worktrees } = {},
): Promise<DryRunReport> {
  const runner = opts.runner ?? realProcessRunner;
  const repo = await preflightRepo(spec, runner);
  const refusals = [...repo.refusals];
  let dod: DryRunReport["dod"];
  if (repo.repoRoot && !refusals.some((r) => r.code !== Refusal.DirtyOverlap)) {
    const worktrees = opts.worktrees ?? gitWorktrees(runner);
    const wt = await worktrees.create(spec.cwd, repo.layout);
    let sandbox: CommandSandbox | undefined;
    try {
      sandbox = await commandSandbox(wt, spec.writable_paths, runner);
      const pre = await preflightDod(spec, wt.path, runner, sandbox);
      dod = {
        passed: pre.dod.passed,
        exit_code: pre.dod.exitCode,
        timed_out: pre.dod.timedOut,
        output_tail: pre.dod.outputTail,
      };
      if (pre.refusal) refusals.push(pre.refusal);
    } finally {
      sandbox?.dispose();
      await worktrees.remove(spec.cwd, wt);
    }
  }
  return {
    task_id: spec.task_id,
    ok: refusals.length === 0,
    refusals,
    dod,
    ...(opts.explainRisk ? { risk: await explainRisk(spec, repo, runner) } : {}),
  };
}
