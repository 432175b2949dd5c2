/**
 * One round of a task: one `runToolLoop` in the worktree, then protected paths restored, the DoD
 * run (confined), the allowlist patch computed by Ratchet's pinned git, the round scored and kept
 * or rolled back to the best patch. Every text that leaves a round (tool results to the model, DoD
 * output to the next prompt, events, responses) has passed the task's redaction.
 */
import type { ProcessRunner } from "../exec/index.js";
import { type LoopTool, type ModelClient, runToolLoop, type ToolLoopResult } from "../model/index.js";
import type { TaskArtifacts } from "./artifacts.js";
import type { CommandSandbox } from "./confine.js";
import { type DodRun, runDod } from "./dod.js";
import type { PinnedRepo } from "./git.js";
import {
  OUTPUT_TAIL_CHARS,
  ROUND_MAX_MODEL_CALLS,
  ROUND_MAX_TOKENS,
  ROUND_MAX_TOOL_CALLS,
  ROUND_TIMEOUT_MS,
  TASK_MAX_TOKENS,
} from "./limits.js";
import {
  diffAllowlisted,
  hashText,
  patchPaths,
  restoreProtected,
  restoreTo,
  type WorktreeView,
} from "./patch.js";
import { roundPrompt, SYSTEM_PROMPT } from "./prompt.js";
import { scoreRound } from "./score.js";
import type { TaskSpec } from "./spec.js";

/** The best round so far (round 0: the preflight state, no patch). */
export interface Best {
  score: number;
  patch: string;
  round: number;
  dod: DodRun;
}

/** What every round of one task shares. */
export interface RoundContext {
  spec: TaskSpec;
  client: ModelClient;
  runner: ProcessRunner;
  /** Ratchet's own view of the worktree (private git dir). */
  repo: PinnedRepo;
  /** What Ratchet saw of the worktree before any command ran (spares git calls; see patch.ts). */
  view?: WorktreeView;
  sandbox: CommandSandbox;
  tools: LoopTool[];
  context: readonly { path: string; text: string }[];
  art: TaskArtifacts;
  tokens: { input: number; output: number };
  responses: string[];
  /** Records a DoD run in verifier.log and the events. */
  logDod: (label: string, dod: DodRun) => void;
  /** Masks known secret values. */
  redact: (text: string) => string;
  signal?: AbortSignal;
  /**
   * The last round's diff still running (see {@link RoundOutcome.patching}); tools, protected
   * paths and the DoD wait for it before they touch the worktree. Set by the caller.
   */
  gate?: Promise<unknown> | undefined;
  /** The last round's {@link WorktreeView.fingerprint} (set by the caller). */
  lastFingerprint?: string | undefined;
  /** Whether this round can be "no progress" (false for the first: no round to repeat). */
  progressPossible?: boolean;
  /** Whether the copied settings let git compare bytes as they are ({@link rawDiffSettings}). */
  rawDiff?: boolean;
}

/** What one round produced. */
export interface RoundOutcome {
  loop: ToolLoopResult | undefined;
  modelError: string | undefined;
  dod: DodRun;
  /** The round's patch; `undefined` while {@link RoundOutcome.patching} still runs. */
  patch: string | undefined;
  /**
   * The round's patch as git computes it (its round record is written when it is there). Left
   * running only when the next round may start without it: the round was kept, did not pass or
   * end the loop, and its fingerprint is known and differs from the last round's, so it cannot
   * be "no progress".
   */
  patching: Promise<string>;
  /** The worktree's {@link WorktreeView.fingerprint} when the diff was taken. */
  fingerprint: string | undefined;
  score: number;
  kept: boolean;
}

/**
 * A DoD run with known secrets masked in its output (the assertion was checked on the raw one).
 * The tail is cut again from the masked output, so a secret the old cut split is masked too.
 */
export function redactDod(dod: DodRun, redact: (text: string) => string): DodRun {
  const output = redact(dod.output);
  return { ...dod, output, outputTail: output.slice(-OUTPUT_TAIL_CHARS) };
}

async function modelTurn(
  ctx: RoundContext,
  round: number,
  last: DodRun,
  best: Best,
): Promise<{ loop?: ToolLoopResult; modelError?: string }> {
  const { art, tokens } = ctx;
  try {
    const loop = await runToolLoop({
      client: ctx.client,
      system: SYSTEM_PROMPT,
      messages: [
        {
          role: "user",
          content: roundPrompt({
            spec: ctx.spec,
            round,
            context: ctx.context,
            lastDod: last,
            bestScore: best.score,
          }),
        },
      ],
      tools: ctx.tools,
      limits: {
        maxRounds: ROUND_MAX_MODEL_CALLS,
        maxToolCalls: ROUND_MAX_TOOL_CALLS,
        maxTokens: Math.min(ROUND_MAX_TOKENS, TASK_MAX_TOKENS - tokens.input - tokens.output),
        timeoutMs: ROUND_TIMEOUT_MS,
      },
      ...(ctx.signal ? { signal: ctx.signal } : {}),
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
    ctx.responses.push(`## Round ${round} (${loop.stopReason})\n${loop.summary ?? loop.finalText}`);
    return { loop };
  } catch (err) {
    const modelError = ctx.redact((err as Error).message);
    art.event("model_error", { round, message: modelError });
    ctx.responses.push(`## Round ${round} (model error)\n${modelError}`);
    return { modelError };
  }
}

/** Runs round `round` (the model, then the DoD on pristine protected paths, score, keep or restore). */
export async function runRound(
  ctx: RoundContext,
  round: number,
  last: DodRun,
  best: Best,
): Promise<RoundOutcome> {
  const { spec, runner, repo, art } = ctx;
  const { loop, modelError } = await modelTurn(ctx, round, last, best);
  await ctx.gate;
  const prot = await restoreProtected(repo, spec.protected_paths, runner, ctx.view);
  if (prot.changed.length > 0) art.event("protected_restored", { round, paths: prot.changed });
  const raw = await runDod(spec, repo.workTree, {
    runner,
    sandbox: ctx.sandbox,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  // git computes the patch (after the DoD: it holds what the DoD wrote too) while the DoD run is
  // recorded and scored
  const diffing = diffAllowlisted(repo, spec.allowlist, runner, ctx.view);
  // what that diff is a function of, read while it runs (nothing writes the worktree meanwhile)
  const fingerprint = ctx.view?.fingerprint(spec.allowlist, ctx.rawDiff === true);
  const dod = redactDod(raw, ctx.redact);
  const score = scoreRound(dod.passed, dod.output);
  const kept = score >= best.score;
  const record = (patch: string) =>
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
      kept,
    });
  const patching = diffing.then((patch) => {
    record(patch);
    return patch;
  });
  patching.catch(() => undefined); // awaited below or by the caller; observed here meanwhile
  ctx.logDod(`round ${round}`, dod);
  const ends = dod.passed || modelError !== undefined || loop?.stopReason === "cancelled";
  const differs =
    !ctx.progressPossible || (ctx.lastFingerprint !== undefined && fingerprint !== ctx.lastFingerprint);
  const mayRun = kept && !ends && fingerprint !== undefined && differs;
  if (mayRun) return { loop, modelError, dod, patch: undefined, patching, fingerprint, score, kept };
  const patch = await patching;
  if (!kept) {
    art.event("round_regressed", { round, score, best_score: best.score, best_round: best.round });
    await restoreTo(repo, spec.allowlist, best.patch, runner, ctx.view);
  }
  return { loop, modelError, dod, patch, patching, fingerprint, score, kept };
}
