/**
 * The runner's side of the command sandbox (src/exec/command-sandbox.ts): the worktree's git admin
 * folder, known from its creation, handed to the one door in `exec/`.
 */
import {
  type CommandSandbox,
  commandSandbox as execCommandSandbox,
  type ProcessRunner,
  realProcessRunner,
  type SandboxInfo,
} from "../exec/index.js";
import type { Worktree } from "./worktree.js";

export type { CommandSandbox };

/**
 * Prepares the command sandbox of one worktree (see `exec`'s `commandSandbox`). `probed`: the
 * launcher probe of the task's first sandbox, so a second one (the fresh-worktree proof) does not
 * probe again. Never throws for a missing sandbox.
 */
export function commandSandbox(
  worktree: Pick<Worktree, "path" | "adminDir">,
  extraWritable: readonly string[] = [],
  runner: ProcessRunner = realProcessRunner,
  probed?: SandboxInfo,
): Promise<CommandSandbox> {
  return execCommandSandbox(
    worktree.path,
    worktree.adminDir,
    extraWritable,
    runner,
    probed ? { probed } : {},
  );
}
