// The real client path (AI SDK OpenAI-compatible adapter over HTTP) against the scripted model.
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ScriptedModel, startScriptedModel } from "../testing/scripted-model.js";
import { SCRIPTED_API_KEY, scriptedModelClient } from "../testing/scripted-model-client.js";
import type { ScriptInput } from "../testing/scripted-model-script.js";
import type { ModelClientDeps } from "./client.js";
import { isModelError, type ModelError } from "./errors.js";
import type { RetryInfo, ToolCall } from "./types.js";

const open: ScriptedModel[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

async function scripted(script: ScriptInput): Promise<ScriptedModel> {
  const model = await startScriptedModel({ script });
  open.push(model);
  return model;
}

/** Waits on the server's view of a request; generous for a loaded machine. */
const WAIT = { timeout: 10_000, interval: 10 };
const hello = [{ role: "user" as const, content: "hello" }];
const echoTool = {
  name: "echo",
  description: "Echoes its input.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
};

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isModelError(err)) throw new Error(`expected a ModelError, got ${String(err)}`);
  return err;
}

/** Records the waits instead of waiting. */
function fakeSleep(): { deps: ModelClientDeps; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    deps: {
      sleep: async (ms) => {
        waits.push(ms);
      },
    },
  };
}

describe("ModelClient over the scripted model", () => {
  it("streams text: onText deltas arrive in order, usage and finish are recorded", async () => {
    const text = "The quick brown fox jumps over the lazy dog, twice over.";
    const model = await scripted({ turns: [{ text, usage: { prompt_tokens: 11, completion_tokens: 13 } }] });
    const deltas: string[] = [];
    const reply = await scriptedModelClient(model).complete({
      system: "be brief",
      messages: hello,
      onText: (d) => deltas.push(d),
    });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(text);
    expect(reply).toEqual({
      text,
      toolCalls: [],
      usage: { inputTokens: 11, outputTokens: 13 },
      finishReason: "stop",
      attempts: 1,
    });
    const [req] = model.requests();
    expect(req).toMatchObject({
      method: "POST",
      path: "/v1/chat/completions",
      authorized: true,
      status: 200,
    });
    expect(req?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(req)).not.toContain(SCRIPTED_API_KEY);
    expect(req?.body).toMatchObject({
      model: "scripted",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hello" },
      ],
    });
  });

  it("returns tool calls whose arguments were streamed in fragments, and reports each one", async () => {
    const args = { text: "a fairly long argument that arrives in several pieces", n: 3 };
    const model = await scripted({
      turns: [
        {
          text: "calling",
          tool_calls: [
            { name: "echo", arguments: args },
            { name: "echo", arguments: { text: "second" }, id: "call_custom" },
          ],
        },
      ],
    });
    const seen: ToolCall[] = [];
    const reply = await scriptedModelClient(model).complete({
      messages: hello,
      tools: [echoTool],
      onToolCall: (c) => seen.push(c),
    });
    expect(reply.finishReason).toBe("tool-calls");
    expect(reply.text).toBe("calling");
    expect(reply.toolCalls).toEqual([
      { id: "call_1_0", name: "echo", args },
      { id: "call_custom", name: "echo", args: { text: "second" } },
    ]);
    expect(seen).toEqual(reply.toolCalls);
    const body = model.requests()[0]?.body as {
      tools: { function: { name: string; parameters: unknown } }[];
    };
    expect(body.tools.map((t) => t.function.name)).toEqual(["echo"]);
    expect(body.tools[0]?.function.parameters).toMatchObject(echoTool.inputSchema);
  });

  it("marks a call to an unknown tool or with broken JSON arguments as invalid instead of failing", async () => {
    const model = await scripted({
      turns: [
        {
          tool_calls: [
            { name: "nope", arguments: { a: 1 } },
            { name: "echo", arguments: '{"text": "unterminated' },
          ],
        },
      ],
    });
    const reply = await scriptedModelClient(model).complete({ messages: hello, tools: [echoTool] });
    expect(reply.toolCalls).toHaveLength(2);
    expect(reply.toolCalls[0]).toMatchObject({ name: "nope", invalid: expect.stringContaining("nope") });
    expect(reply.toolCalls[1]).toMatchObject({ name: "echo", invalid: expect.stringMatching(/JSON/) });
  });

  it("a stream cut before its finish is an incomplete_stream error, not a short answer, and is not retried", async () => {
    const model = await scripted({
      turns: [{ text: "This answer is going to be cut off half way.", cut: true }],
    });
    const deltas: string[] = [];
    const err = await failure(
      scriptedModelClient(model).complete({ messages: hello, onText: (d) => deltas.push(d) }),
    );
    expect(err.kind).toBe("incomplete_stream");
    expect(err.retryable).toBe(false);
    expect(err.code).toBe("work_failed");
    expect(err.message).toMatch(/model openai-compatible:scripted: the reply stream broke off/);
    expect(deltas.length).toBeGreaterThan(0);
    expect(model.requests()).toHaveLength(1);
  });

  it("a connection reset mid-stream is an incomplete_stream error too", async () => {
    const model = await scripted({
      turns: [{ tool_calls: [{ name: "echo", arguments: { text: "x".repeat(200) } }], cut: "reset" }],
    });
    const err = await failure(scriptedModelClient(model).complete({ messages: hello, tools: [echoTool] }));
    expect(err.kind).toBe("incomplete_stream");
    expect(model.requests()).toHaveLength(1);
  });

  it("retries a 429 after its Retry-After and succeeds on the second request", async () => {
    const model = await scripted({ turns: [{ error: { status: 429, retry_after: 1 } }, { text: "ok now" }] });
    const { deps, waits } = fakeSleep();
    const retries: RetryInfo[] = [];
    const reply = await scriptedModelClient(model, {}, deps).complete({
      messages: hello,
      onRetry: (r) => retries.push(r),
    });
    expect(reply).toMatchObject({ text: "ok now", attempts: 2 });
    expect(waits).toEqual([1000]);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, delayMs: 1000 });
    expect(retries[0]?.error).toMatchObject({ kind: "rate_limited", status: 429, retryAfterMs: 1000 });
    expect(model.requests().map((r) => r.status)).toEqual([429, 200]);
  });

  it("does not hold a call for a Retry-After longer than the limit", async () => {
    const model = await scripted({
      turns: [{ error: { status: 429, retry_after: 3600 } }, { text: "never" }],
    });
    const { deps, waits } = fakeSleep();
    const err = await failure(scriptedModelClient(model, {}, deps).complete({ messages: hello }));
    expect(err).toMatchObject({ kind: "rate_limited", retryAfterMs: 3_600_000, attempts: 1 });
    expect(waits).toEqual([]);
    expect(model.requests()).toHaveLength(1);
  });

  it("gives up on 500s after maxAttempts, with exponential backoff between attempts", async () => {
    const model = await scripted({ turns: [{ error: { status: 500 }, repeat: 10 }] });
    const { deps, waits } = fakeSleep();
    const err = await failure(
      scriptedModelClient(
        model,
        { maxAttempts: 3, retryBaseDelayMs: 100, retryMaxDelayMs: 1000 },
        deps,
      ).complete({
        messages: hello,
      }),
    );
    expect(err).toMatchObject({ kind: "server_error", status: 500, attempts: 3, retryable: true });
    expect(err.message).toMatch(/server error \(HTTP 500\).*\(after 3 attempts\)/);
    expect(waits).toEqual([100, 200]);
    expect(model.requests()).toHaveLength(3);
  });

  it("retries a connection failure", async () => {
    const gone = await startScriptedModel({ script: { turns: [] } });
    await gone.close();
    const { deps, waits } = fakeSleep();
    const err = await failure(
      scriptedModelClient(gone, { maxAttempts: 2 }, deps).complete({ messages: hello }),
    );
    expect(err).toMatchObject({ kind: "connection", attempts: 2 });
    expect(waits).toHaveLength(1);
  });

  it("does not retry a 401, and masks the API key in the error", async () => {
    const model = await scripted({
      turns: [
        {
          error: {
            status: 401,
            body: { error: { message: `Incorrect API key provided: ${SCRIPTED_API_KEY}`, type: "auth" } },
          },
        },
        { text: "unreachable" },
      ],
    });
    const err = await failure(scriptedModelClient(model).complete({ messages: hello }));
    expect(err).toMatchObject({ kind: "auth", status: 401, retryable: false, code: "invalid_value" });
    expect(err.message).toContain("Incorrect API key provided: [REDACTED:OPENAI_API_KEY]");
    expect(JSON.stringify(err.toJSON())).not.toContain(SCRIPTED_API_KEY);
    expect(model.requests()).toHaveLength(1);
  });

  it("does not retry a 400", async () => {
    const model = await scripted({ turns: [{ error: { status: 400 } }, { text: "unreachable" }] });
    const err = await failure(scriptedModelClient(model).complete({ messages: hello }));
    expect(err).toMatchObject({ kind: "bad_request", status: 400, retryable: false });
    expect(model.requests()).toHaveLength(1);
  });

  it("times out a call whose reply does not come, and aborts the request", async () => {
    const model = await scripted({ turns: [{ text: "too late", delay_ms: 30_000 }] });
    const err = await failure(scriptedModelClient(model).complete({ messages: hello, timeoutMs: 1500 }));
    expect(err).toMatchObject({ kind: "timeout", code: "timeout", retryable: false });
    expect(err.message).toContain("no complete reply within 1500 ms");
    await vi.waitFor(() => expect(model.requests()[0]?.aborted).toBe(true), WAIT);
    expect(model.requests()).toHaveLength(1);
  });

  it("stops when the caller's signal aborts", async () => {
    const model = await scripted({ turns: [{ text: "too late", delay_ms: 30_000 }] });
    const controller = new AbortController();
    const pending = scriptedModelClient(model).complete({ messages: hello, signal: controller.signal });
    await vi.waitFor(() => expect(model.requests()).toHaveLength(1), WAIT);
    controller.abort();
    const err = await failure(pending);
    expect(err).toMatchObject({ kind: "cancelled", code: "cancelled" });
    await vi.waitFor(() => expect(model.requests()[0]?.aborted).toBe(true), WAIT);
  });

  it("passes a throw from a callback through untouched, without retrying", async () => {
    const model = await scripted({ turns: [{ text: "some text here" }, { text: "again" }] });
    const boom = new Error("the sink is full");
    const err = await scriptedModelClient(model)
      .complete({
        messages: hello,
        onText: () => {
          throw boom;
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBe(boom);
    expect(model.requests()).toHaveLength(1);
  });

  it("passes a throw from onRetry through too, without another attempt", async () => {
    const model = await scripted({ turns: [{ error: { status: 503 } }, { text: "unreachable" }] });
    const boom = new Error("no retries wanted");
    const err = await scriptedModelClient(model)
      .complete({
        messages: hello,
        onRetry: () => {
          throw boom;
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBe(boom);
    expect(model.requests()).toHaveLength(1);
  });

  it("sends the conversation back with assistant tool calls and one tool message per result", async () => {
    const model = await scripted({ turns: [{ text: "done" }] });
    await scriptedModelClient(model).complete({
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: "",
          toolCalls: [
            { id: "c1", name: "echo", args: { text: "a" } },
            { id: "c2", name: "echo", args: { text: "b" } },
          ],
        },
        { role: "tool", toolCallId: "c1", toolName: "echo", content: "a" },
        { role: "tool", toolCallId: "c2", toolName: "echo", content: "boom", isError: true },
      ],
      tools: [echoTool],
    });
    const body = model.requests()[0]?.body as { messages: Record<string, unknown>[] };
    expect(body.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "echo", arguments: '{"text":"a"}' } },
          { id: "c2", type: "function", function: { name: "echo", arguments: '{"text":"b"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "a" },
      { role: "tool", tool_call_id: "c2", content: "boom" },
    ]);
  });
});
