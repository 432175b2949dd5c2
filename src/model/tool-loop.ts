/**
 * The one bounded tool loop of Ratchet (the runner, the Builder's repairs and threads' LLM turns).
 * Each round calls the model once and runs the tools it asked for, in order; every tool call gets
 * exactly one result message under its call id. The loop stops on the built-in `finish` tool, on a
 * reply without tool calls, on a limit, on no progress, or on cancellation; the reason is recorded.
 * Model failures other than the loop's own time limit and cancellation are thrown (`ModelError`).
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import { isModelError } from "./errors.js";
import {
  DEFAULT_LOOP_MAX_ROUNDS,
  DEFAULT_LOOP_MAX_TOKENS,
  DEFAULT_LOOP_MAX_TOOL_CALLS,
  DEFAULT_LOOP_TIMEOUT_MS,
  MAX_TIMER_MS,
  NO_PROGRESS_ROUNDS,
} from "./limits.js";
import {
  errorOutcome,
  FINISH_TOOL,
  FINISH_TOOL_NAME,
  finishSummary,
  type LoopTool,
  runTool,
  type ToolOutcome,
  toolsByName,
} from "./loop-tools.js";
import { detectNoProgress, type RoundFingerprint } from "./no-progress.js";
import type { FinishReason, ModelClient, ModelMessage, ToolCall, Usage } from "./types.js";

/** Why a loop stopped. Stored and printed as strings; never renamed. */
export const StopReason = {
  /** The model called `finish`. */
  Finished: "finished",
  /** The model answered without calling a tool. */
  FinalText: "final_text",
  MaxRounds: "max_rounds",
  /** The model asked for a tool call past `maxToolCalls` (that call was not run). */
  MaxToolCalls: "max_tool_calls",
  /** `maxTokens` (input + output over all rounds) was used up before a round. */
  MaxTokens: "max_tokens",
  /** The loop's `timeoutMs` passed. */
  Timeout: "timeout",
  /** The same tool calls with the same arguments (and progress key) three rounds in a row. */
  NoProgress: "no_progress",
  /** The caller's signal aborted. */
  Cancelled: "cancelled",
} as const;

export type StopReason = (typeof StopReason)[keyof typeof StopReason];

/** Budgets of one loop (all optional; defaults in `limits.ts`). */
export interface ToolLoopLimits {
  /** Default {@link DEFAULT_LOOP_MAX_ROUNDS}. */
  maxRounds?: number;
  /** Tool executions over the loop; `finish` is not counted. Default {@link DEFAULT_LOOP_MAX_TOOL_CALLS}. */
  maxToolCalls?: number;
  /**
   * Input + output tokens over the loop, checked before each round (so the last round may go past
   * it by one call's usage). Default {@link DEFAULT_LOOP_MAX_TOKENS}.
   */
  maxTokens?: number;
  /** Wall time of the whole loop. Default {@link DEFAULT_LOOP_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/** One finished round, as given to `progressKey`. */
export interface LoopRound {
  /** 1-based. */
  round: number;
  text: string;
  toolCalls: ToolCall[];
  results: (ToolOutcome & { callId: string })[];
}

/** What the loop reports while it runs. */
export type ToolLoopEvent =
  | { type: "round_start"; round: number }
  | { type: "model_retry"; round: number; attempt: number; delayMs: number; kind: string; message: string }
  | {
      type: "model_reply";
      round: number;
      text: string;
      toolCalls: ToolCall[];
      usage: Usage;
      finishReason: FinishReason;
      attempts: number;
    }
  | { type: "tool_result"; round: number; callId: string; name: string; isError: boolean; content: string }
  | { type: "stop"; stopReason: StopReason; detail: string; rounds: number };

export interface ToolLoopOptions {
  client: ModelClient;
  system?: string;
  /** The conversation so far (usually one user message with the task). */
  messages: readonly ModelMessage[];
  /** The tools the model may call; `finish` is added by the loop. */
  tools: readonly LoopTool[];
  limits?: ToolLoopLimits;
  signal?: AbortSignal;
  onEvent?: (event: ToolLoopEvent) => void;
  /** Each text delta of the model, as it streams. */
  onText?: (delta: string, round: number) => void;
  /**
   * The caller's progress signal for a finished round (e.g. a hash of the files, a test score). A
   * round only counts toward `no_progress` when its tool calls and its key both repeat.
   */
  progressKey?: (round: LoopRound) => string | undefined;
  /** Per model call. Default: the client's. */
  maxOutputTokens?: number;
  /** Time limit of each model call. Default: the client's (the loop's own limit still applies). */
  callTimeoutMs?: number;
}

export interface ToolLoopResult {
  stopReason: StopReason;
  /** The stop reason in words, with the limit that was hit. */
  stopDetail: string;
  /** Model calls made. */
  rounds: number;
  /** Tool executions (not counting `finish` and calls that were not run). */
  toolCalls: number;
  usage: Usage;
  /** The text of the last model reply (`""` when it had none). */
  finalText: string;
  /** The `summary` of `finish`, when the loop finished that way. */
  summary: string | undefined;
  /** The input messages followed by every reply and tool result of the loop. */
  transcript: ModelMessage[];
}

function positive(
  value: number | undefined,
  fallback: number,
  field: string,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `limits.${field} must be an integer from 1 to ${max}; got ${value}`,
      {
        field: `limits.${field}`,
      },
    );
  }
  return value;
}

/**
 * Runs the tool loop until it stops.
 * @throws RatchetError `invalid_value` for a bad limit or tool name; ModelError when a model call
 *   fails for a reason other than the loop's time limit or cancellation.
 */
export async function runToolLoop(opts: ToolLoopOptions): Promise<ToolLoopResult> {
  const limits = opts.limits ?? {};
  const maxRounds = positive(limits.maxRounds, DEFAULT_LOOP_MAX_ROUNDS, "maxRounds");
  const maxToolCalls = positive(limits.maxToolCalls, DEFAULT_LOOP_MAX_TOOL_CALLS, "maxToolCalls");
  const maxTokens = positive(limits.maxTokens, DEFAULT_LOOP_MAX_TOKENS, "maxTokens");
  const timeoutMs = positive(limits.timeoutMs, DEFAULT_LOOP_TIMEOUT_MS, "timeoutMs", MAX_TIMER_MS);
  const tools = toolsByName(opts.tools);
  const defs = [...[...tools.values()].map((t) => t.def), FINISH_TOOL];
  const toolNames = defs.map((d) => d.name).join(", ");
  const emit = (event: ToolLoopEvent) => opts.onEvent?.(event);

  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
  const abortMessage = () =>
    opts.signal?.aborted ? "not run: the loop was cancelled" : "not run: the loop timed out";

  const transcript: ModelMessage[] = [...opts.messages];
  const history: RoundFingerprint[] = [];
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  let rounds = 0;
  let executed = 0;
  let finalText = "";
  let summary: string | undefined;

  const stop = (stopReason: StopReason, detail: string): ToolLoopResult => {
    emit({ type: "stop", stopReason, detail, rounds });
    const toolCalls = executed;
    return { stopReason, stopDetail: detail, rounds, toolCalls, usage, finalText, summary, transcript };
  };
  const interrupted = (): ToolLoopResult | undefined => {
    if (opts.signal?.aborted) return stop("cancelled", "the caller cancelled the loop");
    if (!deadline.signal.aborted) return undefined;
    return stop("timeout", `the loop's time limit (timeoutMs ${timeoutMs}) passed`);
  };

  try {
    for (;;) {
      const early = interrupted();
      if (early) return early;
      if (rounds >= maxRounds) return stop("max_rounds", `${maxRounds} rounds (maxRounds) were used`);
      const used = usage.inputTokens + usage.outputTokens;
      if (used >= maxTokens) {
        return stop("max_tokens", `${used} tokens used, budget ${maxTokens} (maxTokens)`);
      }

      const round = ++rounds;
      emit({ type: "round_start", round });
      let reply: Awaited<ReturnType<ModelClient["complete"]>>;
      try {
        reply = await opts.client.complete({
          messages: transcript,
          tools: defs,
          ...(opts.system === undefined ? {} : { system: opts.system }),
          ...(opts.maxOutputTokens === undefined ? {} : { maxOutputTokens: opts.maxOutputTokens }),
          ...(opts.callTimeoutMs === undefined ? {} : { timeoutMs: opts.callTimeoutMs }),
          signal,
          ...(opts.onText ? { onText: (delta: string) => opts.onText?.(delta, round) } : {}),
          onRetry: ({ attempt, delayMs, error }) =>
            emit({ type: "model_retry", round, attempt, delayMs, kind: error.kind, message: error.message }),
        });
      } catch (err) {
        // The loop's own limit or the caller's signal cut the call: that is a stop, not a failure.
        const cut =
          isModelError(err) && (err.kind === "cancelled" || err.kind === "timeout")
            ? interrupted()
            : undefined;
        if (cut) return cut;
        throw err;
      }
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      finalText = reply.text;
      transcript.push({
        role: "assistant",
        content: reply.text,
        ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
      });
      emit({ type: "model_reply", round, ...reply });
      if (reply.toolCalls.length === 0) {
        return stop("final_text", "the model answered without calling a tool");
      }

      let finished = false;
      let refused = false;
      const results: LoopRound["results"] = [];
      for (const call of reply.toolCalls) {
        let outcome: ToolOutcome;
        const tool = tools.get(call.name);
        if (finished) outcome = errorOutcome(`not run: ${FINISH_TOOL_NAME} was called before it`);
        else if (signal.aborted) outcome = errorOutcome(abortMessage());
        else if (call.name === FINISH_TOOL_NAME) {
          const parsed = finishSummary(call);
          if ("error" in parsed) outcome = errorOutcome(parsed.error);
          else {
            finished = true;
            summary = parsed.summary;
            outcome = { content: "finished", isError: false };
          }
        } else if (call.invalid) outcome = errorOutcome(call.invalid);
        else if (!tool) outcome = errorOutcome(`unknown tool ${call.name}; the tools are ${toolNames}`);
        else if (executed >= maxToolCalls) {
          refused = true;
          outcome = errorOutcome(`not run: the loop's tool-call limit (${maxToolCalls}) is reached`);
        } else {
          executed++;
          outcome = await runTool(tool, call, signal, abortMessage);
        }
        transcript.push({
          role: "tool",
          toolCallId: call.id,
          toolName: call.name,
          content: outcome.content,
          ...(outcome.isError ? { isError: true } : {}),
        });
        results.push({ callId: call.id, ...outcome });
        emit({ type: "tool_result", round, callId: call.id, name: call.name, ...outcome });
      }

      if (finished) return stop("finished", "the model called finish");
      if (refused) {
        return stop("max_tool_calls", `the tool-call limit (maxToolCalls ${maxToolCalls}) was reached`);
      }
      const progress = opts.progressKey?.({ round, text: reply.text, toolCalls: reply.toolCalls, results });
      history.push({ calls: reply.toolCalls, progress });
      if (detectNoProgress(history)) {
        return stop(
          "no_progress",
          `the same tool calls with the same arguments ${NO_PROGRESS_ROUNDS} rounds in a row`,
        );
      }
    }
  } finally {
    clearTimeout(timer);
  }
}
