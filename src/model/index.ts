/**
 * `model/`: every model call of Ratchet goes through one {@link ModelClient} (Vercel AI SDK 6 over
 * OpenAI-compatible endpoints and Anthropic) and every tool-using conversation through one bounded
 * {@link runToolLoop}. Configuration is compiled once by {@link compileModelOptions}. Tests use the
 * scripted model (`src/testing/scripted-model.ts`). See ARCHITECTURE.md and docs/models.md.
 */

export type { ModelClientDeps } from "./client.js";
export { createLanguageModel, createModelClient } from "./client.js";
export type { CompiledModelOptions, CompileModelOptionsInput, ModelOptions } from "./config.js";
export { compileModelOptions, MODEL_ENV, ModelProvider } from "./config.js";
export type { ModelErrorDetails } from "./errors.js";
export { errorCodeForModelKind, isModelError, ModelError, ModelErrorKind } from "./errors.js";
export {
  DEFAULT_LOOP_MAX_ROUNDS,
  DEFAULT_LOOP_MAX_TOKENS,
  DEFAULT_LOOP_MAX_TOOL_CALLS,
  DEFAULT_LOOP_TIMEOUT_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MODEL_TIMEOUT_MS,
  MAX_ATTEMPTS_LIMIT,
  MAX_ERROR_DETAIL_CHARS,
  MAX_RETRY_AFTER_MS,
  MAX_TIMER_MS,
  NO_PROGRESS_ROUNDS,
  RETRY_BASE_DELAY_MS,
  RETRY_MAX_DELAY_MS,
  TOOL_RESULT_HEAD_BYTES,
  TOOL_RESULT_TAIL_BYTES,
} from "./limits.js";
export type { LoopTool, ToolOutcome } from "./loop-tools.js";
export { FINISH_TOOL, FINISH_TOOL_NAME } from "./loop-tools.js";
export type { RoundFingerprint } from "./no-progress.js";
export { detectNoProgress } from "./no-progress.js";
export type {
  LoopRound,
  ToolLoopEvent,
  ToolLoopLimits,
  ToolLoopOptions,
  ToolLoopResult,
} from "./tool-loop.js";
export { runToolLoop, StopReason } from "./tool-loop.js";
export type {
  Completion,
  CompletionRequest,
  FinishReason,
  JsonSchema,
  ModelClient,
  ModelMessage,
  RetryInfo,
  ToolCall,
  ToolDef,
  Usage,
} from "./types.js";
