/**
 * Model configuration: loose {@link ModelOptions} from flags, the environment and the config file
 * are compiled once by {@link compileModelOptions} into {@link CompiledModelOptions} (all required).
 * Precedence per field: flag > env > config > default. The environment is read when compiling,
 * never at import.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MODEL_TIMEOUT_MS,
  MAX_ATTEMPTS_LIMIT,
  MAX_TIMER_MS,
  RETRY_BASE_DELAY_MS,
  RETRY_MAX_DELAY_MS,
} from "./limits.js";

/** The providers Ratchet speaks to. */
export const ModelProvider = {
  /** api.openai.com (or any `OPENAI_BASE_URL`), through the OpenAI-compatible adapter; needs a key. */
  OpenAI: "openai",
  /** vLLM, llama.cpp server, Ollama, LiteLLM, the scripted model…: needs `OPENAI_BASE_URL`. */
  OpenAICompatible: "openai-compatible",
  /** api.anthropic.com (or `ANTHROPIC_BASE_URL`); needs a key. */
  Anthropic: "anthropic",
} as const;

export type ModelProvider = (typeof ModelProvider)[keyof typeof ModelProvider];

/** The environment variables the model layer reads. */
export const MODEL_ENV = {
  model: "RATCHET_MODEL",
  openaiBaseUrl: "OPENAI_BASE_URL",
  openaiApiKey: "OPENAI_API_KEY",
  anthropicBaseUrl: "ANTHROPIC_BASE_URL",
  anthropicApiKey: "ANTHROPIC_API_KEY",
} as const;

const DEFAULT_BASE_URL: Record<ModelProvider, string | undefined> = {
  openai: "https://api.openai.com/v1",
  "openai-compatible": undefined,
  anthropic: "https://api.anthropic.com/v1",
};

/** Model settings as given (every field optional). */
export interface ModelOptions {
  /**
   * `provider:model`: `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`,
   * `openai-compatible:<model id>` (split at the first colon, so `openai-compatible:llama3:8b`
   * names the model `llama3:8b`). No default.
   */
  model?: string;
  /** Endpoint base URL. Default: OpenAI's or Anthropic's; required for `openai-compatible`. */
  baseUrl?: string;
  /** Required for `openai` and `anthropic`; optional for `openai-compatible`. */
  apiKey?: string;
  /** Time limit of one call, retries included. Default {@link DEFAULT_MODEL_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Attempts per call (first + retries). Default {@link DEFAULT_MAX_ATTEMPTS}. */
  maxAttempts?: number;
  /** First backoff wait. Default {@link RETRY_BASE_DELAY_MS}. */
  retryBaseDelayMs?: number;
  /** Longest backoff wait. Default {@link RETRY_MAX_DELAY_MS}. */
  retryMaxDelayMs?: number;
  /** Output tokens per call. Default: unset (the provider's default). */
  maxOutputTokens?: number;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
}

export interface CompileModelOptionsInput {
  /** Command-line flags (highest precedence). */
  flags?: ModelOptions;
  /** Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The config file's model section (below env). */
  config?: ModelOptions;
}

export interface CompiledModelOptions {
  provider: ModelProvider;
  /** The provider's model id (`gpt-4o-mini`). */
  modelId: string;
  /** `provider:modelId`. */
  model: string;
  baseUrl: string;
  apiKey: string | undefined;
  /** Where the key came from (`OPENAI_API_KEY`, `flag apiKey`, …): its label when redacted. */
  apiKeySource: string | undefined;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  maxOutputTokens: number | undefined;
  headers: Record<string, string>;
}

interface Sourced<T> {
  value: T;
  source: string;
}

function invalid(message: string, field: string): RatchetError {
  return new RatchetError(ErrorCode.InvalidValue, message, { field });
}

/** The first defined value of flag, env, config, with the name of where it came from. */
function pick<T>(
  field: keyof ModelOptions,
  flags: ModelOptions,
  config: ModelOptions,
  env?: { name: string; value: string | undefined },
): Sourced<T> | undefined {
  const flag = flags[field];
  if (flag !== undefined) return { value: flag as T, source: `flag ${field}` };
  if (env?.value !== undefined && env.value !== "") return { value: env.value as T, source: env.name };
  const conf = config[field];
  if (conf !== undefined) return { value: conf as T, source: `config ${field}` };
  return undefined;
}

function parseModel(spec: Sourced<string>): { provider: ModelProvider; modelId: string } {
  const at = spec.value.indexOf(":");
  const providers = Object.values(ModelProvider) as string[];
  const provider = at < 0 ? "" : spec.value.slice(0, at);
  const modelId = at < 0 ? "" : spec.value.slice(at + 1).trim();
  if (!providers.includes(provider) || modelId === "") {
    throw invalid(
      `${spec.source} must be provider:model with provider one of ${providers.join(", ")} (e.g. openai:gpt-4o-mini); got ${JSON.stringify(spec.value)}`,
      spec.source,
    );
  }
  return { provider: provider as ModelProvider, modelId };
}

function integer(spec: Sourced<number> | undefined, fallback: number, min: number, max: number): number {
  if (!spec) return fallback;
  const n = typeof spec.value === "string" ? Number(spec.value) : spec.value;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw invalid(
      `${spec.source} must be an integer from ${min} to ${max}; got ${JSON.stringify(spec.value)}`,
      spec.source,
    );
  }
  return n;
}

function baseUrl(spec: Sourced<string>): string {
  let url: URL;
  try {
    url = new URL(spec.value);
  } catch {
    throw invalid(`${spec.source} is not a URL: ${JSON.stringify(spec.value)}`, spec.source);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid(`${spec.source} must be an http(s) URL; got ${JSON.stringify(spec.value)}`, spec.source);
  }
  return spec.value.replace(/\/+$/, "");
}

/**
 * Compiles model settings (flag > env > config > default).
 * @throws RatchetError `invalid_value` naming the variable or field: no model (`RATCHET_MODEL`), an
 *   unknown provider, no key for `openai` (`OPENAI_API_KEY`) or `anthropic` (`ANTHROPIC_API_KEY`),
 *   no `OPENAI_BASE_URL` for `openai-compatible`, a bad URL or number.
 */
export function compileModelOptions(input: CompileModelOptionsInput = {}): CompiledModelOptions {
  const flags = input.flags ?? {};
  const config = input.config ?? {};
  const env = input.env ?? process.env;
  const spec = pick<string>("model", flags, config, { name: MODEL_ENV.model, value: env[MODEL_ENV.model] });
  if (!spec) {
    throw invalid(
      `no model configured: set ${MODEL_ENV.model} (e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5 or openai-compatible:<model>), or give a model in the flags or config`,
      MODEL_ENV.model,
    );
  }
  const { provider, modelId } = parseModel(spec);
  const anthropic = provider === "anthropic";
  const urlVar = anthropic ? MODEL_ENV.anthropicBaseUrl : MODEL_ENV.openaiBaseUrl;
  const keyVar = anthropic ? MODEL_ENV.anthropicApiKey : MODEL_ENV.openaiApiKey;

  const urlSpec = pick<string>("baseUrl", flags, config, { name: urlVar, value: env[urlVar] });
  const defaultUrl = DEFAULT_BASE_URL[provider];
  if (!urlSpec && !defaultUrl) {
    throw invalid(
      `${urlVar} is not set: the ${provider} provider needs the endpoint's base URL (e.g. http://127.0.0.1:8000/v1)`,
      urlVar,
    );
  }
  const keySpec = pick<string>("apiKey", flags, config, { name: keyVar, value: env[keyVar] });
  if (!keySpec && provider !== "openai-compatible") {
    throw invalid(`${keyVar} is not set: the ${provider} provider needs an API key`, keyVar);
  }

  const retryBaseDelayMs = integer(
    pick("retryBaseDelayMs", flags, config),
    RETRY_BASE_DELAY_MS,
    0,
    MAX_TIMER_MS,
  );
  const retryMaxDelayMs = integer(
    pick("retryMaxDelayMs", flags, config),
    RETRY_MAX_DELAY_MS,
    0,
    MAX_TIMER_MS,
  );
  const maxOutput = pick<number>("maxOutputTokens", flags, config);
  return {
    provider,
    modelId,
    model: `${provider}:${modelId}`,
    baseUrl: urlSpec ? baseUrl(urlSpec) : (defaultUrl as string),
    apiKey: keySpec?.value,
    apiKeySource: keySpec?.source,
    timeoutMs: integer(pick("timeoutMs", flags, config), DEFAULT_MODEL_TIMEOUT_MS, 1, MAX_TIMER_MS),
    maxAttempts: integer(pick("maxAttempts", flags, config), DEFAULT_MAX_ATTEMPTS, 1, MAX_ATTEMPTS_LIMIT),
    retryBaseDelayMs,
    retryMaxDelayMs: Math.max(retryBaseDelayMs, retryMaxDelayMs),
    maxOutputTokens: maxOutput ? integer(maxOutput, 0, 1, 10_000_000) : undefined,
    headers: { ...config.headers, ...flags.headers },
  };
}
