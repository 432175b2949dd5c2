/**
 * The runner's side of the command sandbox (src/exec/command-sandbox.ts): finds the worktree's
 * git admin folder, then asks the one door in `exec/` for the sandbox.
 */
import {
  type CommandSandbox,
  commandSandbox as execCommandSandbox,
  type ProcessRunner,
  realProcessRunner,
} from "../exec/index.js";
import { gitRun } from "./git.js";

export type { CommandSandbox };

/** Prepares the command sandbox of one task (see `exec`'s `commandSandbox`). Never throws for a missing sandbox. */
export async function commandSandbox(
  worktree: string,
  extraWritable: readonly string[] = [],
  runner: ProcessRunner = realProcessRunner,
): Promise<CommandSandbox> {
  const gitDir = await gitRun(["rev-parse", "--absolute-git-dir"], worktree, runner);
  const admin = gitDir.exitCode === 0 ? gitDir.stdout.trim() : undefined;
  return execCommandSandbox(worktree, admin, extraWritable, runner);
}
