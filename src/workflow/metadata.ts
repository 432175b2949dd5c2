/**
 * `script_metadata.json`: the run history of a learned script. It lives in the run home
 * (layout.ts `historyDir`: `<workspace>/.ratchet/scripts/{workflow-id}/{step-id}/`), not in the
 * workflow's folder, so a run never writes there; the functions here take that folder.
 *
 * Every run of a saved script is recorded ({@link recordScriptRun}), also when no metadata file
 * exists yet, and also for locked scripts. Runs never change `script_version` or `relearn_count`:
 * only the Builder saving different bytes does ({@link noteSavedScript}). The file is replaced
 * atomically (temp file in the same folder, fsync, rename), so a reader sees the old or the new
 * version, never half of one. The update itself is the pure {@link applyRun}.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  fdatasyncSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { ERROR_SNIPPET_MAX_CHARS, LOCKED_FAILURES_BEFORE_REVIEW, RECENT_RUNS_KEPT } from "./limits.js";
import type { RecentRun, ScriptMetadata } from "./types.js";

export const SCRIPT_METADATA_FILE = "script_metadata.json";
/** The `group_stats` key of runs without a variable group. */
export const NO_GROUP_KEY = "(none)";

/** One run of a saved script, as the fast path reports it. */
export interface ScriptRun {
  stepId: string;
  /** The bytes of the script that ran (hashed into `script_sha256` when the file is created). */
  scriptBytes: Buffer;
  /** Script exited and its outputs validated. */
  success: boolean;
  exitCode: number | null;
  durationMs: number;
  groupName: string | null;
  /** The run's step output folder (absolute: `<run home>/runs/{run-id}/{step-id}`), as recorded in `recent_runs`. */
  runFolder: string;
  /** Why it failed; ignored (stored as null) for a success. */
  failureReason: RecentRun["failure_reason"];
  /** Stored in full in `recent_runs`; cut to {@link ERROR_SNIPPET_MAX_CHARS} in `last_failure`. */
  errorSummary: string | null;
  /** The step has `lock_code: true`. */
  locked: boolean;
  now: Date;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Keeps the head and the tail of `text` within `max` characters (the tail holds the exception). */
function snippet(text: string, max = ERROR_SNIPPET_MAX_CHARS): string {
  if (text.length <= max) return text;
  const marker = (n: number) => `\n…[${n} chars omitted]…\n`;
  const head = Math.floor(max / 4);
  // The marker's length depends on the omitted count; size it for the worst case first.
  const tail = max - head - marker(text.length).length;
  return text.slice(0, head) + marker(text.length - head - tail) + text.slice(text.length - tail);
}

function fresh(run: Pick<ScriptRun, "stepId" | "scriptBytes" | "now">): ScriptMetadata {
  return {
    step_id: run.stepId,
    script_version: 1,
    script_sha256: sha256Hex(run.scriptBytes),
    created_at: run.now.toISOString(),
    last_run_at: null,
    relearn_count: 0,
    total_runs: 0,
    successful_runs: 0,
    failed_runs: 0,
    recent_runs: [],
    group_stats: {},
    duration_stats: { min_ms: null, max_ms: null, avg_ms: null, last_ms: null },
    last_failure: null,
    current_streak: 0,
    lock_code_stats: { locked_runs: 0, consecutive_locked_failures: 0, needs_review: false },
  };
}

/**
 * The metadata after one more run. Pure: `prev` is not modified. Without `prev` a new record is
 * started (script_version 1, `script_sha256` of the run's bytes).
 */
export function applyRun(prev: ScriptMetadata | undefined, run: ScriptRun): ScriptMetadata {
  const base = prev ?? fresh(run);
  const ts = run.now.toISOString();
  const failureReason = run.success ? null : (run.failureReason ?? "execution_error");
  const total = base.total_runs + 1;

  const recent: RecentRun = {
    timestamp: ts,
    success: run.success,
    exit_code: run.exitCode,
    duration_ms: run.durationMs,
    group_name: run.groupName,
    run_folder: run.runFolder,
    failure_reason: failureReason,
    error_summary: run.errorSummary,
  };

  const groupKey = run.groupName ?? NO_GROUP_KEY;
  const g = base.group_stats[groupKey] ?? { runs: 0, successes: 0, failures: 0 };

  const d = base.duration_stats;
  const prevAvg = d.avg_ms ?? 0;
  const avg = prevAvg + (run.durationMs - prevAvg) / total;

  const lock = base.lock_code_stats;
  const consecutiveLocked = run.success ? 0 : run.locked ? lock.consecutive_locked_failures + 1 : 0;

  return {
    ...base,
    last_run_at: ts,
    total_runs: total,
    successful_runs: base.successful_runs + (run.success ? 1 : 0),
    failed_runs: base.failed_runs + (run.success ? 0 : 1),
    recent_runs: [...base.recent_runs, recent].slice(-RECENT_RUNS_KEPT),
    group_stats: {
      ...base.group_stats,
      [groupKey]: {
        runs: g.runs + 1,
        successes: g.successes + (run.success ? 1 : 0),
        failures: g.failures + (run.success ? 0 : 1),
      },
    },
    duration_stats: {
      min_ms: d.min_ms === null ? run.durationMs : Math.min(d.min_ms, run.durationMs),
      max_ms: d.max_ms === null ? run.durationMs : Math.max(d.max_ms, run.durationMs),
      avg_ms: Math.round(avg * 100) / 100,
      last_ms: run.durationMs,
    },
    last_failure: run.success
      ? base.last_failure
      : {
          timestamp: ts,
          exit_code: run.exitCode,
          failure_reason: failureReason ?? "execution_error",
          error_snippet: snippet(run.errorSummary ?? ""),
        },
    current_streak: run.success
      ? base.current_streak > 0
        ? base.current_streak + 1
        : 1
      : base.current_streak < 0
        ? base.current_streak - 1
        : -1,
    lock_code_stats: {
      locked_runs: lock.locked_runs + (run.locked ? 1 : 0),
      consecutive_locked_failures: consecutiveLocked,
      needs_review: run.success
        ? false
        : lock.needs_review || consecutiveLocked >= LOCKED_FAILURES_BEFORE_REVIEW,
    },
  };
}

function metadataFile(dir: string): string {
  return join(dir, SCRIPT_METADATA_FILE);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Fills fields missing from an older or hand-edited file with their empty values, so an update
 * never fails on a partial record.
 */
function normalise(raw: Record<string, unknown>, file: string): ScriptMetadata {
  const stepId = typeof raw.step_id === "string" ? raw.step_id : basename(dirname(file));
  const empty = fresh({ stepId, scriptBytes: Buffer.alloc(0), now: new Date(0) });
  const m = { ...empty, ...raw } as ScriptMetadata;
  if (typeof raw.created_at !== "string") m.created_at = empty.created_at;
  if (!Array.isArray(m.recent_runs)) m.recent_runs = [];
  if (!isObject(m.group_stats)) m.group_stats = {};
  m.duration_stats = { ...empty.duration_stats, ...(isObject(raw.duration_stats) ? raw.duration_stats : {}) };
  m.lock_code_stats = {
    ...empty.lock_code_stats,
    ...(isObject(raw.lock_code_stats) ? raw.lock_code_stats : {}),
  };
  return m;
}

/**
 * Reads `script_metadata.json` from a learnings step folder; `undefined` when there is none.
 * @throws RatchetError `malformed_input` naming the file when it is not a JSON object;
 *   `unreadable_input` when it cannot be read.
 */
export function readMetadata(learningsStepDir: string): ScriptMetadata | undefined {
  const file = metadataFile(learningsStepDir);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `${file}: cannot read: ${String(e)}`,
      { file },
      { cause: e },
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${file}: invalid JSON: ${String(e)}`,
      { file },
      { cause: e },
    );
  }
  if (!isObject(raw))
    throw new RatchetError(ErrorCode.MalformedInput, `${file}: not a JSON object`, { file });
  return normalise(raw, file);
}

/**
 * Writes `data` to `path` atomically: a temp file in the same folder, fsync, rename over `path`,
 * then fsync of the folder (best effort). With `durable: false` the folder is not synced (and the
 * file's data only with fdatasync): a reader still sees the old or the new file, never a torn one,
 * but after a power cut the rename itself may be lost, as SQLite's `synchronous=NORMAL` may lose
 * the last commits. Used for the per-run counters of `script_metadata.json`, written by every
 * step of every run.
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  opts: { durable?: boolean } = {},
): void {
  const durable = opts.durable !== false;
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", 0o644);
  try {
    try {
      writeSync(fd, typeof data === "string" ? Buffer.from(data, "utf8") : data);
      if (durable) fsyncSync(fd);
      else fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  if (!durable) return;
  try {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some file systems refuse fsync on a folder; the rename is still atomic.
  }
}

/**
 * {@link writeFileAtomic} with `durable: false`, on libuv's thread pool: the same steps (temp file
 * in the same folder, `fdatasync`, rename), so the same guarantee (a reader sees the old or the new
 * file; a power cut may lose the last rename), without holding the event loop while the file
 * system commits. A run writes `script_metadata.json` this way while the next script runs.
 */
export async function writeFileAtomicAsync(path: string, data: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    const fh = await open(tmp, "wx", 0o644);
    try {
      await fh.writeFile(data, "utf8");
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

function write(dir: string, meta: ScriptMetadata, opts: { durable?: boolean } = {}): void {
  writeFileAtomic(metadataFile(dir), `${JSON.stringify(meta, null, 2)}\n`, opts);
}

/**
 * Reads the existing record, or sets an unreadable one aside as `script_metadata.corrupt-<time>.json`
 * (nothing is lost) and starts a new one.
 */
function readOrSetAside(dir: string, now: Date): ScriptMetadata | undefined {
  try {
    return readMetadata(dir);
  } catch (e) {
    if (!(e instanceof RatchetError) || e.code !== ErrorCode.MalformedInput) throw e;
    const stamp = now.toISOString().replace(/[-:.]/g, "");
    renameSync(metadataFile(dir), join(dir, `script_metadata.corrupt-${stamp}.json`));
    return undefined;
  }
}

/**
 * Records one run of a saved script in `learningsStepDir/script_metadata.json` and returns the new
 * record. Always records: creates the folder and the file (script_version 1) when missing.
 * @throws RatchetError `unreadable_input` when the existing file cannot be read.
 */
export function recordScriptRun(learningsStepDir: string, run: ScriptRun): ScriptMetadata {
  const next = applyRun(readOrSetAside(learningsStepDir, run.now), run);
  write(learningsStepDir, next, { durable: false });
  return next;
}

/**
 * {@link recordScriptRun} with the write on the thread pool ({@link writeFileAtomicAsync}); the
 * read of the previous record stays synchronous (one small file, already cached).
 * @throws RatchetError `unreadable_input` (as a rejection) when the existing file cannot be read.
 */
export async function recordScriptRunAsync(
  learningsStepDir: string,
  run: ScriptRun,
): Promise<ScriptMetadata> {
  const next = applyRun(readOrSetAside(learningsStepDir, run.now), run);
  await writeFileAtomicAsync(metadataFile(learningsStepDir), `${JSON.stringify(next, null, 2)}\n`);
  return next;
}

/**
 * Notes that the Builder saved `scriptBytes` as the step's script. A new record starts at
 * script_version `opts.firstVersion` (default 1: a workspace that has no history of a script the
 * workflow already carries continues after its newest diff); when the bytes' sha256 differs from `script_sha256`, `script_version` and
 * `relearn_count` go up by one. Same bytes: nothing changes (and nothing is written).
 * @param stepId defaults to the folder's name (`{step-id}`)
 */
export function noteSavedScript(
  learningsStepDir: string,
  scriptBytes: Uint8Array,
  now: Date,
  stepId: string = basename(learningsStepDir),
  opts: { firstVersion?: number } = {},
): ScriptMetadata {
  const prev = readOrSetAside(learningsStepDir, now);
  const sha = sha256Hex(scriptBytes);
  if (!prev) {
    const first = opts.firstVersion ?? 1;
    const created: ScriptMetadata = {
      ...fresh({ stepId, scriptBytes: Buffer.from(scriptBytes), now }),
      script_version: first,
      relearn_count: first - 1,
    };
    write(learningsStepDir, created);
    return created;
  }
  if (prev.script_sha256 === sha) return prev;
  const next: ScriptMetadata = {
    ...prev,
    script_version: prev.script_version + 1,
    relearn_count: prev.relearn_count + 1,
    script_sha256: sha,
  };
  write(learningsStepDir, next);
  return next;
}
