/**
 * `runTask`: one task from spec to artifacts, as a sequence of small named steps:
 * {@link startTask} → {@link preflightStep} (repository checks) → snapshot of the source →
 * {@link prepareStep} (disposable worktree, command sandbox) → {@link preflightDodStep} (the DoD
 * must fail first) → {@link roundsStep} (round.ts: one tool loop, DoD on pristine protected
 * paths, score, keep-best) → {@link exportStep} (allowlist-checked patch) → worktree removed →
 * {@link verifyStep} (the DoD on a FRESH worktree holding only the patch decides "passed") →
 * {@link proveSourceUnchanged} → {@link applyStep} (complete-task mode) → {@link finish}.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Redactor } from "../core/index.js";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import type { ModelClient } from "../model/index.js";
import { applyToSource } from "./apply.js";
import { TaskArtifacts, type TaskEvent, type TaskState } from "./artifacts.js";
import { type CommandSandbox, commandSandbox } from "./confine.js";
import type { DodRun } from "./dod.js";
import { READ_CONTEXT_MAX_BYTES, TASK_MAX_TOKENS } from "./limits.js";
import { hashText, patchPaths, pathsOutside } from "./patch.js";
import { preflightDod, preflightRepo, Refusal, type RefusalItem } from "./preflight.js";
import { type Best, type RoundContext, redactDod, runRound } from "./round.js";
import { scoreRound } from "./score.js";
import type { TaskSpec } from "./spec.js";
import { runnerTools } from "./tools.js";
import { verifyOnFreshWorktree } from "./verify.js";
import {
  compareSnapshots,
  gitWorktrees,
  type SourceSnapshot,
  snapshotSource,
  type Worktree,
  type Worktrees,
} from "./worktree.js";

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
interface TaskRun {
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

/** The worktree of the rounds and its command sandbox (disposed in `runTask`'s `finally`). */
interface Work {
  worktree: Worktree;
  sandbox?: CommandSandbox;
}

const SHAPES_ONLY = new Redactor();

/**
 * The task's redaction: the caller's redactor, then the secret-looking variables of
 * `process.env` (the model key among them), then credential shapes.
 */
function taskRedaction(opts: RunTaskOptions): (text: string) => string {
  const env = new Redactor().addFromEnv(process.env);
  const extra = opts.redactor;
  return (text) => env.redact(extra ? extra.redact(text) : text);
}

function dodInfo(spec: TaskSpec, d: DodRun | undefined, fresh = false): TaskResult["dod"] {
  return {
    command: spec.definition_of_done.command,
    assertion: spec.definition_of_done.assertion,
    passed: d?.passed ?? false,
    exit_code: d?.exitCode ?? null,
    output_tail: d?.outputTail ?? "",
    verified_on_fresh_worktree: fresh,
  };
}

function readContext(spec: TaskSpec, redact: (text: string) => string): { path: string; text: string }[] {
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
function startTask(spec: TaskSpec, opts: RunTaskOptions): TaskRun {
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

function logDod(t: TaskRun, label: string, d: DodRun): void {
  t.verifier.push(
    `=== ${label}: ${d.passed ? "PASSED" : "FAILED"} exit=${d.exitCode} timed_out=${d.timedOut} ${d.durationMs} ms\n${d.output}`,
  );
  t.art.event("dod_run", { label, passed: d.passed, exit_code: d.exitCode, timed_out: d.timedOut });
}

/** Writes the result files (redacted) and the final status. */
function finish(t: TaskRun, status: TaskState & TaskResult["status"], stop: string): TaskResult {
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

function refuse(t: TaskRun, refusals: RefusalItem[]): TaskResult {
  t.result.refusals = refusals;
  t.art.event("preflight_refused", { refusals });
  return finish(t, "refused", TaskStop.Refused);
}

/** Repository checks (no worktree, no model). A refusal ends the task. */
async function preflightStep(t: TaskRun): Promise<TaskResult | undefined> {
  const repo = await preflightRepo(t.spec, t.runner);
  return repo.ok ? undefined : refuse(t, repo.refusals);
}

/** The worktree of the rounds and its command sandbox. */
async function prepareStep(t: TaskRun): Promise<Work> {
  const worktree = await t.worktrees.create(t.spec.cwd);
  t.art.event("worktree_created", { path: worktree.path });
  t.opts.onWorktree?.(worktree.path);
  const work: Work = { worktree };
  const sandbox = await commandSandbox(worktree.path, t.spec.writable_paths, t.runner);
  work.sandbox = sandbox;
  t.art.event("command_sandbox", {
    protection: sandbox.protection,
    reason: sandbox.reason,
    writable: sandbox.writable,
  });
  const inside = sandbox.writable.find((w) => worktree.git.gitDir.startsWith(`${w}/`));
  if (inside !== undefined) {
    throw new Error(
      `writable_paths entry ${inside} contains Ratchet's private git folder ${worktree.git.gitDir}: choose a narrower folder`,
    );
  }
  return work;
}

/** The DoD before any change: it must fail (unless `allow_passing_dod`). */
async function preflightDodStep(t: TaskRun, work: Work & { sandbox: CommandSandbox }) {
  const pre = await preflightDod(t.spec, work.worktree.path, t.runner, work.sandbox);
  const dod = redactDod(pre.dod, t.redact);
  logDod(t, "preflight", dod);
  t.result.dod = dodInfo(t.spec, dod);
  return { dod, refused: pre.refusal ? refuse(t, [pre.refusal]) : undefined };
}

/**
 * The no-progress key of a round: the same key twice in a row (with the same patch) stops the
 * task. Kept in one place so how the DoD output is normalised can change here alone.
 */
export function progressKey(patch: string, dodOutput: string): string {
  return `${hashText(patch)}:${hashText(dodOutput)}`;
}

/** The rounds until the DoD passes or a stop condition holds; the best round and why they stopped. */
async function roundsStep(
  t: TaskRun,
  work: Work & { sandbox: CommandSandbox },
  pre: DodRun,
): Promise<{ best: Best; stop: string }> {
  const { spec, art, tokens, opts } = t;
  art.status("running", { round: 0 });
  const ctx: RoundContext = {
    spec,
    client: opts.client,
    runner: t.runner,
    repo: work.worktree.git,
    sandbox: work.sandbox,
    tools: runnerTools({
      worktree: work.worktree.path,
      repo: work.worktree.git,
      source: spec.cwd,
      allowlist: spec.allowlist,
      protectedPaths: spec.protected_paths,
      runner: t.runner,
      sandbox: work.sandbox,
      redact: t.redact,
      onRefusal: (tool, reason) => art.event("tool_refused", { tool, reason }),
    }),
    context: readContext(spec, t.redact),
    art,
    tokens,
    responses: t.responses,
    logDod: (label, dod) => logDod(t, label, dod),
    redact: t.redact,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  let best: Best = { score: scoreRound(false, pre.output), patch: "", round: 0, dod: pre };
  let last = pre;
  let lastPatch = "";
  let prevKey: string | undefined;
  for (let round = 1; round <= spec.max_rounds; round++) {
    if (tokens.input + tokens.output >= TASK_MAX_TOKENS) return { best, stop: TaskStop.Budget };
    if (opts.signal?.aborted) return { best, stop: TaskStop.Cancelled };
    t.result.rounds = round;
    art.event("round_started", { round });
    art.status("running", { round });
    const r = await runRound(ctx, round, last, best);
    last = r.dod;
    if (r.kept) best = { score: r.score, patch: r.patch, round, dod: r.dod };
    if (r.dod.passed) return { best, stop: TaskStop.Passed };
    if (r.modelError !== undefined) return { best, stop: TaskStop.ModelError };
    if (r.loop?.stopReason === "cancelled") return { best, stop: TaskStop.Cancelled };
    const key = progressKey(r.patch, r.dod.output);
    if (key === prevKey && r.patch === lastPatch) return { best, stop: TaskStop.NoProgress };
    prevKey = key;
    lastPatch = r.patch;
  }
  return { best, stop: TaskStop.MaxRounds };
}

/** The patch re-checked (allowlist, no known secret) and written with hunk.md. A refusal ends the task. */
function exportStep(t: TaskRun, best: Best): TaskResult | undefined {
  const { spec, art, result } = t;
  result.best_score = best.score;
  result.best_round = best.round;
  result.dod = dodInfo(spec, best.dod);
  const outside = pathsOutside(best.patch, spec.allowlist);
  if (outside.length > 0) {
    result.refusals = [
      {
        code: Refusal.OutsideAllowlist,
        message: `the final diff touches paths outside the allowlist: ${outside.join(", ")}`,
      },
    ];
    return finish(t, "refused", TaskStop.Refused);
  }
  // The patch is written byte for byte (masking would corrupt it), so one holding a known secret
  // value is not written at all.
  if (t.redact(best.patch) !== SHAPES_ONLY.redact(best.patch)) {
    result.refusals = [
      {
        code: Refusal.SecretInPatch,
        message:
          "the final diff contains a known secret value (the model key or a workspace secret); not exported",
      },
    ];
    return finish(t, "refused", TaskStop.Refused);
  }
  result.changed_files = patchPaths(best.patch);
  if (best.patch !== "") {
    art.writeRaw("patch", best.patch);
    result.patch_file = art.path("patch");
  }
  art.writeText("hunk.md", hunkMarkdown(spec, best, result.changed_files));
  return undefined;
}

/** The DoD on a fresh worktree holding only the exported patch: what decides "passed". */
async function verifyStep(t: TaskRun, best: Best): Promise<{ passed: boolean; path: string }> {
  const fresh = await verifyOnFreshWorktree(t.spec, best.patch, {
    worktrees: t.worktrees,
    runner: t.runner,
    ...(t.opts.signal ? { signal: t.opts.signal } : {}),
  });
  const dod = redactDod(fresh.dod, t.redact);
  logDod(t, "fresh worktree", dod);
  t.result.dod = dodInfo(t.spec, dod, true);
  t.art.event("dod_verified", {
    passed: dod.passed,
    exit_code: dod.exitCode,
    patch_hash: hashText(best.patch),
    protection: fresh.protection,
  });
  return { passed: dod.passed, path: fresh.path };
}

/** Compares the source with the snapshot taken before any worktree existed. */
async function proveSourceUnchanged(t: TaskRun, before: SourceSnapshot, ours: string[]): Promise<boolean> {
  const after = await snapshotSource(t.spec.cwd, [t.spec.output_dir, ...ours], t.runner);
  const changes = compareSnapshots(before, after);
  t.result.source_unchanged = changes.length === 0;
  t.result.source_changes = changes;
  if (changes.length > 0) t.art.event("source_changed", { fields: changes });
  return changes.length === 0;
}

/** Complete-task mode; a failure ends the task. */
async function applyStep(t: TaskRun, best: Best): Promise<TaskResult | undefined> {
  const applied = await applyToSource(t.spec, best.patch, t.result.changed_files, t.runner);
  if (applied.source_dod) logDod(t, "source", redactDod(applied.source_dod, t.redact));
  const { source_dod: _, ...fields } = applied;
  Object.assign(t.result, fields);
  t.art.event("source_applied", { ...fields });
  if (applied.source_apply_error === null) return undefined;
  return finish(
    t,
    "failed",
    applied.source_patch_applied ? TaskStop.SourceDodFailed : TaskStop.SourceApplyFailed,
  );
}

async function removeWork(t: TaskRun, work: Work): Promise<void> {
  work.sandbox?.dispose();
  work.sandbox = undefined;
  await t.worktrees.remove(t.spec.cwd, work.worktree);
  t.art.event("worktree_removed", { path: work.worktree.path });
}

/**
 * Runs one task. Never throws for a task failure: the outcome is the returned result (also
 * written to `{output_dir}/{task_id}.result.json`).
 */
export async function runTask(spec: TaskSpec, opts: RunTaskOptions): Promise<TaskResult> {
  const t = startTask(spec, opts);
  let work: Work | undefined;
  try {
    const refused = await preflightStep(t);
    if (refused) return refused;
    const before = await snapshotSource(spec.cwd, [spec.output_dir], t.runner);
    work = await prepareStep(t);
    const confined = work as Work & { sandbox: CommandSandbox };
    const pre = await preflightDodStep(t, confined);
    if (pre.refused) return pre.refused;
    const { best, stop } = await roundsStep(t, confined, pre.dod);
    const exportRefused = exportStep(t, best);
    if (exportRefused) return exportRefused;
    const ours = [work.worktree.path];
    await removeWork(t, work);
    work = undefined;
    const verified = best.dod.passed ? await verifyStep(t, best) : undefined;
    if (verified) ours.push(verified.path);
    if (!(await proveSourceUnchanged(t, before, ours))) return finish(t, "failed", TaskStop.SourceChanged);
    if (!best.dod.passed) return finish(t, "failed", stop);
    if (!verified?.passed) return finish(t, "failed", TaskStop.FreshDodFailed);
    const applyFailed = spec.apply_to_source ? await applyStep(t, best) : undefined;
    return applyFailed ?? finish(t, "passed", stop);
  } catch (err) {
    t.result.error = t.redact((err as Error).message);
    t.art.event("task_error", { message: t.result.error });
    return finish(t, "error", TaskStop.Error);
  } finally {
    if (work !== undefined) await removeWork(t, work);
  }
}

function hunkMarkdown(spec: TaskSpec, best: Best, files: readonly string[]): string {
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
