/**
 * Request compilation and the small pure helpers of the runner: defaults and checks
 * (`RunRequest` → `CompiledRunRequest`), spawn-error messages, empty results.
 */

import { statSync } from "node:fs";
import { ErrorCode, MAX_CAPTURE_BYTES, RatchetError } from "../core/index.js";
import { assertValidEnv, buildEnv } from "./env.js";
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_KILL_GRACE_MS, MAX_EXEC_TIMEOUT_MS } from "./limits.js";
import type { RunRequest, RunResult } from "./types.js";

export type SpawnError = NonNullable<RunResult["spawnError"]>;

/** A request with every default applied and every field checked. */
export interface CompiledRunRequest {
  command: string;
  args: readonly string[];
  cwd: string | undefined;
  env: Record<string, string>;
  stdin: string | Uint8Array | undefined;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  holdsLoop: boolean;
  maxCaptureBytes: number;
  killGraceMs: number;
  onOutput: RunRequest["onOutput"];
  combinedFile: string | undefined;
  killGroupOnExit: boolean;
}

function invalid(field: string, message: string): RatchetError {
  return new RatchetError(ErrorCode.InvalidValue, `RunRequest.${field} ${message}`, { field });
}

/** Applies defaults and checks types. @throws RatchetError `invalid_value` naming the field. */
export function compileRunRequest(req: RunRequest): CompiledRunRequest {
  if (typeof req.command !== "string" || req.command === "" || req.command.includes("\0")) {
    throw invalid("command", "must be a non-empty string without NUL bytes");
  }
  const args = req.args ?? [];
  args.forEach((a, i) => {
    if (typeof a !== "string" || a.includes("\0"))
      throw invalid(`args[${i}]`, "must be a string without NUL bytes");
  });
  const timeoutMs = req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw invalid("timeoutMs", `must be a positive number (got ${timeoutMs})`);
  const maxCaptureBytes = req.maxCaptureBytes ?? MAX_CAPTURE_BYTES;
  if (!Number.isSafeInteger(maxCaptureBytes) || maxCaptureBytes < 0) {
    throw invalid("maxCaptureBytes", `must be a non-negative integer (got ${maxCaptureBytes})`);
  }
  const killGraceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  if (!(killGraceMs >= 0) || !Number.isFinite(killGraceMs)) {
    throw invalid("killGraceMs", `must be a non-negative finite number (got ${killGraceMs})`);
  }
  if (req.stdin !== undefined && typeof req.stdin !== "string" && !(req.stdin instanceof Uint8Array)) {
    throw invalid("stdin", "must be a string or a Uint8Array");
  }
  const env = req.env ?? buildEnv({ inherit: "minimal" });
  assertValidEnv(env);
  return {
    command: req.command,
    args,
    cwd: req.cwd,
    env,
    stdin: req.stdin,
    timeoutMs: Math.min(timeoutMs, MAX_EXEC_TIMEOUT_MS),
    signal: req.signal,
    holdsLoop: req.holdsLoop !== false,
    maxCaptureBytes,
    killGraceMs: Math.min(killGraceMs, MAX_EXEC_TIMEOUT_MS),
    onOutput: req.onOutput,
    combinedFile: req.combinedFile,
    killGroupOnExit: req.killGroupOnExit ?? true,
  };
}

export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Checks the cwd ourselves: spawn would report a missing cwd as a missing executable. */
export function checkCwd(cwd: string): SpawnError | undefined {
  try {
    if (!statSync(cwd).isDirectory())
      return { code: "ENOTDIR", message: `working directory is not a directory: ${cwd}` };
    return undefined;
  } catch (err) {
    const code = errnoCode(err) ?? "ENOENT";
    if (code === "ENOENT") return { code, message: `working directory does not exist: ${cwd}` };
    return { code, message: `working directory ${cwd} is not usable: ${messageOf(err)}` };
  }
}

export function describeSpawnError(err: unknown, c: CompiledRunRequest): SpawnError {
  const code = errnoCode(err) ?? "UNKNOWN";
  if (code === "ENOENT") {
    const where = c.command.includes("/")
      ? `executable not found: ${c.command} (or its #! interpreter)`
      : `command not found: ${c.command} (searched PATH=${c.env["PATH"] ?? "<unset: system default>"})`;
    return { code, message: where };
  }
  if (code === "EACCES") return { code, message: `permission denied executing ${c.command}` };
  return { code, message: `cannot start ${c.command}: ${messageOf(err)}` };
}

export function emptyResult(durationMs: number, extra: Partial<RunResult>): RunResult {
  return {
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    combined: "",
    stdoutBytes: 0,
    stderrBytes: 0,
    combinedBytes: 0,
    truncated: false,
    omittedBytes: { stdout: 0, stderr: 0, combined: 0 },
    durationMs,
    timedOut: false,
    cancelled: false,
    ...extra,
  };
}
