/**
 * The record one task carries through its steps (task.ts) and the files it ends in: the stop
 * reasons, `result.json`'s shape, the task's redaction, the verifier log and the final write.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Redactor } from "../core/index.js";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import type { ModelClient } from "../model/index.js";
import { TaskArtifacts, type TaskEvent, type TaskState } from "./artifacts.js";
import type { DodRun } from "./dod.js";
import { READ_CONTEXT_MAX_BYTES } from "./limits.js";
import type { RefusalItem } from "./preflight.js";
import type { Best } from "./round.js";
import type { TaskSpec } from "./spec.js";
import { gitWorktrees, type Worktrees } from "./worktree.js";

/** Why the rounds stopped. Stored and printed as strings; never renamed. */
export const TaskStop = {
  Passed: "dod_passed",
  MaxRounds: "max_rounds",
  Budget: "token_budget",
  NoProgress: "no_progress",
  ModelError: "model_error",
  Cancelled: "cancelled",
  Refused: "refused",
  SourceChanged: "source_changed",
  SourceDodFailed: "source_dod_failed",
  SourceApplyFailed: "source_apply_failed",
  /** The DoD passed in the model's worktree but not on a fresh worktree holding only the patch. */
  FreshDodFailed: "fresh_dod_failed",
  Error: "error",
} as const;
export type TaskStop = (typeof TaskStop)[keyof typeof TaskStop];

/** `{task_id}.result.json`. */
export interface TaskResult {
  task_id: string;
  status: "passed" | "failed" | "refused" | "error";
  rounds: number;
  best_score: number;
  best_round: number;
  dod: {
    command: string;
    assertion: string;
    passed: boolean;
    exit_code: number | null;
    output_tail: string;
    /** True when this is the run on a fresh worktree holding only the exported patch. */
    verified_on_fresh_worktree: boolean;
  };
  patch_file: string | null;
  changed_files: string[];
  source_unchanged: boolean | null;
  source_changes: string[];
  stop_reason: string;
  refusals: RefusalItem[];
  tokens: { input: number; output: number };
  duration_ms: number;
  error?: string;
  apply_to_source?: boolean;
  source_patch_applied?: boolean;
  source_dod_passed?: boolean;
  source_commit?: string | null;
  source_rollback_applied?: boolean;
  source_apply_error?: string | null;
}

export interface RunTaskOptions {
  /** The model. Required. */
  client: ModelClient;
  worktrees?: Worktrees;
  runner?: ProcessRunner;
  /** Every event also goes here (e.g. the ledger's event log). */
  onEvent?: (e: TaskEvent) => void;
  signal?: AbortSignal;
  /** Called with the worktree path once it exists (tests use it to interfere). */
  onWorktree?: (path: string) => void;
  /**
   * Secret values to mask in every tool result the model gets and in every artifact (the model's
   * API key, workspace secrets). `*_API_KEY`, `*_TOKEN`, `SECRET_*`… of `process.env` are always
   * masked too.
   */
  redactor?: Redactor;
}

/** Everything the steps of one task share. */
export interface TaskRun {
  spec: TaskSpec;
  opts: RunTaskOptions;
  started: number;
  runner: ProcessRunner;
  worktrees: Worktrees;
  art: TaskArtifacts;
  redact: (text: string) => string;
  result: TaskResult;
  verifier: string[];
  responses: string[];
  tokens: { input: number; output: number };
}

const SHAPES_ONLY = new Redactor();

/** Whether `text` holds a secret value the task knows (not merely a credential shape). */
export function holdsKnownSecret(t: TaskRun, text: string): boolean {
  return t.redact(text) !== SHAPES_ONLY.redact(text);
}

/**
 * The task's redaction: the caller's redactor, then the secret-looking variables of
 * `process.env` (the model key among them), then credential shapes.
 */
export function taskRedaction(opts: RunTaskOptions): (text: string) => string {
  const env = new Redactor().addFromEnv(process.env);
  const extra = opts.redactor;
  return (text) => env.redact(extra ? extra.redact(text) : text);
}

export function dodInfo(spec: TaskSpec, d: DodRun | undefined, fresh = false): TaskResult["dod"] {
  return {
    command: spec.definition_of_done.command,
    assertion: spec.definition_of_done.assertion,
    passed: d?.passed ?? false,
    exit_code: d?.exitCode ?? null,
    output_tail: d?.outputTail ?? "",
    verified_on_fresh_worktree: fresh,
  };
}

export function readContext(
  spec: TaskSpec,
  redact: (text: string) => string,
): { path: string; text: string }[] {
  return spec.read_context.map((path) => {
    const full = join(spec.cwd, path);
    if (!existsSync(full)) return { path, text: "(missing)" };
    const buf = readFileSync(full);
    const cut = buf.length > READ_CONTEXT_MAX_BYTES;
    const text = buf.subarray(0, READ_CONTEXT_MAX_BYTES).toString("utf8") + (cut ? "\n… (cut)" : "");
    return { path, text: redact(text) };
  });
}

/** Resets the artifacts and records the request. */
export function startTask(spec: TaskSpec, opts: RunTaskOptions): TaskRun {
  const runner = opts.runner ?? realProcessRunner;
  const redact = taskRedaction(opts);
  const art = new TaskArtifacts(spec.output_dir, spec.task_id, opts.onEvent, redact);
  art.reset();
  art.writeJson("request.json", spec);
  art.status("preflight");
  art.event("task_started", { title: spec.title, backend: spec.backend, cwd: spec.cwd });
  const tokens = { input: 0, output: 0 };
  const result: TaskResult = {
    task_id: spec.task_id,
    status: "error",
    rounds: 0,
    best_score: 0,
    best_round: 0,
    dod: dodInfo(spec, undefined),
    patch_file: null,
    changed_files: [],
    source_unchanged: null,
    source_changes: [],
    stop_reason: TaskStop.Error,
    refusals: [],
    tokens,
    duration_ms: 0,
  };
  return {
    spec,
    opts,
    started: Date.now(),
    runner,
    worktrees: opts.worktrees ?? gitWorktrees(runner),
    art,
    redact,
    result,
    verifier: [],
    responses: [],
    tokens,
  };
}

export function logDod(t: TaskRun, label: string, d: DodRun): void {
  t.verifier.push(
    `=== ${label}: ${d.passed ? "PASSED" : "FAILED"} exit=${d.exitCode} timed_out=${d.timedOut} ${d.durationMs} ms\n${d.output}`,
  );
  t.art.event("dod_run", { label, passed: d.passed, exit_code: d.exitCode, timed_out: d.timedOut });
}

/** Writes the result files (redacted) and the final status. */
export function finish(t: TaskRun, status: TaskState & TaskResult["status"], stop: string): TaskResult {
  const { art, result } = t;
  result.status = status;
  result.stop_reason = stop;
  result.duration_ms = Date.now() - t.started;
  art.writeText("verifier.log", `${t.verifier.join("\n\n")}\n`);
  art.writeText("response.txt", `${t.responses.join("\n\n")}\n`);
  art.writeJson("result.json", result);
  art.event("task_finished", { status, stop_reason: stop });
  art.status(status, { stop_reason: stop, rounds: result.rounds, best_score: result.best_score });
  return result;
}

export function refuse(t: TaskRun, refusals: RefusalItem[]): TaskResult {
  t.result.refusals = refusals;
  t.art.event("preflight_refused", { refusals });
  return finish(t, "refused", TaskStop.Refused);
}

export function hunkMarkdown(spec: TaskSpec, best: Best, files: readonly string[]): string {
  const head = [
    `# ${spec.task_id}: ${spec.title}`,
    "",
    `Best round: ${best.round}, score ${best.score}, DoD ${best.dod.passed ? "passed" : "failed"} (exit ${best.dod.exitCode}).`,
    "",
    `Changed files: ${files.length > 0 ? files.join(", ") : "(none)"}`,
    "",
  ];
  return `${[...head, "```diff", best.patch.trimEnd(), "```"].join("\n")}\n`;
}
