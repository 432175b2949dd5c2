import { describe, expect, it } from "vitest";
import { isRatchetError } from "../core/index.js";
import { createLanguageModel, createModelClient } from "./client.js";
import { compileModelOptions } from "./config.js";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_MODEL_TIMEOUT_MS, RETRY_BASE_DELAY_MS } from "./limits.js";

function refusal(fn: () => unknown): { message: string; field: unknown; code: string } {
  try {
    fn();
  } catch (err) {
    if (isRatchetError(err)) return { message: err.message, field: err.details.field, code: err.code };
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("compileModelOptions", () => {
  it("reads RATCHET_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY, with defaults for the rest", () => {
    const o = compileModelOptions({
      env: {
        RATCHET_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: "sk-env",
        OPENAI_BASE_URL: "http://proxy:4000/v1/",
      },
    });
    expect(o).toEqual({
      provider: "openai",
      modelId: "gpt-4o-mini",
      model: "openai:gpt-4o-mini",
      baseUrl: "http://proxy:4000/v1",
      apiKey: "sk-env",
      apiKeySource: "OPENAI_API_KEY",
      timeoutMs: DEFAULT_MODEL_TIMEOUT_MS,
      maxAttempts: DEFAULT_MAX_ATTEMPTS,
      retryBaseDelayMs: RETRY_BASE_DELAY_MS,
      retryMaxDelayMs: 30_000,
      maxOutputTokens: undefined,
      headers: {},
    });
  });

  it("takes each field from flag, then env, then config, then the default", () => {
    const env = { RATCHET_MODEL: "openai:env-model", OPENAI_API_KEY: "sk-env" };
    const config = { model: "openai:config-model", apiKey: "sk-config", timeoutMs: 5000, maxAttempts: 5 };
    const flags = { model: "openai:flag-model", timeoutMs: 7000 };
    expect(compileModelOptions({ flags, env, config })).toMatchObject({
      modelId: "flag-model",
      apiKey: "sk-env",
      apiKeySource: "OPENAI_API_KEY",
      timeoutMs: 7000,
      maxAttempts: 5,
      baseUrl: "https://api.openai.com/v1",
    });
    expect(compileModelOptions({ env: {}, config })).toMatchObject({
      modelId: "config-model",
      apiKey: "sk-config",
      apiKeySource: "config apiKey",
    });
    // An empty variable counts as unset.
    expect(compileModelOptions({ env: { RATCHET_MODEL: "", OPENAI_API_KEY: "" }, config }).modelId).toBe(
      "config-model",
    );
  });

  it("refuses a missing model, naming RATCHET_MODEL", () => {
    const r = refusal(() => compileModelOptions({ env: {} }));
    expect(r).toMatchObject({ code: "invalid_value", field: "RATCHET_MODEL" });
    expect(r.message).toContain("set RATCHET_MODEL");
  });

  it("refuses a missing key for openai and anthropic, naming the variable", () => {
    expect(refusal(() => compileModelOptions({ env: { RATCHET_MODEL: "openai:gpt-4o" } }))).toMatchObject({
      code: "invalid_value",
      field: "OPENAI_API_KEY",
      message: expect.stringContaining("OPENAI_API_KEY is not set"),
    });
    expect(
      refusal(() =>
        compileModelOptions({ env: { RATCHET_MODEL: "anthropic:claude-sonnet-4-5", OPENAI_API_KEY: "x" } }),
      ),
    ).toMatchObject({ field: "ANTHROPIC_API_KEY" });
  });

  it("openai-compatible needs OPENAI_BASE_URL but no key; the model id may contain colons", () => {
    expect(
      refusal(() => compileModelOptions({ env: { RATCHET_MODEL: "openai-compatible:llama3" } })),
    ).toMatchObject({
      field: "OPENAI_BASE_URL",
    });
    const o = compileModelOptions({
      env: { RATCHET_MODEL: "openai-compatible:llama3:8b", OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" },
    });
    expect(o).toMatchObject({ provider: "openai-compatible", modelId: "llama3:8b", apiKey: undefined });
  });

  it("refuses an unknown provider, a bad URL and bad numbers, naming where they came from", () => {
    expect(refusal(() => compileModelOptions({ env: { RATCHET_MODEL: "gemini:pro" } }))).toMatchObject({
      field: "RATCHET_MODEL",
      message: expect.stringContaining('got "gemini:pro"'),
    });
    expect(refusal(() => compileModelOptions({ flags: { model: "gpt-4o" }, env: {} }))).toMatchObject({
      field: "flag model",
    });
    const base = { RATCHET_MODEL: "openai-compatible:m" };
    expect(
      refusal(() => compileModelOptions({ env: { ...base, OPENAI_BASE_URL: "localhost:8000" } })),
    ).toMatchObject({
      field: "OPENAI_BASE_URL",
    });
    expect(
      refusal(() =>
        compileModelOptions({ env: { ...base, OPENAI_BASE_URL: "http://x" }, config: { maxAttempts: 0 } }),
      ),
    ).toMatchObject({ field: "config maxAttempts" });
    expect(
      refusal(() =>
        compileModelOptions({ env: { ...base, OPENAI_BASE_URL: "http://x" }, flags: { timeoutMs: 1.5 } }),
      ),
    ).toMatchObject({ field: "flag timeoutMs" });
  });
});

describe("Anthropic (no network)", () => {
  const env = {
    RATCHET_MODEL: "anthropic:claude-sonnet-4-5",
    ANTHROPIC_API_KEY: "sk-ant-test-000000000000000000",
  };

  it("compiles with Anthropic's default URL, or ANTHROPIC_BASE_URL", () => {
    expect(compileModelOptions({ env })).toMatchObject({
      provider: "anthropic",
      modelId: "claude-sonnet-4-5",
      baseUrl: "https://api.anthropic.com/v1",
      apiKeySource: "ANTHROPIC_API_KEY",
    });
    expect(
      compileModelOptions({ env: { ...env, ANTHROPIC_BASE_URL: "http://127.0.0.1:9/v1" } }).baseUrl,
    ).toBe("http://127.0.0.1:9/v1");
  });

  it("builds the AI SDK's Anthropic model and a client without calling it", () => {
    const options = compileModelOptions({ env });
    let called = false;
    const fetch = (async () => {
      called = true;
      throw new Error("no network in this test");
    }) as typeof globalThis.fetch;
    const lm = createLanguageModel(options, fetch);
    expect(typeof lm).toBe("object");
    expect(lm).toMatchObject({ provider: "anthropic.messages", modelId: "claude-sonnet-4-5" });
    expect(createModelClient(options, { fetch }).model).toBe("anthropic:claude-sonnet-4-5");
    expect(called).toBe(false);
  });
});
