/**
 * Real unified diffs between two versions of a script, computed by `git diff --no-index` through
 * the one process runner, with the file headers replaced by readable labels.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildEnv, type ProcessRunner, realProcessRunner } from "../exec/index.js";

/** Time limit of one diff, in milliseconds. */
const DIFF_TIMEOUT_MS = 30_000;

/**
 * The unified diff from `before` to `after` ("" when they are equal). `before` undefined: the file
 * is new (diffed against /dev/null).
 * @throws Error when git cannot run or fails (status other than 0 and 1).
 */
export async function unifiedDiff(
  before: string | undefined,
  after: string,
  labels: { from: string; to: string },
  runner: ProcessRunner = realProcessRunner,
): Promise<string> {
  if (before === after) return "";
  const dir = mkdtempSync(join(tmpdir(), "ratchet-diff-"));
  try {
    const a = join(dir, "a");
    const b = join(dir, "b");
    if (before !== undefined) writeFileSync(a, before);
    writeFileSync(b, after);
    const r = await runner.run({
      command: "git",
      args: [
        "diff",
        "--no-index",
        "--no-color",
        "--no-ext-diff",
        "-U3",
        "--",
        before === undefined ? "/dev/null" : "a",
        "b",
      ],
      cwd: dir,
      env: buildEnv({ inherit: "minimal", base: process.env, set: { GIT_CONFIG_NOSYSTEM: "1", HOME: dir } }),
      timeoutMs: DIFF_TIMEOUT_MS,
      maxCaptureBytes: 8 * 1024 * 1024,
    });
    if (r.spawnError) throw new Error(`git diff could not start: ${r.spawnError.message}`);
    if (r.exitCode !== 0 && r.exitCode !== 1)
      throw new Error(`git diff failed (${r.exitCode}): ${r.stderr.trim()}`);
    const lines = r.stdout.split("\n");
    const hunk = lines.findIndex((l) => l.startsWith("@@"));
    if (hunk < 0) return "";
    return [`--- ${labels.from}`, `+++ ${labels.to}`, ...lines.slice(hunk)].join("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
