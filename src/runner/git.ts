/** The runner's own git calls, through the one process runner (bounded, scrubbed environment). */
import { ErrorCode, RatchetError } from "../core/index.js";
import { buildEnv, type ProcessRunner, type RunResult, realProcessRunner } from "../exec/index.js";
import { COMMAND_CAPTURE_BYTES, GIT_TIMEOUT_MS } from "./limits.js";

/** Variables passed to git besides the minimal set (identity for commits, no prompts). */
const GIT_ENV_KEYS = [
  /^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$/,
  "GIT_CONFIG_NOSYSTEM",
  "GIT_CONFIG_GLOBAL",
];

/** The environment of the runner's git calls: minimal + git identity, never model keys. */
export function gitEnv(base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const set: Record<string, string> = { GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" };
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined && GIT_ENV_KEYS.some((p) => (typeof p === "string" ? p === k : p.test(k))))
      set[k] = v;
  }
  return buildEnv({ inherit: "minimal", base, set });
}

/** Runs `git args` in `cwd`; the result as is (never throws for a git failure). */
export function gitRun(
  args: readonly string[],
  cwd: string,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<RunResult> {
  return runner.run({
    command: "git",
    args,
    cwd,
    env: gitEnv(),
    timeoutMs: GIT_TIMEOUT_MS,
    maxCaptureBytes: COMMAND_CAPTURE_BYTES * 64,
    ...(stdin === undefined ? {} : { stdin }),
  });
}

/**
 * Runs `git args` in `cwd` and returns stdout.
 * @throws RatchetError `work_failed` with git's stderr when git exits non-zero.
 */
export async function git(
  args: readonly string[],
  cwd: string,
  runner: ProcessRunner = realProcessRunner,
  stdin?: string | Uint8Array,
): Promise<string> {
  const r = await gitRun(args, cwd, runner, stdin);
  if (r.exitCode !== 0) {
    const why = r.spawnError?.message ?? (r.stderr.trim() || r.stdout.trim() || `exit ${r.exitCode}`);
    throw new RatchetError(ErrorCode.WorkFailed, `git ${args.join(" ")} failed in ${cwd}: ${why}`, {
      cwd,
      args: [...args],
    });
  }
  return r.stdout;
}
