/**
 * The verification that decides "passed": the DoD run once more, confined like every DoD run, on a
 * FRESH worktree of the source's HEAD that holds nothing but the exported allowlist patch. What
 * the model changed outside the allowlist (a rewritten unprotected test, a new `conftest.py`, a
 * hostile `.git` file) is not there, and protected paths are pristine, so a change outside the
 * allowlist can never make a task pass.
 */
import type { ProcessRunner, SandboxInfo } from "../exec/index.js";
import { type CommandSandbox, commandSandbox } from "./confine.js";
import { type DodRun, runDod } from "./dod.js";
import { pinnedGit } from "./git.js";
import { patchPaths, restoreProtected } from "./patch.js";
import { inList, type TaskSpec, underEntry } from "./spec.js";
import type { RepoLayout, Worktree, WorktreeBase, Worktrees } from "./worktree.js";

/** The fresh run's DoD, or why the patch could not even be applied there. */
export interface FreshVerification {
  dod: DodRun;
  /** The fresh worktree's path (already removed). */
  path: string;
  protection: CommandSandbox["protection"];
}

/** A DoD run that never started (the patch did not apply to a fresh worktree). */
function notRun(message: string): DodRun {
  const output = `[runner] the exported patch does not apply to a fresh worktree: ${message}`;
  return { passed: false, exitCode: null, timedOut: false, output, outputTail: output, durationMs: 0 };
}

/** True when a command allowed to write `writable` could write into `wt` (or its git folders). Pure. */
export function writableInto(wt: Worktree, writable: readonly string[]): boolean {
  const inside = (p: string) => writable.some((w) => p === w || p.startsWith(`${w}/`));
  return inside(wt.path) || inside(wt.adminDir) || inside(wt.git.gitDir);
}

/**
 * The proof's fresh worktree, made ahead of time: while the rounds run, beside the model's
 * calls. Only where commands are confined (so nothing the rounds run can write there: not the
 * worktree, not its admin folder, not its private git dir; one any writable folder reaches is
 * thrown away) and from the task's base (the commit the rounds started from), so it is the same
 * tree a worktree made after the rounds would be. Whoever {@link ProofWorktree.take}s it owns it;
 * otherwise {@link ProofWorktree.dispose} removes it.
 */
export class ProofWorktree {
  private readonly made: Promise<Worktree | undefined>;
  private taken = false;

  constructor(
    private readonly worktrees: Worktrees,
    private readonly source: string,
    base: WorktreeBase | RepoLayout | undefined,
    writable: readonly string[],
  ) {
    this.made = worktrees.create(source, base).then(
      async (wt) => {
        if (!writableInto(wt, writable)) return wt;
        await worktrees.remove(source, wt);
        return undefined;
      },
      () => undefined, // made again (and its error reported) when the proof runs
    );
  }

  /** The worktree (`undefined`: make one now); the caller removes it. */
  take(): Promise<Worktree | undefined> {
    this.taken = true;
    return this.made;
  }

  /** Removes the worktree unless it was taken. */
  async dispose(): Promise<void> {
    if (this.taken) return;
    this.taken = true;
    const wt = await this.made;
    if (wt) await this.worktrees.remove(this.source, wt);
  }
}

/** Whether the patch names a protected path (an allowlisted folder can hold one). Pure. */
export function touchesProtected(patch: string, protectedPaths: readonly string[]): boolean {
  return patchPaths(patch).some(
    (p) => inList(p, protectedPaths) || protectedPaths.some((e) => underEntry(e, p)),
  );
}

/**
 * Creates a fresh worktree (or takes `made`, of the task's base: the commit the rounds started from), applies
 * `patch` (allowlist-only), runs the DoD in the command sandbox, removes the worktree. Never
 * throws for a failing DoD or patch. The fresh checkout is HEAD exactly (index and files), so
 * the patch is applied with `git apply` alone; protected paths are restored only when the patch
 * names one, since nothing else can have changed them there.
 */
export async function verifyOnFreshWorktree(
  spec: TaskSpec,
  patch: string,
  deps: {
    worktrees: Worktrees;
    runner: ProcessRunner;
    signal?: AbortSignal;
    probed?: SandboxInfo;
    base?: WorktreeBase | RepoLayout;
    /** A fresh worktree already made for this proof (see {@link ProofWorktree}); removed here. */
    made?: Worktree;
  },
): Promise<FreshVerification> {
  const { worktrees, runner } = deps;
  const wt: Worktree = deps.made ?? (await worktrees.create(spec.cwd, deps.base));
  let sandbox: CommandSandbox | undefined;
  try {
    sandbox = await commandSandbox(wt, spec.writable_paths, runner, deps.probed);
    try {
      if (patch !== "")
        await pinnedGit(["apply", "--binary", "--whitespace=nowarn", "-"], wt.git, runner, patch);
    } catch (err) {
      return { dod: notRun((err as Error).message), path: wt.path, protection: sandbox.protection };
    }
    if (touchesProtected(patch, spec.protected_paths))
      await restoreProtected(wt.git, spec.protected_paths, runner);
    const dod = await runDod(spec, wt.path, {
      runner,
      sandbox,
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    return { dod, path: wt.path, protection: sandbox.protection };
  } finally {
    sandbox?.dispose();
    await worktrees.remove(spec.cwd, wt);
  }
}
