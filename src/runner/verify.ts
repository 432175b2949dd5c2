/**
 * The verification that decides "passed": the DoD run once more, confined like every DoD run, on a
 * FRESH worktree of the source's HEAD that holds nothing but the exported allowlist patch. What
 * the model changed outside the allowlist (a rewritten unprotected test, a new `conftest.py`, a
 * hostile `.git` file) is not there, and protected paths are pristine, so a change outside the
 * allowlist can never make a task pass.
 */
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
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
 * The proof's fresh worktree, made ahead of time: while the preflight DoD and the rounds run,
 * beside them. Only where commands are confined (so nothing the rounds run can write there: not the
 * worktree, not its admin folder, not its private git dir; one any writable folder reaches is
 * thrown away) and from the task's base (the commit the rounds started from), so it is the same
 * tree a worktree made after the rounds would be. Whoever {@link ProofWorktree.take}s it owns it;
 * otherwise {@link ProofWorktree.dispose} removes it.
 */
export class ProofWorktree {
  private readonly made: Promise<MadeProof | undefined>;
  private taken = false;

  /**
   * `prepare`: makes the command sandbox of the worktree once it exists (the task's probe, its
   * `writable_paths`), so that is done beside the rounds too; when it fails, the proof makes it
   * again (and reports the error).
   */
  constructor(
    private readonly worktrees: Worktrees,
    private readonly source: string,
    base: WorktreeBase | RepoLayout | undefined,
    writable: readonly string[],
    prepare?: (wt: Worktree) => Promise<CommandSandbox>,
  ) {
    this.made = worktrees.create(source, base).then(
      async (wt) => {
        if (writableInto(wt, writable)) {
          await worktrees.remove(source, wt);
          return undefined;
        }
        const sandbox = await prepare?.(wt).catch(() => undefined);
        return sandbox ? { wt, sandbox } : { wt };
      },
      () => undefined, // made again (and its error reported) when the proof runs
    );
  }

  /** The worktree and its sandbox (`undefined`: make one now); the caller removes them. */
  take(): Promise<MadeProof | undefined> {
    this.taken = true;
    return this.made;
  }

  /** Removes the worktree (and disposes its sandbox) unless it was taken. */
  async dispose(): Promise<void> {
    if (this.taken) return;
    this.taken = true;
    const made = await this.made;
    made?.sandbox?.dispose();
    if (made) await this.worktrees.remove(this.source, made.wt);
  }
}

/** A proof's worktree made ahead of time, and its command sandbox when that was made too. */
export interface MadeProof {
  wt: Worktree;
  sandbox?: CommandSandbox;
}

/**
 * True when nothing the proof's commands may write can change what the source's snapshot reads
 * through git (`show-ref`: HEAD and refs; `status`: the working tree, the index, the ignore
 * files): they are confined, and every folder they may write (the worktree, the private TMPDIR,
 * `writable_paths`), and Ratchet's private git dir, lies outside the source's working tree and
 * git folders, all but the proof's own admin folder in `<common>/worktrees/`, which neither call
 * reads. Then those two calls can run beside the proof's DoD. `alsoWritten`: folders Ratchet
 * itself writes or removes meanwhile (the rounds' worktree and private git dir), held to the same
 * rule. Paths compared as real paths; a path that cannot be resolved answers `false`.
 */
export function proofLeavesSourceAlone(
  made: MadeProof,
  layout: RepoLayout,
  alsoWritten: readonly string[] = [],
): boolean {
  const sandbox = made.sandbox;
  if (sandbox?.protection !== "landlock") return false;
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return undefined;
    }
  };
  const guarded = [layout.top, layout.gitDir, layout.common].map(real);
  const admin = real(made.wt.adminDir);
  const worktrees = real(join(layout.common, "worktrees"));
  if (admin === undefined || worktrees === undefined || dirname(admin) !== worktrees) return false;
  const under = (a: string, b: string) => a === b || a.startsWith(`${b}/`);
  const written = [...sandbox.writable, made.wt.git.gitDir, ...alsoWritten]
    .map(real)
    .filter((w) => w !== admin);
  return written.every(
    (w) => w !== undefined && guarded.every((g) => g !== undefined && !under(w, g) && !under(g, w)),
  );
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
    /**
     * A fresh worktree already made for this proof, with its sandbox when that was made too (see
     * {@link ProofWorktree}); both removed here.
     */
    made?: MadeProof;
    /** Called once the DoD's process was started (not when the patch did not apply). */
    onDodStarted?: () => void;
  },
): Promise<FreshVerification> {
  const { worktrees, runner } = deps;
  const wt: Worktree = deps.made?.wt ?? (await worktrees.create(spec.cwd, deps.base));
  let sandbox: CommandSandbox | undefined = deps.made?.sandbox;
  try {
    sandbox ??= await commandSandbox(wt, spec.writable_paths, runner, deps.probed);
    try {
      if (patch !== "")
        await pinnedGit(["apply", "--binary", "--whitespace=nowarn", "-"], wt.git, runner, patch);
    } catch (err) {
      return { dod: notRun((err as Error).message), path: wt.path, protection: sandbox.protection };
    }
    if (touchesProtected(patch, spec.protected_paths))
      await restoreProtected(wt.git, spec.protected_paths, runner);
    const running = runDod(spec, wt.path, {
      runner,
      sandbox,
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
    deps.onDodStarted?.();
    const dod = await running;
    return { dod, path: wt.path, protection: sandbox.protection };
  } finally {
    sandbox?.dispose();
    await worktrees.remove(spec.cwd, wt);
  }
}
