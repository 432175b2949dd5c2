/** Running the definition of done through the one process runner (timeout, cap, group kill). */
import { buildEnv, type ProcessRunner, type RunRequest, realProcessRunner } from "../exec/index.js";
import type { CommandSandbox } from "./confine.js";
import { COMMAND_CAPTURE_BYTES, OUTPUT_TAIL_CHARS } from "./limits.js";
import { assertionHolds } from "./score.js";
import { parseAssertion, type TaskSpec } from "./spec.js";

/** Model and cloud keys never reach a DoD or a tool command. */
export const SCRUBBED_ENV = [
  /KEY/i,
  /TOKEN/i,
  /SECRET/i,
  /PASSWORD/i,
  /^OPENAI_/,
  /^ANTHROPIC_/,
  /^RATCHET_/,
];

/** The environment of DoD and tool commands: minimal, no keys, the source cwd named (for the guard). */
export function commandEnv(sourceCwd: string, extra: Record<string, string> = {}): Record<string, string> {
  return buildEnv({
    inherit: "minimal",
    drop: SCRUBBED_ENV,
    set: { CODE_RUNNER_SOURCE_CWD: sourceCwd, PYTHONDONTWRITEBYTECODE: "1", ...extra },
  });
}

export interface DodRun {
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  /** Combined output (capped). */
  output: string;
  /** The last {@link OUTPUT_TAIL_CHARS} characters of the output. */
  outputTail: string;
  durationMs: number;
}

/** Runs the DoD command with `bash -c` in `cwd`. Never throws for a failing command. */
export async function runDod(
  spec: Pick<TaskSpec, "definition_of_done" | "cwd">,
  cwd: string,
  opts: {
    runner?: ProcessRunner;
    signal?: AbortSignal;
    timeoutMs?: number;
    /** Confines the command's writes (see confine.ts). Default: not confined. */
    sandbox?: Pick<CommandSandbox, "wrap">;
  } = {},
): Promise<DodRun> {
  const dod = spec.definition_of_done;
  const request: RunRequest = {
    command: "bash",
    args: ["-c", dod.command],
    cwd,
    env: commandEnv(spec.cwd),
    timeoutMs: opts.timeoutMs ?? dod.timeout_seconds * 1000,
    maxCaptureBytes: COMMAND_CAPTURE_BYTES,
    killGraceMs: 500,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  const r = await (opts.runner ?? realProcessRunner).run(opts.sandbox ? opts.sandbox.wrap(request) : request);
  let output = r.combined;
  if (r.spawnError) output += `\n[runner] could not start the DoD: ${r.spawnError.message}`;
  if (r.timedOut)
    output += `\n[runner] the DoD timed out after ${opts.timeoutMs ?? dod.timeout_seconds * 1000} ms; its process group was killed`;
  const passed = assertionHolds(parseAssertion(dod.assertion), {
    exitCode: r.exitCode,
    output: r.combined,
    timedOut: r.timedOut,
  });
  return {
    passed,
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    output,
    outputTail: output.slice(-OUTPUT_TAIL_CHARS),
    durationMs: r.durationMs,
  };
}
