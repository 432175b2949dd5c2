/**
 * The real {@link ModelClient}: the Vercel AI SDK's `streamText` over the OpenAI-compatible adapter
 * (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, the scripted model) or the Anthropic adapter.
 *
 * One `complete()` is: up to `maxAttempts` attempts under one time limit, each attempt one streamed
 * request whose `fullStream` is consumed part by part (text deltas and tool calls reach the caller
 * as they arrive). An attempt only succeeds when the stream delivered a real finish; a 429, 5xx or
 * connection failure before the reply started is retried with backoff (or `Retry-After`). See
 * ARCHITECTURE.md for why a broken stream is never retried.
 */
import { setTimeout as sleepFor } from "node:timers/promises";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { type LanguageModel, streamText } from "ai";
import { ErrorCode, RatchetError, Redactor } from "../core/index.js";
import { classifyFailure } from "./classify.js";
import { type CompiledModelOptions, MODEL_ENV } from "./config.js";
import { type ModelError, retryDelayMs } from "./errors.js";
import { MAX_RETRY_AFTER_MS, MAX_TIMER_MS } from "./limits.js";
import { toSdkMessages, toSdkTools } from "./messages.js";
import type { Completion, CompletionRequest, FinishReason, ModelClient, ToolCall } from "./types.js";

type FetchLike = typeof globalThis.fetch;

/** Side effects of the client, replaceable in tests. */
export interface ModelClientDeps {
  /** Default: the global `fetch`. */
  fetch?: FetchLike;
  /** Waits between attempts; rejects when `signal` aborts. Default: a timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Default `Date.now`. */
  now?: () => number;
  /** More secrets to mask in error texts (the API key is always masked). */
  redactor?: Redactor;
}

/** The AI SDK language model for compiled options (no request is made). */
export function createLanguageModel(options: CompiledModelOptions, fetch?: FetchLike): LanguageModel {
  const common = {
    baseURL: options.baseUrl,
    apiKey: options.apiKey,
    headers: options.headers,
    ...(fetch ? { fetch } : {}),
  };
  if (options.provider === "anthropic") return createAnthropic(common).languageModel(options.modelId);
  return createOpenAICompatible({ ...common, name: options.provider, includeUsage: true }).chatModel(
    options.modelId,
  );
}

/** A throw from a caller's callback: passed through untouched, never retried. */
class CallbackFailure {
  constructor(readonly error: unknown) {}
}

/** A failure inside one attempt, with whether the reply had started. */
class AttemptFailure {
  constructor(
    readonly error: unknown,
    readonly started: boolean,
  ) {}
}

function callback<A>(fn: ((arg: A) => void) | undefined, arg: A): void {
  if (!fn) return;
  try {
    fn(arg);
  } catch (err) {
    throw new CallbackFailure(err);
  }
}

/**
 * A {@link ModelClient} for compiled options.
 *
 * @example
 * const client = createModelClient(compileModelOptions());
 * const reply = await client.complete({ messages: [{ role: "user", content: "hi" }], onText: write });
 */
export function createModelClient(options: CompiledModelOptions, deps: ModelClientDeps = {}): ModelClient {
  return new AiSdkModelClient(options, deps);
}

class AiSdkModelClient implements ModelClient {
  readonly model: string;
  readonly #options: CompiledModelOptions;
  readonly #languageModel: LanguageModel;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #now: () => number;
  readonly #redact: (text: string) => string;

  constructor(options: CompiledModelOptions, deps: ModelClientDeps) {
    this.model = options.model;
    this.#options = options;
    this.#languageModel = createLanguageModel(options, deps.fetch);
    this.#sleep = deps.sleep ?? ((ms, signal) => sleepFor(ms, undefined, { signal }));
    this.#now = deps.now ?? Date.now;
    const keyName = options.provider === "anthropic" ? MODEL_ENV.anthropicApiKey : MODEL_ENV.openaiApiKey;
    const own = new Redactor().add(keyName, options.apiKey);
    const extra = deps.redactor;
    this.#redact = (text) => own.redact(extra ? extra.redact(text) : text);
  }

  async complete(req: CompletionRequest): Promise<Completion> {
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
      const message = `timeoutMs must be an integer from 1 to ${MAX_TIMER_MS}; got ${timeoutMs}`;
      throw new RatchetError(ErrorCode.InvalidValue, message, { field: "timeoutMs" });
    }
    const started = this.#now();
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal;
    const fail = (err: unknown, attempt: number, streamStarted = false): ModelError => {
      if (err instanceof CallbackFailure) throw err.error;
      const failure = classifyFailure(err, {
        model: this.model,
        attempt,
        started: streamStarted,
        timedOut: deadline.signal.aborted,
        cancelled: req.signal?.aborted === true,
        timeoutMs,
        redact: this.#redact,
        nowMs: this.#now(),
      });
      if (!failure) throw err;
      return failure;
    };
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return { ...(await this.#attempt(req, signal)), attempts: attempt };
        } catch (err) {
          const failure =
            err instanceof AttemptFailure ? fail(err.error, attempt, err.started) : fail(err, attempt);
          if (!failure.retryable || attempt >= this.#options.maxAttempts) throw failure;
          if (failure.retryAfterMs !== undefined && failure.retryAfterMs > MAX_RETRY_AFTER_MS) throw failure;
          const delayMs = retryDelayMs(attempt, failure.retryAfterMs, {
            baseDelayMs: this.#options.retryBaseDelayMs,
            maxDelayMs: this.#options.retryMaxDelayMs,
          });
          // Waiting past the time limit only to time out would hide the real error.
          if (this.#now() + delayMs >= started + timeoutMs) throw failure;
          req.onRetry?.({ attempt, delayMs, error: failure });
          try {
            await this.#sleep(delayMs, signal);
          } catch (sleepErr) {
            throw signal.aborted ? fail(sleepErr, attempt) : sleepErr;
          }
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** One streamed request. Throws {@link AttemptFailure} or {@link CallbackFailure}. */
  async #attempt(req: CompletionRequest, callSignal: AbortSignal): Promise<Omit<Completion, "attempts">> {
    // Aborted on every way out, so a failed or abandoned attempt never leaves its request open.
    const own = new AbortController();
    let started = false;
    try {
      const result = streamText({
        model: this.#languageModel,
        ...(req.system === undefined ? {} : { system: req.system }),
        messages: toSdkMessages(req.messages),
        ...(req.tools && req.tools.length > 0 ? { tools: toSdkTools(req.tools) } : {}),
        maxOutputTokens: req.maxOutputTokens ?? this.#options.maxOutputTokens,
        abortSignal: AbortSignal.any([callSignal, own.signal]),
        maxRetries: 0,
        // Errors are read from the stream below; the SDK's default handler would print them.
        onError: () => {},
      });
      let text = "";
      const toolCalls: ToolCall[] = [];
      let finish: { reason: string; raw: string | undefined; input?: number; output?: number } | undefined;
      let streamError: unknown;
      for await (const part of result.fullStream) {
        switch (part.type) {
          case "start-step":
            started = true;
            break;
          case "text-delta":
            text += part.text;
            callback(req.onText, part.text);
            break;
          case "tool-call": {
            const call: ToolCall = { id: part.toolCallId, name: part.toolName, args: part.input };
            if ("invalid" in part && part.invalid) call.invalid = this.#redact(errorMessage(part.error));
            toolCalls.push(call);
            callback(req.onToolCall, call);
            break;
          }
          case "finish-step":
            finish = {
              reason: part.finishReason,
              raw: part.rawFinishReason,
              input: part.usage.inputTokens,
              output: part.usage.outputTokens,
            };
            break;
          case "error":
            streamError ??= part.error;
            break;
          default:
            break;
        }
      }
      // An abort ends the stream without a finish; `classifyFailure` names it timeout or cancelled.
      if (streamError !== undefined) throw new AttemptFailure(streamError, started);
      if (!finish) throw new AttemptFailure(new Error("the stream ended without a finish event"), true);
      if (finish.reason === "error" || (finish.reason === "other" && finish.raw === undefined)) {
        const why = `the stream finished with reason ${JSON.stringify(finish.raw ?? finish.reason)}`;
        throw new AttemptFailure(new Error(why), true);
      }
      return {
        text,
        toolCalls,
        usage: { inputTokens: finish.input ?? 0, outputTokens: finish.output ?? 0 },
        finishReason: finish.reason as FinishReason,
      };
    } catch (err) {
      if (err instanceof AttemptFailure || err instanceof CallbackFailure) throw err;
      throw new AttemptFailure(err, started);
    } finally {
      own.abort();
    }
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
