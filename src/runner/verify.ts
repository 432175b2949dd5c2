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
import { restoreProtected, restoreTo } from "./patch.js";
import type { TaskSpec } from "./spec.js";
import type { Worktree, Worktrees } from "./worktree.js";

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

/**
 * Creates a fresh worktree, applies `patch` (allowlist-only), restores protected paths, runs the
 * DoD in the command sandbox, removes the worktree. Never throws for a failing DoD or patch.
 */
export async function verifyOnFreshWorktree(
  spec: TaskSpec,
  patch: string,
  deps: { worktrees: Worktrees; runner: ProcessRunner; signal?: AbortSignal; probed?: SandboxInfo },
): Promise<FreshVerification> {
  const { worktrees, runner } = deps;
  const wt: Worktree = await worktrees.create(spec.cwd);
  let sandbox: CommandSandbox | undefined;
  try {
    sandbox = await commandSandbox(wt, spec.writable_paths, runner, deps.probed);
    try {
      await restoreTo(wt.git, spec.allowlist, patch, runner);
    } catch (err) {
      return { dod: notRun((err as Error).message), path: wt.path, protection: sandbox.protection };
    }
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
