/**
 * A real {@link ModelClient} pointed at a {@link ScriptedModel}: the same client path as production
 * (the AI SDK's OpenAI-compatible adapter over HTTP), with a fake key and short retry waits.
 *
 * @example
 * const model = await startScriptedModel({ script: "test/fixtures/model/finish.json" });
 * const client = scriptedModelClient(model);
 * const result = await runToolLoop({ client, messages, tools });
 */
import {
  type CompiledModelOptions,
  compileModelOptions,
  createModelClient,
  type ModelClient,
  type ModelClientDeps,
  type ModelOptions,
} from "../model/index.js";
import type { ScriptedModel } from "./scripted-model.js";

/** The key the scripted clients send (the scripted model records that one was sent, not its value). */
export const SCRIPTED_API_KEY = "sk-scripted-0000000000000000";

/** Compiled options for a scripted model: `openai-compatible:scripted`, retry waits of 1-10 ms. */
export function scriptedModelOptions(
  model: Pick<ScriptedModel, "url">,
  overrides: ModelOptions = {},
): CompiledModelOptions {
  return compileModelOptions({
    flags: {
      model: "openai-compatible:scripted",
      baseUrl: model.url,
      apiKey: SCRIPTED_API_KEY,
      retryBaseDelayMs: 1,
      retryMaxDelayMs: 10,
      ...overrides,
    },
    env: {},
  });
}

/** A client for a scripted model (see {@link scriptedModelOptions}). */
export function scriptedModelClient(
  model: Pick<ScriptedModel, "url">,
  overrides: ModelOptions = {},
  deps: ModelClientDeps = {},
): ModelClient {
  return createModelClient(scriptedModelOptions(model, overrides), deps);
}
