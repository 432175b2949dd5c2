/**
 * Complete-task mode: after the isolated DoD passed, apply the patch to the source working tree,
 * run the DoD there, commit only the patch's paths, and roll them back when apply or the source
 * DoD fails (and `rollback_on_failure`).
 */
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import { type DodRun, runDod } from "./dod.js";
import { git, gitRun } from "./git.js";
import { overlaps, porcelainPaths } from "./preflight.js";
import type { TaskSpec } from "./spec.js";

export interface SourceApplyResult {
  apply_to_source: true;
  source_patch_applied: boolean;
  source_dod_passed: boolean;
  source_commit: string | null;
  source_rollback_applied: boolean;
  source_apply_error: string | null;
  source_dod?: DodRun;
}

const literal = (paths: readonly string[]) => paths.map((p) => `:(literal)${p}`);

/** Restores `paths` of the source to HEAD (files HEAD does not have are removed). */
export async function rollbackPaths(
  source: string,
  paths: readonly string[],
  runner: ProcessRunner,
): Promise<void> {
  for (const p of paths) {
    const inHead = await gitRun(["cat-file", "-e", `HEAD:${p}`], source, runner);
    if (inHead.exitCode === 0) await git(["checkout", "-q", "HEAD", "--", `:(literal)${p}`], source, runner);
    else if (existsSync(join(source, p))) rmSync(join(source, p), { force: true });
  }
  await gitRun(["reset", "-q", "--", ...literal(paths)], source, runner);
}

/** Applies `patch` (touching `paths`) to the source, proves it with the DoD, commits or rolls back. */
export async function applyToSource(
  spec: TaskSpec,
  patch: string,
  paths: readonly string[],
  runner: ProcessRunner = realProcessRunner,
): Promise<SourceApplyResult> {
  const result: SourceApplyResult = {
    apply_to_source: true,
    source_patch_applied: false,
    source_dod_passed: false,
    source_commit: null,
    source_rollback_applied: false,
    source_apply_error: null,
  };
  const fail = async (message: string, rollback: boolean): Promise<SourceApplyResult> => {
    result.source_apply_error = message;
    if (rollback && spec.rollback_on_failure) {
      await rollbackPaths(spec.cwd, paths, runner);
      result.source_rollback_applied = true;
    }
    return result;
  };
  const status = await git(["status", "--porcelain=v1", "--untracked-files=all"], spec.cwd, runner);
  const dirty = overlaps(porcelainPaths(status), [...spec.allowlist, ...paths]);
  if (dirty.length > 0) return fail(`source paths changed since preflight: ${dirty.join(", ")}`, false);
  if (spec.commit_on_success) {
    const staged = (await git(["diff", "--cached", "--name-only"], spec.cwd, runner))
      .split("\n")
      .filter(Boolean);
    if (staged.length > 0) return fail(`other paths are staged in the source: ${staged.join(", ")}`, false);
  }
  if (patch === "") return fail("the patch is empty", false);
  const check = await gitRun(["apply", "--check", "--binary", "-"], spec.cwd, runner, patch);
  if (check.exitCode !== 0) return fail(`git apply --check failed: ${check.stderr.trim()}`, false);
  const applied = await gitRun(["apply", "--binary", "-"], spec.cwd, runner, patch);
  if (applied.exitCode !== 0) return fail(`git apply failed: ${applied.stderr.trim()}`, true);
  result.source_patch_applied = true;
  const dod = await runDod(spec, spec.cwd, { runner });
  result.source_dod = dod;
  result.source_dod_passed = dod.passed;
  if (!dod.passed) return fail(`the definition of done failed in the source (exit ${dod.exitCode})`, true);
  if (spec.commit_on_success) {
    await git(["add", "-A", "--", ...literal(paths)], spec.cwd, runner);
    const staged = (await git(["diff", "--cached", "--name-only"], spec.cwd, runner))
      .split("\n")
      .filter(Boolean);
    const extra = staged.filter((p) => !paths.includes(p));
    if (extra.length > 0)
      return fail(`refusing to commit paths outside the patch: ${extra.join(", ")}`, true);
    const commit = await gitRun(
      ["commit", "-q", "-m", `${spec.title}\n\nratchet runner task ${spec.task_id}`, "--", ...literal(paths)],
      spec.cwd,
      runner,
    );
    if (commit.exitCode !== 0)
      return fail(`git commit failed: ${commit.stderr.trim() || commit.stdout.trim()}`, true);
    result.source_commit = (await git(["rev-parse", "HEAD"], spec.cwd, runner)).trim();
  }
  return result;
}
