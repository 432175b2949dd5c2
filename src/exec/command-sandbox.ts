/**
 * Write scope for the runner's commands (the model's `run_command` and every DoD run, which
 * executes code the model wrote). Where `ratchet-confine` works (Landlock, see
 * sandbox.ts) a command may write only to the worktree, the worktree's own git admin
 * folder (index, HEAD), a private TMPDIR, `/dev/null` and the spec's `writable_paths`; the source
 * repository and everything else stay read-only. The runner's guard still runs first: it
 * explains refusals in words, the sandbox is the boundary. Elsewhere (no Landlock, or
 * `RATCHET_SANDBOX=off`) commands run with the guard and the scrubbed environment only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { realProcessRunner } from "./process-runner.js";
import { confineArgs, detectSandbox } from "./sandbox.js";
import type { ProcessRunner, RunRequest } from "./types.js";

/** How the runner's commands are confined for one task. */
export interface CommandSandbox {
  /** `landlock` when commands are confined, `none` otherwise. */
  protection: "landlock" | "none";
  /** Why (the probe's answer). */
  reason: string;
  /** The folders commands may write to (empty when not confined). */
  writable: string[];
  /** The private temp folder commands get as `TMPDIR` (removed by {@link CommandSandbox.dispose}). */
  tmpDir?: string;
  /** Wraps a command (`bash -c …`) in the launcher; returns it unchanged when not confined. */
  wrap(req: RunRequest): RunRequest;
  /** Removes the private temp folder. */
  dispose(): void;
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
): Promise<CommandSandbox> {
  // Probed again for every task (a few ms): the answer must come from this task's process runner.
  const info = await detectSandbox({ languages: ["python"], runner, refresh: true });
  if (info.python !== "landlock" || !info.confinePath) {
    return {
      protection: "none",
      reason: info.reason,
      writable: [],
      wrap: (req) => req,
      dispose: () => {},
    };
  }
  const confine = info.confinePath;
  const admin = gitAdminDir ?? "";
  const tmp = mkdtempSync(resolve(tmpdir(), "ratchet-runner-tmp-"));
  const writable = [worktree, ...(isAbsolute(admin) ? [admin] : []), tmp, ...extraWritable];
  return {
    protection: "landlock",
    reason: info.reason,
    writable,
    tmpDir: tmp,
    wrap: (req) => ({
      ...req,
      command: confine,
      args: confineArgs(writable, [req.command, ...(req.args ?? [])]),
      env: { ...(req.env ?? {}), TMPDIR: tmp },
    }),
    dispose: () => rmSync(tmp, { recursive: true, force: true }),
  };
}
