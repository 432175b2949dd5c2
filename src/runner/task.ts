/**
 * `runTask`: one task from spec to artifacts. Preflight → snapshot of the source → disposable
 * worktree → rounds (one `runToolLoop` each, then the DoD against pristine protected paths, score,
 * keep-best / restore) → allowlist-checked patch → worktree removed → "source unchanged" proof →
 * optional apply/commit/rollback in the source → result files.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import { type ModelClient, runToolLoop, type ToolLoopResult } from "../model/index.js";
import { applyToSource, type SourceApplyResult } from "./apply.js";
import { TaskArtifacts, type TaskEvent, type TaskState } from "./artifacts.js";
import { type CommandSandbox, commandSandbox } from "./confine.js";
import { type DodRun, runDod } from "./dod.js";
import { normaliseDodOutput } from "./dod-normalise.js";
import {
  READ_CONTEXT_MAX_BYTES,
  ROUND_MAX_MODEL_CALLS,
  ROUND_MAX_TOKENS,
  ROUND_MAX_TOOL_CALLS,
  ROUND_TIMEOUT_MS,
  TASK_MAX_TOKENS,
} from "./limits.js";
import { diffAllowlisted, hashText, patchPaths, pathsOutside, restoreProtected, restoreTo } from "./patch.js";
import { preflightDod, preflightRepo, Refusal, type RefusalItem } from "./preflight.js";
import { roundPrompt, SYSTEM_PROMPT } from "./prompt.js";
import { scoreRound } from "./score.js";
import type { TaskSpec } from "./spec.js";
import { runnerTools } from "./tools.js";
import {
  compareSnapshots,
  gitWorktrees,
  type SourceSnapshot,
  snapshotSource,
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
}

interface Best {
  score: number;
  patch: string;
  round: number;
  dod: DodRun;
}

function readContext(spec: TaskSpec): { path: string; text: string }[] {
  return spec.read_context.map((path) => {
    const full = join(spec.cwd, path);
    if (!existsSync(full)) return { path, text: "(missing)" };
    const buf = readFileSync(full);
    const cut = buf.length > READ_CONTEXT_MAX_BYTES;
    return {
      path,
      text: buf.subarray(0, READ_CONTEXT_MAX_BYTES).toString("utf8") + (cut ? "\n… (cut)" : ""),
    };
  });
}

/**
 * Runs one task. Never throws for a task failure: the outcome is the returned result (also
 * written to `{output_dir}/{task_id}.result.json`).
 */
export async function runTask(spec: TaskSpec, opts: RunTaskOptions): Promise<TaskResult> {
  const started = Date.now();
  const runner = opts.runner ?? realProcessRunner;
  const worktrees = opts.worktrees ?? gitWorktrees(runner);
  const art = new TaskArtifacts(spec.output_dir, spec.task_id, opts.onEvent);
  art.reset();
  art.writeJson("request.json", spec);
  art.status("preflight");
  art.event("task_started", { title: spec.title, backend: spec.backend, cwd: spec.cwd });
  const verifier: string[] = [];
  const responses: string[] = [];
  const tokens = { input: 0, output: 0 };
  const dodInfo = (d: DodRun | undefined) => ({
    command: spec.definition_of_done.command,
    assertion: spec.definition_of_done.assertion,
    passed: d?.passed ?? false,
    exit_code: d?.exitCode ?? null,
    output_tail: d?.outputTail ?? "",
  });
  const result: TaskResult = {
    task_id: spec.task_id,
    status: "error",
    rounds: 0,
    best_score: 0,
    best_round: 0,
    dod: dodInfo(undefined),
    patch_file: null,
    changed_files: [],
    source_unchanged: null,
    source_changes: [],
    stop_reason: TaskStop.Error,
    refusals: [],
    tokens,
    duration_ms: 0,
  };
  const logDod = (label: string, d: DodRun) => {
    verifier.push(
      `=== ${label}: ${d.passed ? "PASSED" : "FAILED"} exit=${d.exitCode} timed_out=${d.timedOut} ${d.durationMs} ms\n${d.output}`,
    );
    art.event("dod_run", { label, passed: d.passed, exit_code: d.exitCode, timed_out: d.timedOut });
  };
  const finish = (status: TaskState & TaskResult["status"], stop: string): TaskResult => {
    result.status = status;
    result.stop_reason = stop;
    result.duration_ms = Date.now() - started;
    art.writeText("verifier.log", `${verifier.join("\n\n")}\n`);
    art.writeText("response.txt", `${responses.join("\n\n")}\n`);
    art.writeJson("result.json", result);
    art.event("task_finished", { status, stop_reason: stop });
    art.status(status, { stop_reason: stop, rounds: result.rounds, best_score: result.best_score });
    return result;
  };

  let before: SourceSnapshot | undefined;
  let worktree: string | undefined;
  let sandbox: CommandSandbox | undefined;
  let best: Best | undefined;
  try {
    const repo = await preflightRepo(spec, runner);
    if (!repo.ok) {
      result.refusals = repo.refusals;
      art.event("preflight_refused", { refusals: repo.refusals });
      return finish("refused", TaskStop.Refused);
    }
    const outputInside = [spec.output_dir];
    before = await snapshotSource(spec.cwd, outputInside, runner);
    worktree = await worktrees.create(spec.cwd);
    art.event("worktree_created", { path: worktree });
    opts.onWorktree?.(worktree);
    const wt = worktree;
    sandbox = await commandSandbox(wt, spec.writable_paths, runner);
    art.event("command_sandbox", {
      protection: sandbox.protection,
      reason: sandbox.reason,
      writable: sandbox.writable,
    });
    const pre = await preflightDod(spec, wt, runner, sandbox);
    logDod("preflight", pre.dod);
    result.dod = dodInfo(pre.dod);
    if (pre.refusal) {
      result.refusals = [pre.refusal];
      art.event("preflight_refused", { refusals: result.refusals });
      return finish("refused", TaskStop.Refused);
    }
    art.status("running", { round: 0 });
    best = { score: scoreRound(false, pre.dod.output), patch: "", round: 0, dod: pre.dod };
    let last = pre.dod;
    let lastPatch = "";
    let prevKey: string | undefined;
    let stop: string = TaskStop.MaxRounds;
    const context = readContext(spec);
    const tools = runnerTools({
      worktree: wt,
      source: spec.cwd,
      allowlist: spec.allowlist,
      protectedPaths: spec.protected_paths,
      runner,
      sandbox,
      onRefusal: (tool, reason) => art.event("tool_refused", { tool, reason }),
    });

    for (let round = 1; round <= spec.max_rounds; round++) {
      if (tokens.input + tokens.output >= TASK_MAX_TOKENS) {
        stop = TaskStop.Budget;
        break;
      }
      if (opts.signal?.aborted) {
        stop = TaskStop.Cancelled;
        break;
      }
      result.rounds = round;
      art.event("round_started", { round });
      art.status("running", { round });
      let loop: ToolLoopResult | undefined;
      let modelError: string | undefined;
      try {
        loop = await runToolLoop({
          client: opts.client,
          system: SYSTEM_PROMPT,
          messages: [
            {
              role: "user",
              content: roundPrompt({ spec, round, context, lastDod: last, bestScore: best.score }),
            },
          ],
          tools,
          limits: {
            maxRounds: ROUND_MAX_MODEL_CALLS,
            maxToolCalls: ROUND_MAX_TOOL_CALLS,
            maxTokens: Math.min(ROUND_MAX_TOKENS, TASK_MAX_TOKENS - tokens.input - tokens.output),
            timeoutMs: ROUND_TIMEOUT_MS,
          },
          ...(opts.signal ? { signal: opts.signal } : {}),
          onEvent: (e) => {
            if (e.type === "tool_result") {
              art.event("tool_result", {
                round,
                name: e.name,
                is_error: e.isError,
                content: e.content.slice(0, 500),
              });
            } else if (e.type === "model_reply") {
              art.event("model_reply", {
                round,
                tool_calls: e.toolCalls.map((c) => ({ name: c.name, args: c.args })),
                text: e.text.slice(0, 500),
              });
            }
          },
        });
        tokens.input += loop.usage.inputTokens;
        tokens.output += loop.usage.outputTokens;
        responses.push(`## Round ${round} (${loop.stopReason})\n${loop.summary ?? loop.finalText}`);
      } catch (err) {
        modelError = (err as Error).message;
        art.event("model_error", { round, message: modelError });
        responses.push(`## Round ${round} (model error)\n${modelError}`);
      }
      const prot = await restoreProtected(wt, spec.protected_paths, runner);
      if (prot.changed.length > 0) art.event("protected_restored", { round, paths: prot.changed });
      const dod = await runDod(spec, wt, {
        runner,
        sandbox,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      logDod(`round ${round}`, dod);
      const patch = await diffAllowlisted(wt, spec.allowlist, runner);
      const score = scoreRound(dod.passed, dod.output);
      const improved = score >= best.score;
      art.round({
        round,
        score,
        dod_passed: dod.passed,
        dod_exit_code: dod.exitCode,
        loop_stop: loop?.stopReason ?? "model_error",
        tool_calls: loop?.toolCalls ?? 0,
        tokens: loop ? loop.usage.inputTokens + loop.usage.outputTokens : 0,
        patch_hash: hashText(patch),
        changed_files: patchPaths(patch),
        protected_hash: prot.hash,
        protected_restored: prot.changed,
        kept: improved,
      });
      last = dod;
      if (improved) best = { score, patch, round, dod };
      else {
        art.event("round_regressed", { round, score, best_score: best.score, best_round: best.round });
        await restoreTo(wt, spec.allowlist, best.patch, runner);
      }
      if (dod.passed) {
        stop = TaskStop.Passed;
        break;
      }
      if (modelError !== undefined) {
        stop = TaskStop.ModelError;
        break;
      }
      if (loop?.stopReason === "cancelled") {
        stop = TaskStop.Cancelled;
        break;
      }
      const key = `${hashText(patch)}:${hashText(normaliseDodOutput(dod.output, [wt, spec.cwd]))}`;
      if (key === prevKey && patch === lastPatch) {
        stop = TaskStop.NoProgress;
        break;
      }
      prevKey = key;
      lastPatch = patch;
    }

    result.best_score = best.score;
    result.best_round = best.round;
    result.dod = dodInfo(best.dod);
    const outside = pathsOutside(best.patch, spec.allowlist);
    if (outside.length > 0) {
      result.refusals = [
        {
          code: Refusal.OutsideAllowlist,
          message: `the final diff touches paths outside the allowlist: ${outside.join(", ")}`,
        },
      ];
      return finish("refused", TaskStop.Refused);
    }
    result.changed_files = patchPaths(best.patch);
    if (best.patch !== "") {
      art.writeText("patch", best.patch);
      result.patch_file = art.path("patch");
    }
    art.writeText("hunk.md", hunkMarkdown(spec, best, result.changed_files));

    await worktrees.remove(spec.cwd, wt);
    art.event("worktree_removed", { path: wt });
    worktree = undefined;
    const after = await snapshotSource(spec.cwd, [spec.output_dir, wt], runner);
    const changes = compareSnapshots(before, after);
    result.source_unchanged = changes.length === 0;
    result.source_changes = changes;
    if (changes.length > 0) {
      art.event("source_changed", { fields: changes });
      return finish("failed", TaskStop.SourceChanged);
    }
    if (!best.dod.passed) return finish("failed", stop);
    if (spec.apply_to_source) {
      const applied: SourceApplyResult = await applyToSource(spec, best.patch, result.changed_files, runner);
      if (applied.source_dod) logDod("source", applied.source_dod);
      const { source_dod: _, ...fields } = applied;
      Object.assign(result, fields);
      art.event("source_applied", { ...fields });
      if (applied.source_apply_error !== null) {
        return finish(
          "failed",
          applied.source_patch_applied ? TaskStop.SourceDodFailed : TaskStop.SourceApplyFailed,
        );
      }
    }
    return finish("passed", stop);
  } catch (err) {
    result.error = (err as Error).message;
    art.event("task_error", { message: result.error });
    return finish("error", TaskStop.Error);
  } finally {
    sandbox?.dispose();
    if (worktree !== undefined) {
      await worktrees.remove(spec.cwd, worktree);
      art.event("worktree_removed", { path: worktree });
    }
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
