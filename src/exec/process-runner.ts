/**
 * The one place Ratchet spawns processes. Event-driven (no polling): the run settles when the
 * direct child has exited and its stdout/stderr have closed, or a bounded grace after the exit.
 * See ARCHITECTURE.md for the lifecycle and the kill ladder.
 */

import type { ChildProcess } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { lazyBuiltin } from "../core/index.js";
import { HeadTailCapture } from "./capture.js";
import { POST_KILL_WAIT_MS, STREAM_CLOSE_GRACE_MS } from "./limits.js";
import { drainGroup, type LiveGroup, registerGroup, signalGroup, unregisterGroup } from "./process-group.js";
import {
  type CompiledRunRequest,
  checkCwd,
  compileRunRequest,
  describeSpawnError,
  emptyResult,
  errnoCode,
  messageOf,
  type SpawnError,
} from "./run-request.js";
import { SPAWNER_LOST, spawnerWanted, startThroughSpawner } from "./spawner.js";
import type { ProcessRunner, RunRequest, RunResult } from "./types.js";

// Loaded on the first spawn: most ledger CLI writes never spawn.
const childProcess = lazyBuiltin<typeof import("node:child_process")>("node:child_process");

/** Appends all of `chunk` to `fd`. */
function writeAll(fd: number, chunk: Uint8Array): void {
  let at = 0;
  while (at < chunk.length) at += writeSync(fd, chunk, at, chunk.length - at);
}

/**
 * Runs one process to completion. Resolves for every process-level outcome — success, non-zero
 * exit, signal, timeout, cancellation, spawn failure — and rejects only on programming errors.
 *
 * @throws RatchetError `invalid_value` (as a rejection) when a request field is malformed; or
 *   whatever `onOutput` threw.
 */
export function runProcess(req: RunRequest): Promise<RunResult> {
  let c: CompiledRunRequest;
  try {
    c = compileRunRequest(req);
  } catch (err) {
    return Promise.reject(err);
  }
  const started = performance.now();
  const elapsed = () => performance.now() - started;

  if (c.signal?.aborted) return Promise.resolve(emptyResult(elapsed(), { cancelled: true }));
  const cwdError = c.cwd === undefined ? undefined : checkCwd(c.cwd);
  if (cwdError) return Promise.resolve(emptyResult(elapsed(), { spawnError: cwdError }));

  let fd: number | undefined;
  if (c.combinedFile !== undefined) {
    try {
      fd = openSync(c.combinedFile, "a");
    } catch (err) {
      const spawnError = {
        code: errnoCode(err) ?? "UNKNOWN",
        message: `cannot open combinedFile ${c.combinedFile}: ${messageOf(err)}`,
      };
      return Promise.resolve(emptyResult(elapsed(), { spawnError }));
    }
  }

  if (spawnerWanted()) return runThroughSpawner(c, fd, started);
  return spawnDirect(c, fd, started, undefined);
}

/** Starts `c` with Node's own spawn (libuv forks Node) and supervises it. */
function spawnDirect(
  c: CompiledRunRequest,
  fd: number | undefined,
  started: number,
  stop: StopAtStart | undefined,
): Promise<RunResult> {
  const elapsed = () => performance.now() - started;
  let child: ChildProcess;
  try {
    child = childProcess().spawn(c.command, c.args, {
      cwd: c.cwd,
      env: c.env,
      detached: true,
      stdio: [c.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      windowsHide: true,
    });
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    const code = errnoCode(err);
    // Errno failures (E2BIG, EPERM, …) are the process's; ERR_* argument errors are our bugs.
    if (code === undefined || code.startsWith("ERR_")) return Promise.reject(err);
    return Promise.resolve(emptyResult(elapsed(), { spawnError: describeSpawnError(err, c) }));
  }
  if (!c.holdsLoop) {
    child.unref();
    for (const s of [child.stdout, child.stderr]) (s as { unref?: () => void } | null)?.unref?.();
  }
  return supervise(child, c, fd, started, stop);
}

/**
 * Starts `c` through the resident spawner (spawner.ts) and supervises it like any child. Until
 * the child runs, a placeholder in the registry takes `killAllRunning()`'s request, which the run
 * then carries out on the real group.
 */
function runThroughSpawner(
  c: CompiledRunRequest,
  fd: number | undefined,
  started: number,
): Promise<RunResult> {
  const elapsed = () => performance.now() - started;
  let stop: StopAtStart | undefined;
  let result!: Promise<RunResult>;
  const starting: LiveGroup = {
    pgid: -1,
    shutdown: (graceMs) => {
      stop = { graceMs };
      return result.then(
        () => undefined,
        () => undefined,
      );
    },
    killNow: () => {},
  };
  registerGroup(starting);
  result = new Promise<RunResult>((resolve, reject) => {
    // Called synchronously in the I/O callback that completes the start: supervise() is on the
    // streams before anything already read from them can be emitted.
    startThroughSpawner(c, (s) => {
      unregisterGroup(starting);
      if (s.kind === "fallback") {
        spawnDirect(c, fd, started, stop).then(resolve, reject);
        return;
      }
      if (s.kind === "started") {
        if (!c.holdsLoop) s.child.unref();
        supervise(s.child, c, fd, started, stop).then(resolve, reject);
        s.child.release();
        return;
      }
      if (fd !== undefined) closeSync(fd);
      const spawnError = s.kind === "failed" ? describeSpawnError(s.error, c) : spawnerLost(c, s.pid);
      resolve(emptyResult(elapsed(), { spawnError }));
    });
  });
  return result;
}

function spawnerLost(c: CompiledRunRequest, pid: number | undefined): SpawnError {
  const message =
    pid === undefined
      ? `the process spawner died before it reported whether ${c.command} started; nothing more is known of it`
      : `the process spawner died while ${c.command} ran (pid ${pid}): its process group was killed; its exit status is unknown`;
  return { code: SPAWNER_LOST, message };
}

/** A `killAllRunning()` that came while the run was starting: carried out once it runs. */
interface StopAtStart {
  graceMs: number | undefined;
}

/** The part of a child process `supervise()` uses: a `ChildProcess`, or a {@link SpawnerChild}. */
interface SupervisedChild {
  readonly pid?: number | undefined;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  kill(signal?: NodeJS.Signals): boolean;
  on(event: "error", listener: (err: Error) => void): unknown;
  on(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

/** Watches a spawned child until it settles. */
function supervise(
  child: SupervisedChild,
  c: CompiledRunRequest,
  fileFd: number | undefined,
  started: number,
  stop: StopAtStart | undefined,
): Promise<RunResult> {
  const captures = {
    stdout: new HeadTailCapture(c.maxCaptureBytes),
    stderr: new HeadTailCapture(c.maxCaptureBytes),
    combined: new HeadTailCapture(c.maxCaptureBytes),
  };
  const pid = child.pid;
  let fd = fileFd;
  let combinedFileError: string | undefined;
  let spawnError: SpawnError | undefined;
  let exitCode: number | null = null;
  let exitSignal: NodeJS.Signals | null = null;
  let exited = false;
  let done = false;
  let timedOut = false;
  let cancelled = false;
  let killStage: 0 | 1 | 2 = 0; // none, SIGTERM sent, SIGKILL sent
  let callbackFailure: { error: unknown } | undefined;
  let streamsHeldOpen = false; // the child exited but something in its group kept the pipes open
  let openStreams = 2;
  let timeoutTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let postKillTimer: NodeJS.Timeout | undefined;
  let streamGraceTimer: NodeJS.Timeout | undefined;
  let settle!: (r: RunResult) => void;
  let fail!: (err: unknown) => void;
  let markSettled!: () => void;
  const result = new Promise<RunResult>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  const settled = new Promise<void>((resolve) => {
    markSettled = resolve;
  });

  const sendSignal = (sig: NodeJS.Signals): void => {
    if (pid === undefined) return;
    // The group may not exist yet or any more; the direct child can still be signalled.
    if (!signalGroup(pid, sig) && !exited) child.kill(sig);
  };
  const escalate = (): void => {
    if (done || killStage === 2) return;
    killStage = 2;
    sendSignal("SIGKILL");
    postKillTimer = setTimeout(finish, POST_KILL_WAIT_MS);
  };
  const terminate = (graceMs: number): void => {
    if (done) return;
    if (killStage === 0) {
      killStage = 1;
      sendSignal("SIGTERM");
      if (graceMs > 0) killTimer = setTimeout(escalate, graceMs);
    }
    if (graceMs === 0) escalate();
  };
  const onAbort = (): void => {
    if (exited || done) return;
    cancelled = true;
    terminate(c.killGraceMs);
  };

  const group: LiveGroup = {
    pgid: pid ?? -1,
    shutdown: (graceMs) => {
      if (!exited) {
        cancelled = true;
        terminate(graceMs ?? c.killGraceMs);
      } else {
        // Already exited, only waiting for grandchildren to close the pipes: stop waiting.
        killStage = 2;
        sendSignal("SIGKILL");
        finish();
      }
      return settled;
    },
    killNow: () => {
      if (pid !== undefined) signalGroup(pid, "SIGKILL");
    },
  };

  function finish(): void {
    if (done) return;
    done = true;
    for (const t of [timeoutTimer, killTimer, postKillTimer, streamGraceTimer]) if (t) clearTimeout(t);
    c.signal?.removeEventListener("abort", onAbort);
    unregisterGroup(group);
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
    // The run resolves only once nothing of its group is running (ARCHITECTURE.md, "Leftovers").
    const drained =
      pid !== undefined && (killStage > 0 || streamsHeldOpen || c.killGroupOnExit)
        ? // A time-out or cancellation keeps its SIGTERM grace; leftovers of a leader that exited on
          // its own are SIGKILLed at once (they have no claim to a grace: the run is over).
          drainGroup(pid, c.killGraceMs, { alreadyTerminated: killStage === 1, killNow: killStage !== 1 })
        : Promise.resolve();
    void drained.then(settleNow);
  }

  function settleNow(): void {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch (err) {
        combinedFileError ??= messageOf(err);
      }
    }
    markSettled();
    if (callbackFailure) {
      fail(callbackFailure.error);
      return;
    }
    const out = captures.stdout.snapshot();
    const err = captures.stderr.snapshot();
    const all = captures.combined.snapshot();
    const r: RunResult = {
      exitCode,
      signal: exitSignal,
      stdout: out.text,
      stderr: err.text,
      combined: all.text,
      stdoutBytes: out.totalBytes,
      stderrBytes: err.totalBytes,
      combinedBytes: all.totalBytes,
      truncated: out.truncated || err.truncated || all.truncated,
      omittedBytes: { stdout: out.omittedBytes, stderr: err.omittedBytes, combined: all.omittedBytes },
      durationMs: performance.now() - started,
      timedOut,
      cancelled,
    };
    if (spawnError) r.spawnError = spawnError;
    if (combinedFileError !== undefined) r.combinedFileError = combinedFileError;
    if (pid !== undefined) r.pid = pid;
    settle(r);
  }

  const onData = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
    captures[stream].push(chunk);
    captures.combined.push(chunk);
    if (fd !== undefined) {
      try {
        writeAll(fd, chunk);
      } catch (err) {
        combinedFileError = `writing combinedFile ${c.combinedFile}: ${messageOf(err)}`;
        try {
          closeSync(fd);
        } catch {
          // already reported the write failure
        }
        fd = undefined;
      }
    }
    if (c.onOutput && !callbackFailure) {
      try {
        c.onOutput(chunk, stream);
      } catch (error) {
        callbackFailure = { error };
        terminate(c.killGraceMs);
        if (exited) finish();
      }
    }
  };
  const onStreamClose = (): void => {
    openStreams--;
    if (exited && openStreams === 0) finish();
  };
  for (const stream of ["stdout", "stderr"] as const) {
    const s = child[stream];
    if (!s) {
      openStreams--;
      continue;
    }
    s.on("data", onData(stream));
    let closed = false;
    const onClose = (): void => {
      if (closed) return;
      closed = true;
      onStreamClose();
    };
    s.on("close", onClose);
    s.on("error", () => {}); // a read error ends the stream; `close` follows
    // A spawner child's stream may have closed before we got it (its nonce was read and then EOF).
    if (s.closed) onClose();
  }

  child.on("error", (err) => {
    // The spawner died under a running child: it was killed with its group; the exit that
    // follows carries no status (spawner.ts).
    if (errnoCode(err) === SPAWNER_LOST && !done) {
      spawnError = spawnerLost(c, pid);
      return;
    }
    // Before a pid exists this is a spawn failure (ENOENT, EACCES, …). Later errors come from
    // kill() on a dead process and change nothing.
    if (pid !== undefined || done) return;
    spawnError = describeSpawnError(err, c);
    finish();
  });
  child.on("exit", (code, sig) => {
    if (done) return;
    exited = true;
    exitCode = code;
    exitSignal = sig;
    if (timeoutTimer) clearTimeout(timeoutTimer);
    if (openStreams === 0 || callbackFailure) {
      finish();
      return;
    }
    // Grandchildren may hold the pipes open: wait a little, then stop reading and kill the group.
    streamGraceTimer = setTimeout(() => {
      streamsHeldOpen = true;
      finish();
    }, STREAM_CLOSE_GRACE_MS);
  });

  if (pid !== undefined) {
    registerGroup(group);
    if (c.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {}); // EPIPE when the child does not read its stdin
      child.stdin.end(c.stdin);
    }
    timeoutTimer = setTimeout(() => {
      if (exited || done) return;
      timedOut = true;
      terminate(c.killGraceMs);
    }, c.timeoutMs);
    if (!c.holdsLoop) timeoutTimer.unref();
    c.signal?.addEventListener("abort", onAbort, { once: true });
    // Through the spawner the child starts a moment after the call: a stop asked meanwhile counts.
    if (stop) void group.shutdown(stop.graceMs);
    else if (c.signal?.aborted) onAbort();
  }
  return result;
}

/** The real {@link ProcessRunner}: spawns processes with {@link runProcess}. */
export const realProcessRunner: ProcessRunner = { run: runProcess };
