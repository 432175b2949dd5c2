/**
 * The artifacts of a task in `output_dir`, each file written atomically (temp file + rename);
 * the two `.jsonl` logs are appended line by line. Everything but the raw patch passes the task's
 * redaction (known secret values masked) before it is written or handed to `onEvent`.
 */
import { appendFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Task states in `{task_id}.status.json`. Stored as strings; never renamed. */
export const TaskState = {
  Preflight: "preflight",
  Running: "running",
  Passed: "passed",
  Failed: "failed",
  Refused: "refused",
  Error: "error",
} as const;
export type TaskState = (typeof TaskState)[keyof typeof TaskState];

/** The states after which nothing more is written. */
export const TERMINAL_STATES: readonly TaskState[] = ["passed", "failed", "refused", "error"];

/** Writes `data` to `file` atomically (a temp file in the same folder, then rename). */
export function writeAtomic(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

let asyncWrites = 0;

/** {@link writeAtomic} off the main thread (its own temp name: several can be in flight). */
async function writeAtomicAsync(file: string, data: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${Date.now()}.${++asyncWrites}.async.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

/** One event line of `{task_id}.events.jsonl`. */
export interface TaskEvent {
  seq: number;
  time: string;
  task_id: string;
  type: string;
  [key: string]: unknown;
}

/** The artifact files of one task. */
export class TaskArtifacts {
  private seq = 0;
  /** Status writes still in flight (see {@link TaskArtifacts.progress}), in order. */
  private statusQueue: Promise<void> | undefined;
  private statusError: unknown;
  constructor(
    readonly dir: string,
    readonly taskId: string,
    private readonly onEvent?: (e: TaskEvent) => void,
    /** Masks known secrets in every text written (default: none). */
    private readonly redact: (text: string) => string = (text) => text,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  /** Starts the logs of a new run of this task over (a re-run must not mix with the last one). */
  reset(): void {
    this.seq = 0;
    for (const f of ["events.jsonl", "rounds.jsonl", "result.json", "patch"]) {
      if (existsSync(this.path(f))) rmSync(this.path(f));
    }
    writeAtomic(this.path("events.jsonl"), "");
    writeAtomic(this.path("rounds.jsonl"), "");
  }

  /** `{dir}/{task_id}.{suffix}`. */
  path(suffix: string): string {
    return join(this.dir, `${this.taskId}.${suffix}`);
  }

  writeJson(suffix: string, value: unknown): void {
    writeAtomic(this.path(suffix), `${JSON.stringify(this.masked(value), null, 2)}\n`);
  }

  writeText(suffix: string, text: string): void {
    writeAtomic(this.path(suffix), this.redact(text));
  }

  /** Writes bytes as they are (the patch: masking would corrupt it; the caller checked it). */
  writeRaw(suffix: string, data: string | Uint8Array): void {
    writeAtomic(this.path(suffix), data);
  }

  event(type: string, payload: Record<string, unknown> = {}): void {
    const e: TaskEvent = {
      seq: ++this.seq,
      time: new Date().toISOString(),
      task_id: this.taskId,
      type,
      ...this.masked(payload),
    };
    appendFileSync(this.path("events.jsonl"), `${JSON.stringify(e)}\n`);
    this.onEvent?.(e);
  }

  private masked<T>(value: T): T {
    return maskValue(value, this.redact);
  }

  round(line: Record<string, unknown>): void {
    appendFileSync(this.path("rounds.jsonl"), `${JSON.stringify(this.masked(line))}\n`);
  }

  /**
   * Writes `status.json` now; while a {@link progress} write is still in flight it is queued
   * behind it instead, so the file always ends with the last status given ({@link settled}).
   */
  status(state: TaskState, extra: Record<string, unknown> = {}): void {
    const text = this.statusText(state, extra);
    if (this.statusQueue) this.enqueueStatus(text);
    else writeAtomic(this.path("status.json"), text);
  }

  /**
   * The same write as {@link status} without waiting for it: the temp file and the rename go to
   * the thread pool while the task goes on (a rename over an existing file makes ext4 flush the
   * new one first, a disk write per round). Writes stay in order; {@link settled} waits for them.
   */
  progress(state: TaskState, extra: Record<string, unknown> = {}): void {
    this.enqueueStatus(this.statusText(state, extra));
  }

  /** Waits for the status writes in flight. @throws the first one's error. */
  async settled(): Promise<void> {
    while (this.statusQueue) await this.statusQueue;
    if (this.statusError !== undefined) throw this.statusError;
  }

  private statusText(state: TaskState, extra: Record<string, unknown>): string {
    const value = { task_id: this.taskId, state, updated_at: new Date().toISOString(), ...extra };
    return `${JSON.stringify(this.masked(value), null, 2)}\n`;
  }

  private enqueueStatus(text: string): void {
    const file = this.path("status.json");
    const next = (this.statusQueue ?? Promise.resolve())
      .then(() => writeAtomicAsync(file, text))
      .catch((err: unknown) => {
        this.statusError ??= err;
      })
      .then(() => {
        if (this.statusQueue === next) this.statusQueue = undefined;
      });
    this.statusQueue = next;
  }
}

/** Every string inside a JSON-like value masked with `redact`. Pure. */
function maskValue<T>(value: T, redact: (text: string) => string): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => maskValue(v, redact)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskValue(v, redact);
    return out as T;
  }
  return value;
}

/** The task ids with a status file among the names of an output folder. Pure. */
export function taskIdsIn(names: readonly string[]): string[] {
  return names.filter((n) => n.endsWith(".status.json")).map((n) => n.slice(0, -".status.json".length));
}
