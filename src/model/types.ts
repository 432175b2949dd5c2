/**
 * The model layer's vocabulary: messages, tool definitions, tool calls, one completion, and the
 * {@link ModelClient} interface every model-driven part of Ratchet calls. These are plain JSON
 * values (a transcript can be stored and replayed as is); the AI SDK's own types stay inside
 * `client.ts` and `messages.ts`.
 */
import type { ModelError } from "./errors.js";

/** A JSON Schema object (draft 7 / 2020-12 subset the providers accept). */
export type JsonSchema = Record<string, unknown>;

/** A tool the model may call. */
export interface ToolDef {
  /** `^[A-Za-z0-9_-]{1,64}$` (what every provider accepts). */
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  inputSchema: JsonSchema;
}

/** A tool call the model made. */
export interface ToolCall {
  /** The provider's call id; the result goes back under the same id. */
  id: string;
  name: string;
  /** The parsed arguments (the raw text when they are not valid JSON, see `invalid`). */
  args: unknown;
  /** Set when the call cannot be run as made: unknown tool, or arguments that are not JSON. */
  invalid?: string;
}

/** One message of a conversation. The system prompt is passed separately. */
export type ModelMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ToolCall[] }
  | {
      role: "tool";
      toolCallId: string;
      toolName: string;
      /** The result as text (JSON text for structured results). */
      content: string;
      /** The tool failed; `content` says why. */
      isError?: boolean;
    };

/** Tokens of one call (or a sum of calls). A provider that reports nothing counts as 0. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Why a completed call stopped. A call that ends any other way (no finish event, an `error`
 * finish, a stream cut mid-way) is a {@link ModelError} `incomplete_stream`, never a result.
 */
export type FinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "other";

/** A retry the client is about to make. */
export interface RetryInfo {
  /** The attempt that failed (1-based). */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: ModelError;
}

export interface CompletionRequest {
  messages: readonly ModelMessage[];
  tools?: readonly ToolDef[];
  system?: string;
  /** Default: the client's `maxOutputTokens` (unset: the provider's default). */
  maxOutputTokens?: number;
  /** Cancels the call (`ModelError` `cancelled`). */
  signal?: AbortSignal;
  /** Time limit of the whole call, retries included. Default: the client's `timeoutMs`. */
  timeoutMs?: number;
  /** Each text delta as it streams in. Deltas of a failed attempt are not taken back. */
  onText?: (delta: string) => void;
  /** Each tool call as soon as the stream has it whole. */
  onToolCall?: (call: ToolCall) => void;
  /** Before each retry. */
  onRetry?: (info: RetryInfo) => void;
}

export interface Completion {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  finishReason: FinishReason;
  /** Attempts made (1 when the first one succeeded). */
  attempts: number;
}

/** One model behind one interface. The real adapter is {@link createModelClient}. */
export interface ModelClient {
  /** `provider:model`, for records and messages. */
  readonly model: string;
  /**
   * Streams one reply.
   * @throws ModelError (`code` from core, `kind` from {@link ModelErrorKind}).
   */
  complete(req: CompletionRequest): Promise<Completion>;
}
