/**
 * Confinement of the runner's commands (the model's `run_command` and every DoD run, which
 * executes code the model wrote), compiled once per task through the door (door.ts). Where
 * `ratchet-confine` works a command may write only to the worktree, the worktree's own git admin
 * folder (index, HEAD), a private TMPDIR, `/dev/null` and the spec's `writable_paths`; the source
 * repository and everything else stay read-only. Where the launcher confines reads (v2) a command
 * reads only the system folders, the interpreters, the worktree, the repository's git folder and
 * its own TMPDIR (read-roots.ts): not `$HOME` (`~/.ssh`), not `.ratchet/`, not other processes'
 * `/proc`. The runner's guard still runs first: it explains refusals in words, the sandbox is the
 * boundary. Elsewhere (no Landlock, or `RATCHET_SANDBOX=off`) commands run with the guard and the
 * scrubbed environment only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, resolve } from "node:path";
import { type Confinement, compileConfinement, type Door, Supervise } from "./door.js";
import { resolveNode, resolvePython } from "./interpreters.js";
import { DEFAULT_KILL_GRACE_MS } from "./limits.js";
import { realProcessRunner } from "./process-runner.js";
import { loadSandboxConfig, pathToolchainRoots, ratchetDirAbove, readRoots } from "./read-roots.js";
import { confineLauncher, detectSandbox, type SandboxInfo } from "./sandbox.js";
import { sweepStaleDirs } from "./stale-dirs.js";
import type { ProcessRunner, RunRequest } from "./types.js";

/** Prefix of the runner's private TMPDIR (`ratchet-runner-<pid>-XXXXXX`, swept when its owner died). */
export const RUNNER_DIR_PREFIX = "ratchet-runner-";

/**
 * How often one process sweeps a temp folder for dead owners' runner folders. Listing a shared
 * `/tmp` is O(its entries) (~7 ms for 8,000 here), and every task made two sandboxes; what is
 * swept is litter of processes already dead, so once a minute loses nothing but a minute.
 */
const SWEEP_EVERY_MS = 60_000;
const lastSweep = new Map<string, number>();

/** How the runner's commands are confined for one task. */
export interface CommandSandbox {
  /** `landlock` when commands are confined, `none` otherwise. */
  protection: "landlock" | "none";
  /** Why (the probe's answer). */
  reason: string;
  /** The launcher probe this sandbox was made from (a second sandbox of the same task reuses it). */
  probed: SandboxInfo;
  /** The folders commands may write to (empty when not confined). */
  writable: string[];
  /** The folders and files commands may read where the launcher confines reads (else empty). */
  readable: string[];
  /** The private temp folder commands get as `TMPDIR` (removed by {@link CommandSandbox.dispose}). */
  tmpDir?: string;
  /** Wraps a command (`bash -c …`) in the launcher; returns it unchanged when not confined. */
  wrap(req: RunRequest): RunRequest;
  /** Removes the private temp folder. */
  dispose(): void;
}

/** Options of {@link commandSandbox} beyond the folders. */
export interface CommandSandboxOptions {
  /**
   * `sandbox.read_roots` of the workspace config. Default: those of the workspace (`.ratchet/`)
   * above the repository or the current folder.
   */
  extraReadRoots?: readonly string[];
  /** Folders no read root may expose. Default: the `.ratchet/` above the repository and the current folder. */
  secretDirs?: readonly string[];
  /** Where HOME and PATH come from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The launcher probe of an earlier sandbox of the same task (default: probe now). */
  probed?: SandboxInfo;
}

/**
 * Probes the launcher and prepares the sandbox for commands run in `worktree` (preflight already
 * refused `extraWritable` folders that do not exist). `gitAdminDir` is the worktree's own admin
 * folder in the source's `.git/worktrees/<name>` (git status, diff and add inside the worktree
 * write its index there, and nothing else of the source). Never throws for a missing sandbox: it
 * reports `none` with the reason.
 */
export async function commandSandbox(
  worktree: string,
  gitAdminDir: string | undefined,
  extraWritable: readonly string[] = [],
  runner: ProcessRunner = realProcessRunner,
  opts: CommandSandboxOptions = {},
): Promise<CommandSandbox> {
  // Probed again for every task (a few ms): the answer must come from this task's process runner.
  const info = opts.probed ?? (await detectSandbox({ languages: ["python"], runner, refresh: true }));
  const launcher = confineLauncher(info);
  if (info.python !== "landlock" || launcher.kind === "none") {
    return {
      protection: "none",
      reason: info.reason,
      probed: info,
      writable: [],
      readable: [],
      wrap: (req) => req,
      dispose: () => {},
    };
  }
  const env = opts.env ?? process.env;
  const admin = gitAdminDir && isAbsolute(gitAdminDir) ? gitAdminDir : undefined;
  const now = Date.now();
  if (now - (lastSweep.get(tmpdir()) ?? Number.NEGATIVE_INFINITY) >= SWEEP_EVERY_MS) {
    lastSweep.set(tmpdir(), now);
    sweepStaleDirs(tmpdir(), RUNNER_DIR_PREFIX);
  }
  const tmp = mkdtempSync(resolve(tmpdir(), `${RUNNER_DIR_PREFIX}${process.pid}-`));
  const writable = [worktree, ...(admin ? [admin] : []), tmp, ...extraWritable];
  const python = await resolvePython(env);
  const repo = admin ? dirname(dirname(dirname(admin))) : worktree;
  const workspaces = [...new Set([ratchetDirAbove(repo), ratchetDirAbove(process.cwd())])].filter(
    (d): d is string => d !== undefined,
  );
  // A bad sandbox.read_roots refuses the task here (preflight calls this before any model call).
  const configured =
    opts.extraReadRoots ?? workspaces.flatMap((d) => loadSandboxConfig(d, env.HOME).readRoots);
  const readable = launcher.features.reads
    ? readRoots({
        // A command finds its tools through PATH (a pyenv shim runs the manager's own scripts).
        interpreters: [...(python?.roots ?? []), ...resolveNode().roots, ...pathToolchainRoots(env.PATH)],
        // The repository's git folder (objects, refs) holds what `git` in the worktree reads.
        own: admin ? [dirname(dirname(admin))] : [],
        extra: configured,
        forbid: { home: env.HOME, secretDirs: opts.secretDirs ?? workspaces },
      })
    : [];
  const base: Confinement = {
    readRoots: readable,
    writeRoots: writable,
    writeFiles: ["/dev/null"],
    env: {},
    // The process runner keeps each command's own limit (callers read `timedOut`).
    timeoutMs: 0,
    killGraceMs: DEFAULT_KILL_GRACE_MS,
    supervise: Supervise.Confine,
    cleanup: [],
  };
  // Compiled once for the task; every command goes through the same door.
  const door: Door = compileConfinement(base, launcher);
  return {
    protection: "landlock",
    reason: info.reason,
    probed: info,
    writable,
    readable,
    tmpDir: tmp,
    wrap: (req) => ({
      ...req,
      ...door.command(req.command, req.args ?? []),
      // The user's ~/.gitconfig is outside the read roots, and git stops at a config file it
      // cannot read: commands' git reads the system and repository config only.
      env: {
        ...(readable.length > 0 ? { GIT_CONFIG_GLOBAL: "/dev/null" } : {}),
        ...(req.env ?? {}),
        TMPDIR: tmp,
      },
    }),
    dispose: () => rmSync(tmp, { recursive: true, force: true }),
  };
}
