/**
 * Attack class: crashes at the edges — an error frame inside a 200 stream (issue 13, item 15).
 *
 * An OpenAI-compatible server that fails mid-generation answers 200 and sends
 * `data: {"error": {"message": …, "type": …}}`. The SDK hands that object over as is and the error
 * read `[object Object]`: the server's reason was lost (in the CLI, the runner's events, the
 * thread's log). Now the error names the server's message, type and code. Against the real
 * scripted-model HTTP server, through the real client (the AI SDK's OpenAI-compatible adapter).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isModelError, type ModelError } from "../../src/model/index.js";
import { parseTaskSpec, runTask } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { calcSpec, makeRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 60_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FRAME = {
  message: "CUDA out of memory (tried to allocate 13.00 GiB)",
  type: "server_error",
  code: "oom",
};

async function failingCall(turn: Record<string, unknown>): Promise<ModelError> {
  const model = await startScriptedModel({ script: { turns: [turn] } });
  cleanups.push(() => model.close());
  const texts: string[] = [];
  const call = scriptedModelClient(model, { maxAttempts: 3 }).complete({
    messages: [{ role: "user", content: "hi" }],
    onText: (t) => texts.push(t),
  });
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isModelError(err), String(err)).toBe(true);
  // the frame came in a 200 reply: exactly one request, never retried into a second
  expect(model.requests().map((r) => r.status)).toEqual([200]);
  return err as ModelError;
}

describe("escape: a model error frame inside a 200 stream", () => {
  it("after some text: the server's message, type and code, never [object Object]", async () => {
    const err = await failingCall({ text: "Let me think about this", stream_error: FRAME });
    expect(err.message).not.toContain("[object Object]");
    expect(err.message).toContain("CUDA out of memory (tried to allocate 13.00 GiB)");
    expect(err.message).toContain("type server_error");
    expect(err.message).toContain("code oom");
    expect(err.kind).toBe("incomplete_stream");
  });

  it("as the first frame, without a type or code: still the server's message", async () => {
    const err = await failingCall({ stream_error: { message: "upstream provider timed out" } });
    expect(err.message).not.toContain("[object Object]");
    expect(err.message).toContain("upstream provider timed out");
  });

  it("a runner task reports the server's message in its model_error event and response", async () => {
    const r = makeRepo("ratchet-escape-frame-");
    cleanups.push(() => r.remove());
    const model = await startScriptedModel({ script: { turns: [{ text: "working", stream_error: FRAME }] } });
    cleanups.push(() => model.close());
    const spec = parseTaskSpec(calcSpec(r, { max_rounds: 1 }));
    const result = await runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
    expect(result.stop_reason).toBe("model_error");
    const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; message?: string });
    const modelError = events.find((e) => e.type === "model_error");
    expect(modelError?.message).toContain("CUDA out of memory");
    expect(modelError?.message).not.toContain("[object Object]");
    expect(readFileSync(join(r.out, "fix-calc.response.txt"), "utf8")).toContain("CUDA out of memory");
  });
});
