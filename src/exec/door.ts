/**
 * The one door for untrusted processes. Every learned script, `code_exec`, the runner's
 * `run_command` and DoD runs, `step run` commands and the Builder's `run_script` are described by
 * one {@link Confinement} (what the process may read and write, its environment, its limits, how it
 * is supervised), compiled ONCE per step or task by {@link compileConfinement} into a launcher
 * command line for the launcher this machine has:
 *
 * - `ratchet-confine` (native/confine.c). Version 1 knows `--write`, `--write-file` and `--probe`
 *   (a `landlock abi N` line only). Version 2 adds `--read`, `--proc-self`, `--supervise-only`,
 *   `--timeout-ms`, `--kill-grace-ms` and `--cleanup`, and its probe prints one
 *   `feature NAME yes|no` line per guarantee. A flag is passed only when the probe says the binary
 *   and the kernel support it ({@link parseProbe}); against version 1 only version-1 flags go out.
 * - bubblewrap (Python only, see sandbox.ts), or nothing: the process runs under the guard, the
 *   scrubbed environment and the process runner's own group kill.
 *
 * This file is pure: no I/O. The probing lives in sandbox.ts, the read-root policy in
 * read-roots.ts.
 */
import type { RunResult } from "./types.js";

/** How a process is supervised: fully confined, or only supervised (trusted user commands). */
export const Supervise = {
  /** Landlock + seccomp (+ metadata/signal/proc rules where the launcher has them) and supervision. */
  Confine: "confine",
  /** No confinement, only supervision: timeout, kill of every descendant, cleanup (`step run`). */
  SuperviseOnly: "supervise-only",
} as const;
export type SuperviseMode = (typeof Supervise)[keyof typeof Supervise];

/** What one untrusted process (and everything it starts) may do. */
export interface Confinement {
  /** Folders and files readable (and executable) beneath, besides the write roots. Absolute. */
  readRoots: readonly string[];
  /** Folders writable beneath (also readable). Absolute. */
  writeRoots: readonly string[];
  /** Single files writable (e.g. `/dev/null`). Absolute. */
  writeFiles: readonly string[];
  /** The complete environment of the process. */
  env: Record<string, string>;
  /**
   * Time limit from start, in milliseconds; the launcher enforces it itself where it can. `0`: the
   * launcher sets no limit (the process runner's own `timeoutMs` applies, e.g. the runner's
   * commands, whose callers read `timedOut`); supervision and cleanup still hold.
   */
  timeoutMs: number;
  /** Milliseconds between SIGTERM and SIGKILL when the time limit strikes. */
  killGraceMs: number;
  supervise: SuperviseMode;
  /** Folders removed once everything the process started is gone (also when Ratchet died). */
  cleanup: readonly string[];
  /** Whether the process may read its own `/proc/<pid>` (default true; nothing else of `/proc`). */
  procSelf?: boolean;
}

/** What the built `ratchet-confine` and this kernel can enforce (from `--probe`). */
export interface ConfineFeatures {
  /** The kernel's Landlock ABI version. */
  abi: number;
  /** The binary speaks the v2 contract (`feature …` lines): supervision flags exist. */
  v2: boolean;
  /** Reads are confined to `--read` roots. */
  reads: boolean;
  /** chmod/chown/utime/xattr outside the write roots fail. */
  metadata: boolean;
  /** Signals to processes outside the sandbox fail. */
  signals: boolean;
  /** `/proc/<pid>/environ|cmdline|mem|maps` of processes outside the sandbox cannot be read. */
  proc: boolean;
}

/**
 * Parses `ratchet-confine --probe`'s stdout. Undefined when there is no `landlock abi N` line. A
 * v1 binary prints only that line: then only writes are enforced (and signals from ABI 6, which v1
 * already scopes).
 */
export function parseProbe(stdout: string): ConfineFeatures | undefined {
  const abi = /^landlock abi (\d+)$/m.exec(stdout);
  if (!abi) return undefined;
  const features = new Map<string, boolean>();
  for (const m of stdout.matchAll(/^feature ([a-z_-]+) (yes|no)$/gm))
    features.set(m[1] ?? "", m[2] === "yes");
  const n = Number(abi[1]);
  const v2 = features.size > 0;
  return {
    abi: n,
    v2,
    reads: features.get("reads") === true,
    metadata: features.get("metadata") === true,
    signals: v2 ? features.get("signals") === true : n >= 6,
    proc: features.get("proc") === true,
  };
}

/** The launcher a machine has for untrusted processes. */
export type Launcher =
  | { kind: "ratchet-confine"; path: string; features: ConfineFeatures }
  | { kind: "none"; reason: string };

/** The guarantees, by name, as `ratchet doctor` reports them. */
export const GUARANTEES = ["writes", "reads", "metadata", "signals", "proc", "supervision"] as const;
export type Guarantee = (typeof GUARANTEES)[number];

/** Which guarantees a launcher enforces. */
export function enforcedBy(launcher: Launcher): Record<Guarantee, boolean> {
  if (launcher.kind === "none")
    return { writes: false, reads: false, metadata: false, signals: false, proc: false, supervision: false };
  const f = launcher.features;
  return {
    writes: true,
    reads: f.reads,
    metadata: f.metadata,
    signals: f.signals,
    proc: f.proc,
    supervision: f.v2,
  };
}

/**
 * Extra time the process runner waits beyond the launcher's own time limit before it kills the
 * launcher itself (a backstop: the launcher reports its own time-out first).
 */
export const LAUNCHER_TIMEOUT_MARGIN_MS = 5000;

/** A {@link Confinement} compiled for one launcher: what to spawn, and how to read the result. */
export interface Door {
  /** `landlock` (ratchet-confine, confined), `supervised` (ratchet-confine `--supervise-only`), or `none`. */
  protection: "landlock" | "supervised" | "none";
  /** Whether the launcher enforces the time limit itself (it survives `kill -9` of Ratchet). */
  launcherTimeout: boolean;
  /** The launcher's cleanup covers `cleanup` (else the caller removes the folders). */
  launcherCleanup: boolean;
  /** The process runner's time limit (the launcher's plus a margin when the launcher enforces it). */
  runnerTimeoutMs: number;
  killGraceMs: number;
  env: Record<string, string>;
  /** The command line that runs `program args` through the launcher. */
  command(program: string, args: readonly string[]): { command: string; args: string[] };
}

/** Drops duplicates (first wins), keeping order. */
function unique(paths: readonly string[]): string[] {
  return [...new Set(paths)];
}

/**
 * The `ratchet-confine` flags for `c` (before `--`), given what the binary supports. Pure: the
 * unit tests check the exact command lines.
 */
export function launcherFlags(c: Confinement, f: ConfineFeatures): string[] {
  const limit =
    c.timeoutMs > 0
      ? [
          "--timeout-ms",
          String(Math.max(1, Math.round(c.timeoutMs))),
          "--kill-grace-ms",
          String(Math.max(0, Math.round(c.killGraceMs))),
        ]
      : [];
  const supervision = f.v2 ? [...limit, ...unique(c.cleanup).flatMap((d) => ["--cleanup", d])] : [];
  if (c.supervise === Supervise.SuperviseOnly) return ["--supervise-only", ...supervision];
  const writes = unique(c.writeRoots);
  const reads = f.reads ? unique(c.readRoots).filter((r) => !writes.includes(r)) : [];
  return [
    ...supervision,
    ...writes.flatMap((d) => ["--write", d]),
    ...unique(c.writeFiles).flatMap((p) => ["--write-file", p]),
    ...reads.flatMap((r) => ["--read", r]),
    ...(f.reads && f.proc && c.procSelf !== false ? ["--proc-self"] : []),
  ];
}

/**
 * Compiles `c` once for `launcher`. A supervise-only confinement with a v1 launcher (no
 * supervision flags) runs the program directly: the process runner's group kill is all there is.
 */
export function compileConfinement(c: Confinement, launcher: Launcher): Door {
  const direct: Door = {
    protection: "none",
    launcherTimeout: false,
    launcherCleanup: false,
    runnerTimeoutMs: c.timeoutMs,
    killGraceMs: c.killGraceMs,
    env: c.env,
    command: (program, args) => ({ command: program, args: [...args] }),
  };
  if (launcher.kind === "none") return direct;
  const f = launcher.features;
  if (c.supervise === Supervise.SuperviseOnly && !f.v2) return direct;
  const flags = launcherFlags(c, f);
  return {
    protection: c.supervise === Supervise.SuperviseOnly ? "supervised" : "landlock",
    launcherTimeout: f.v2 && c.timeoutMs > 0,
    launcherCleanup: f.v2,
    runnerTimeoutMs:
      f.v2 && c.timeoutMs > 0 ? c.timeoutMs + c.killGraceMs + LAUNCHER_TIMEOUT_MARGIN_MS : c.timeoutMs,
    killGraceMs: c.killGraceMs,
    env: c.env,
    command: (program, args) => ({ command: launcher.path, args: [...flags, "--", program, ...args] }),
  };
}

/** Exit status `ratchet-confine` v2 reports when it killed the program at its time limit. */
export const LAUNCHER_TIMEOUT_EXIT = 124;

/** `ratchet-confine: cannot run PROGRAM: REASON` (exit 127): the program itself could not be started. */
const NOT_RUNNABLE = /^ratchet-confine: cannot run (.+): ([^\n]+)$/m;
const NOT_RUNNABLE_EXIT = 127;

/**
 * A run through the door read as the process runner would report the program run bare: the
 * launcher's time limit is a time-out, and a program the launcher could not start (exit 127 with
 * its `cannot run` line) is a `spawnError` (`command not found: …` for a missing file), not the
 * program's own failure. Runs that did not go through the launcher are returned as they are.
 */
export function settleLaunched(door: Pick<Door, "protection" | "launcherTimeout">, r: RunResult): RunResult {
  if (launcherTimedOut(door, r.exitCode, r.stderr)) return { ...r, timedOut: true };
  if (door.protection === "none" || r.exitCode !== NOT_RUNNABLE_EXIT || r.spawnError) return r;
  const m = NOT_RUNNABLE.exec(r.stderr);
  if (!m) return r;
  const [, program, reason] = m as unknown as [string, string, string];
  const missing = /No such file or directory/.test(reason);
  return {
    ...r,
    exitCode: null,
    spawnError: {
      code: missing ? "ENOENT" : "EACCES",
      message: missing ? `command not found: ${program}` : `cannot run ${program}: ${reason}`,
    },
  };
}

/** Whether a run ended because the launcher's own time limit struck (v2: exit 124 and its line). */
export function launcherTimedOut(
  door: Pick<Door, "launcherTimeout">,
  exitCode: number | null,
  stderr: string,
): boolean {
  return (
    door.launcherTimeout &&
    exitCode === LAUNCHER_TIMEOUT_EXIT &&
    /^ratchet-confine: timed out after \d+ ms$/m.test(stderr)
  );
}
