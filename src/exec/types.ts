/** The contract of the process runner: one request in, one result out, never a rejection for process failures. */

/** What to run and how. Every field but `command` is optional; defaults are given per field. */
export interface RunRequest {
  /**
   * Executable path or name. A bare name is looked up in the `PATH` of `env` (the child's
   * environment, not the parent's); with no `PATH` there, the system default path is searched.
   */
  command: string;
  /** Arguments, passed as-is (no shell). Default `[]`. */
  args?: readonly string[];
  /** Working directory. Must exist; a missing one is reported as `spawnError`. Default: the parent's cwd. */
  cwd?: string;
  /**
   * The COMPLETE environment of the child: nothing is inherited implicitly. Compose it with
   * `buildEnv()`. Default `buildEnv({ inherit: "minimal" })`.
   */
  env?: Record<string, string>;
  /** Written to the child's stdin, which is then closed. Default: stdin is `/dev/null`. */
  stdin?: string | Uint8Array;
  /**
   * Time limit in milliseconds, counted from spawn until the direct child exits. On expiry the
   * whole process group is killed and the result says `timedOut`. Default
   * `DEFAULT_EXEC_TIMEOUT_MS` (10 minutes); values above `MAX_EXEC_TIMEOUT_MS` are clamped.
   */
  timeoutMs?: number;
  /** Cancels the run: the whole process group is killed and the result says `cancelled`. */
  signal?: AbortSignal;
  /**
   * Whether the running child keeps Node's event loop alive. Default true. `false` for resident
   * helpers (the forkserver): Node may exit while it runs, and the launcher's parent-death signal
   * then ends it.
   */
  holdsLoop?: boolean;
  /**
   * Capture cap in bytes, applied to stdout, stderr and the combined stream separately. Beyond it
   * the first half and a rolling last half are kept and the rest is counted. Default
   * `MAX_CAPTURE_BYTES` (64 MiB).
   */
  maxCaptureBytes?: number;
  /** Milliseconds between SIGTERM and SIGKILL to the process group. Default `DEFAULT_KILL_GRACE_MS` (2000). */
  killGraceMs?: number;
  /**
   * Called with every chunk as it arrives (raw bytes, not decoded). A throw here is a programming
   * error: the process group is killed and the run rejects with it.
   */
  onOutput?: (chunk: Buffer, stream: "stdout" | "stderr") => void;
  /**
   * When set, the FULL combined output (uncapped, raw bytes) is appended to this file as it
   * arrives. A file that cannot be opened is reported as `spawnError` and nothing is started.
   */
  combinedFile?: string;
  /**
   * After the direct child exits, SIGKILL whatever is left in its process group, and resolve only
   * once none of it is running, so no orphan outlives the run (nor writes after it). Default `true`.
   */
  killGroupOnExit?: boolean;
}

/** Bytes omitted from each capture (the counts shown in the truncation markers). */
export interface OmittedBytes {
  stdout: number;
  stderr: number;
  combined: number;
}

/** What happened. Always resolved, whether the command succeeded, failed, timed out or never started. */
export interface RunResult {
  /** The exit status, or `null` when killed by a signal or not started. */
  exitCode: number | null;
  /** The signal that ended the child, or `null`. */
  signal: NodeJS.Signals | null;
  /** Captured (capped) stdout, decoded as UTF-8 (invalid bytes become U+FFFD). */
  stdout: string;
  /** Captured (capped) stderr. */
  stderr: string;
  /** Captured (capped) stdout and stderr interleaved by chunk in arrival order. */
  combined: string;
  /** Total bytes written to stdout (not capped). */
  stdoutBytes: number;
  /** Total bytes written to stderr (not capped). */
  stderrBytes: number;
  /** `stdoutBytes + stderrBytes`. */
  combinedBytes: number;
  /** True exactly when any capture dropped bytes. */
  truncated: boolean;
  /** Bytes dropped from each capture; all 0 when `truncated` is false. */
  omittedBytes: OmittedBytes;
  /** Wall time from just before spawn to resolution, in milliseconds. */
  durationMs: number;
  /** The time limit expired and the group was killed. */
  timedOut: boolean;
  /** The run was cancelled (AbortSignal or `killAllRunning()`) and the group was killed. */
  cancelled: boolean;
  /**
   * The process could not be started (missing executable, not executable, missing cwd,
   * unopenable `combinedFile`): a harness failure, distinct from a non-zero exit. `code` is the
   * errno name (`ENOENT`, `EACCES`, `ENOTDIR`, …), or `ESPAWNER` when the process spawner died
   * under the run (its group was killed; `pid` is set, the exit status unknown).
   */
  spawnError?: { code: string; message: string };
  /** Set when appending to `combinedFile` failed mid-run (the run itself went on). */
  combinedFileError?: string;
  /** Process id of the direct child (also its process group id). */
  pid?: number;
}

/** Runs processes. The real adapter is `realProcessRunner`; tests pass `FakeProcessRunner`. */
export interface ProcessRunner {
  /** Runs one process to completion. Rejects only on programming errors (invalid request). */
  run(req: RunRequest): Promise<RunResult>;
}
