/**
 * `run-step`: start the step, run the command through `exec/` while renewing the lease, cut the
 * combined output once (8 KiB head + marker + 8 KiB tail) for the row and keep the whole output as
 * a blob, add the `--- exit_code=N, runtime=Ns ---` footer, then complete or fail the step — and
 * report the command's own exit status.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_STEP_RUN_TIMEOUT_SECONDS,
  headTail,
  LOG_HEAD_BYTES,
  LOG_TAIL_BYTES,
} from "../core/index.js";
// The process door is loaded when a command runs, not by every ledger write that loads this file.
import type { Launcher, ProcessRunner, RunResult } from "../exec/index.js";
import type { RunInput } from "./inputs.js";
import type { Ledger } from "./ledger.js";
import { parseMetricLines } from "./metrics.js";

export interface RunStepOptions {
  runner?: ProcessRunner;
  signal?: AbortSignal;
  /** Folder for the temporary full-output file (default: the OS temp folder). */
  tmpDir?: string;
  /** Live output, secrets masked line by line (the CLI streams it to stderr so the caller sees progress). */
  onOutput?: (chunk: Buffer) => void;
  env?: NodeJS.ProcessEnv;
  /**
   * The supervisor (`ratchet-confine --supervise-only --timeout-ms …`): the command is killed at
   * its time limit, with everything it started, even when Ratchet itself is killed -9. Default: the
   * built launcher when its probe passes (none when a custom `runner` is given).
   */
  launcher?: Launcher;
}

/** Exit status reported for a command that could not be started (as a shell does). */
export const EXIT_NOT_STARTED = 127;
/** Exit status reported for a command killed at its time limit (as `timeout(1)` does). */
export const EXIT_TIMED_OUT = 124;
/** Exit status reported for a cancelled command (128 + SIGINT). */
export const EXIT_CANCELLED = 130;

const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGTERM: 15,
  SIGSEGV: 11,
  SIGABRT: 6,
  SIGPIPE: 13,
};

/** Prefix of the temporary folders `step run` keeps the full output in while the command runs. */
export const RUN_DIR_PREFIX = "ratchet-run-";

/**
 * Removes temporary output folders left by `step run` processes that died (e.g. `kill -9`): they
 * hold the command's raw output. Returns the folders removed.
 */
export async function cleanStaleRunDirs(dir: string): Promise<string[]> {
  const { sweepStaleDirs } = await import("../exec/index.js");
  return sweepStaleDirs(dir, RUN_DIR_PREFIX);
}

/**
 * Wraps a live-output sink so secrets are masked before they are shown: text is passed on a whole
 * line at a time (a secret split across two chunks is still caught), the rest on `flush()`.
 */
export function redactingLineSink(redact: (s: string) => string, sink: (text: string) => void) {
  let pending = "";
  return {
    write(chunk: Buffer | string): void {
      pending += chunk.toString();
      const nl = pending.lastIndexOf("\n");
      if (nl < 0) {
        if (pending.length > 64 * 1024) {
          sink(redact(pending));
          pending = "";
        }
        return;
      }
      sink(redact(pending.slice(0, nl + 1)));
      pending = pending.slice(nl + 1);
    },
    flush(): void {
      if (pending) sink(redact(pending));
      pending = "";
    },
  };
}

export function exitStatusOf(r: RunResult): number {
  if (r.spawnError) return EXIT_NOT_STARTED;
  if (r.timedOut) return EXIT_TIMED_OUT;
  if (r.cancelled) return EXIT_CANCELLED;
  if (r.exitCode !== null) return r.exitCode;
  return 128 + (r.signal ? (SIGNAL_NUMBERS[r.signal] ?? 0) : 0);
}

export async function runStep(ledger: Ledger, input: RunInput, opts: RunStepOptions = {}) {
  const {
    buildEnv,
    compileConfinement,
    DEFAULT_KILL_GRACE_MS,
    realProcessRunner,
    Supervise,
    settleLaunched,
    supervisorLauncher,
    sweepStaleDirs,
  } = await import("../exec/index.js");
  const leaseSeconds = input.lease_seconds ?? DEFAULT_LEASE_SECONDS;
  ledger.startForRun(input.step_id, input.type, input.command, leaseSeconds);

  // Renew the lease while the command runs, well before it expires.
  const renewEveryMs = Math.max(250, Math.floor((leaseSeconds * 1000) / 3));
  const timer = setInterval(() => {
    try {
      ledger.heartbeat({ step_id: input.step_id, lease_seconds: leaseSeconds });
    } catch {
      // A failed renewal (e.g. the step was swept) is reported by the completion below.
    }
  }, renewEveryMs);
  timer.unref();

  const live = opts.onOutput
    ? redactingLineSink(
        (t) => ledger.redactor.redact(t),
        (t) => opts.onOutput?.(Buffer.from(t)),
      )
    : undefined;
  sweepStaleDirs(opts.tmpDir ?? tmpdir(), RUN_DIR_PREFIX);
  // The folder name carries our pid so a later sweep can remove what a killed run left behind.
  const dir = mkdtempSync(join(opts.tmpDir ?? tmpdir(), `${RUN_DIR_PREFIX}${process.pid}-`));
  const fullFile = join(dir, "combined.out");
  const started = Date.now();
  // A trusted command: supervised, not confined. The supervisor owns the time limit.
  const launcher: Launcher =
    opts.launcher ??
    (opts.runner ? { kind: "none", reason: "custom process runner" } : await supervisorLauncher());
  const door = compileConfinement(
    {
      readRoots: [],
      writeRoots: [],
      writeFiles: [],
      env: buildEnv({ inherit: "all", base: opts.env ?? process.env }),
      timeoutMs: (input.timeout_seconds ?? DEFAULT_STEP_RUN_TIMEOUT_SECONDS) * 1000,
      killGraceMs: DEFAULT_KILL_GRACE_MS,
      supervise: Supervise.SuperviseOnly,
      cleanup: [],
    },
    launcher,
  );
  let result: RunResult;
  try {
    result = await (opts.runner ?? realProcessRunner).run({
      ...door.command("bash", ["-c", input.command]),
      cwd: input.cwd ?? process.cwd(),
      env: door.env,
      timeoutMs: door.runnerTimeoutMs,
      killGraceMs: door.killGraceMs,
      ...(opts.signal ? { signal: opts.signal } : {}),
      combinedFile: fullFile,
      ...(live ? { onOutput: (chunk: Buffer) => live.write(chunk) } : {}),
    });
  } finally {
    clearInterval(timer);
    live?.flush();
  }
  result = settleLaunched(door, result);
  let full: string;
  try {
    full = readFileSync(fullFile, "utf8");
  } catch {
    full = result.combined;
  }
  rmSync(dir, { recursive: true, force: true });
  // Mask secrets before cutting: a secret straddling a cut would otherwise leave its pieces in the row.
  full = ledger.redactor.redact(full);

  const exitCode = exitStatusOf(result);
  const runtimeS = ((result.durationMs || Date.now() - started) / 1000).toFixed(2);
  let note = "";
  if (result.spawnError) note = `[run-step] could not start the command: ${result.spawnError.message}\n`;
  else if (result.timedOut)
    note = `[run-step] killed after the ${input.timeout_seconds ?? DEFAULT_STEP_RUN_TIMEOUT_SECONDS}s time limit\n`;
  else if (result.cancelled) note = "[run-step] cancelled\n";
  const cut = headTail(full, LOG_HEAD_BYTES, LOG_TAIL_BYTES);
  const footer = `${full === "" || full.endsWith("\n") ? "" : "\n"}--- exit_code=${exitCode}, runtime=${runtimeS}s ---`;
  const display = note + cut.text + footer;
  const log = { kind: "run", text: display, ...(cut.truncated ? { full: note + full + footer } : {}) };

  const succeeded =
    exitCode === 0 ||
    (input.allow_nonzero === true && !result.spawnError && !result.timedOut && !result.cancelled);
  const metrics = input.metrics_from_stdout ? parseMetricLines(result.stdout) : [];
  const rollup = ledger.store.tx(() => {
    for (const m of metrics) ledger.recordMetricInTx({ ...m, step_id: input.step_id });
    if (succeeded) {
      return ledger.complete(
        { step_id: input.step_id, ...(input.summary !== undefined ? { summary: input.summary } : {}) },
        { viaRun: true, exitCode, log },
      );
    }
    const reason = result.spawnError
      ? `command could not start: ${result.spawnError.message}`
      : result.timedOut
        ? `command timed out after ${input.timeout_seconds ?? DEFAULT_STEP_RUN_TIMEOUT_SECONDS}s`
        : result.cancelled
          ? "command stopped by a signal (command cancelled)"
          : `command exited with ${exitCode}`;
    return ledger.fail({ step_id: input.step_id, reason }, { exitCode, log });
  });
  return {
    ...rollup,
    exit_code: exitCode,
    runtime_s: Number(runtimeS),
    truncated: cut.truncated,
    output_bytes: cut.totalBytes,
    metrics_recorded: metrics.length,
    timed_out: result.timedOut,
    cancelled: result.cancelled,
  };
}
