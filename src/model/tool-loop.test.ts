// The tool loop against the scripted model, through the real client path.
import { afterEach, describe, expect, it } from "vitest";
import { type RecordedRequest, type ScriptedModel, startScriptedModel } from "../testing/scripted-model.js";
import { scriptedModelClient } from "../testing/scripted-model-client.js";
import type { ScriptInput } from "../testing/scripted-model-script.js";
import type { LoopTool } from "./loop-tools.js";
import { runToolLoop, type ToolLoopEvent, type ToolLoopOptions } from "./tool-loop.js";

const open: ScriptedModel[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

async function scripted(script: ScriptInput): Promise<ScriptedModel> {
  const model = await startScriptedModel({ script });
  open.push(model);
  return model;
}

const task = [{ role: "user" as const, content: "count the files in src" }];

function tool(name: string, execute: LoopTool["execute"]): LoopTool {
  return { def: { name, description: `the ${name} tool`, inputSchema: { type: "object" } }, execute };
}

const listFiles = tool("list_files", async (args) => ({
  dir: (args as { dir: string }).dir,
  files: ["main.ts", "util.ts"],
}));

function loop(model: ScriptedModel, extra: Partial<ToolLoopOptions> = {}) {
  const events: ToolLoopEvent[] = [];
  const result = runToolLoop({
    client: scriptedModelClient(model),
    system: "You count files.",
    messages: task,
    tools: [listFiles],
    onEvent: (e) => events.push(e),
    ...extra,
  });
  return { result, events };
}

type WireMessage = { role: string; tool_call_id?: string; content?: unknown; tool_calls?: { id: string }[] };

function messagesOf(req: RecordedRequest | undefined): WireMessage[] {
  return (req?.body as { messages?: WireMessage[] } | undefined)?.messages ?? [];
}

/** Every assistant tool call of request k has exactly one `role: "tool"` message in request k+1. */
function expectOneResultPerCall(requests: RecordedRequest[]): number {
  let checked = 0;
  for (let k = 0; k + 1 < requests.length; k++) {
    const next = messagesOf(requests[k + 1]);
    const assistant = next.findLast((m) => m.role === "assistant");
    for (const call of assistant?.tool_calls ?? []) {
      expect(
        next.filter((m) => m.role === "tool" && m.tool_call_id === call.id),
        call.id,
      ).toHaveLength(1);
      checked++;
    }
  }
  return checked;
}

describe("runToolLoop", () => {
  it("runs the requested tools and stops when the model calls finish", async () => {
    const model = await startScriptedModel({ script: "test/fixtures/model/tool-then-finish.json" });
    open.push(model);
    const { result, events } = loop(model);
    const r = await result;
    expect(r).toMatchObject({
      stopReason: "finished",
      summary: "src has 2 files",
      rounds: 2,
      toolCalls: 1,
      usage: { inputTokens: 280, outputTokens: 27 },
    });
    expect(r.transcript.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(r.transcript[2]).toMatchObject({
      role: "tool",
      toolName: "list_files",
      content: '{"dir":"src","files":["main.ts","util.ts"]}',
    });
    const requests = model.requests();
    expect(requests).toHaveLength(2);
    expect(requests.map((q) => q.turn)).toEqual([0, 1]);
    const body = requests[0]?.body as { tools: { function: { name: string } }[] };
    expect(body.tools.map((t) => t.function.name)).toEqual(["list_files", "finish"]);
    expect(events.map((e) => e.type)).toEqual([
      "round_start",
      "model_reply",
      "tool_result",
      "round_start",
      "model_reply",
      "tool_result",
      "stop",
    ]);
  });

  it("stops with the final text when a reply has no tool calls", async () => {
    const model = await scripted({ turns: [{ text: "There are 2 files." }] });
    const deltas: string[] = [];
    const r = await loop(model, { onText: (d) => deltas.push(d) }).result;
    expect(r).toMatchObject({
      stopReason: "final_text",
      finalText: "There are 2 files.",
      rounds: 1,
      toolCalls: 0,
    });
    expect(r.summary).toBeUndefined();
    expect(deltas.join("")).toBe("There are 2 files.");
  });

  it("stops at maxRounds", async () => {
    let n = 0;
    const model = await scripted({
      turns: [1, 2, 3, 4].map((i) => ({ tool_calls: [{ name: "list_files", arguments: { dir: `d${i}` } }] })),
    });
    const r = await loop(model, {
      limits: { maxRounds: 2 },
      tools: [tool("list_files", async () => ++n)],
    }).result;
    expect(r).toMatchObject({ stopReason: "max_rounds", rounds: 2, toolCalls: 2 });
    expect(r.stopDetail).toContain("maxRounds");
    expect(model.requests()).toHaveLength(2);
  });

  it("stops at maxToolCalls: the calls past the limit get a 'not run' result", async () => {
    const ran: string[] = [];
    const model = await scripted({
      turns: [
        {
          tool_calls: ["a", "b", "c"].map((dir) => ({ name: "list_files", arguments: { dir } })),
        },
        { text: "unreachable" },
      ],
    });
    const r = await loop(model, {
      limits: { maxToolCalls: 2 },
      tools: [tool("list_files", async (args) => ran.push((args as { dir: string }).dir))],
    }).result;
    expect(r).toMatchObject({ stopReason: "max_tool_calls", rounds: 1, toolCalls: 2 });
    expect(ran).toEqual(["a", "b"]);
    const results = r.transcript.filter((m) => m.role === "tool");
    expect(results).toHaveLength(3);
    expect(results[2]).toMatchObject({ isError: true, content: expect.stringContaining("not run") });
    expect(model.requests()).toHaveLength(1);
  });

  it("stops when the token budget is used up", async () => {
    const model = await scripted({
      turns: [1, 2, 3].map((i) => ({
        tool_calls: [{ name: "list_files", arguments: { dir: `d${i}` } }],
        usage: { prompt_tokens: 150, completion_tokens: 50 },
      })),
    });
    const r = await loop(model, { limits: { maxTokens: 300 } }).result;
    expect(r).toMatchObject({
      stopReason: "max_tokens",
      rounds: 2,
      usage: { inputTokens: 300, outputTokens: 100 },
    });
    expect(model.requests()).toHaveLength(2);
  });

  it("stops with no_progress when the same calls repeat three rounds in a row", async () => {
    const model = await scripted({
      turns: [],
      default: { tool_calls: [{ name: "list_files", arguments: { dir: "src" } }] },
    });
    const r = await loop(model).result;
    expect(r).toMatchObject({ stopReason: "no_progress", rounds: 3, toolCalls: 3 });
  });

  it("a caller's progress key that changes keeps a repeating loop going", async () => {
    const model = await scripted({
      turns: [],
      default: { tool_calls: [{ name: "list_files", arguments: { dir: "src" } }] },
    });
    const r = await loop(model, { limits: { maxRounds: 5 }, progressKey: (round) => `score ${round.round}` })
      .result;
    expect(r).toMatchObject({ stopReason: "max_rounds", rounds: 5 });
  });

  it("turns a throwing tool into an error result and goes on", async () => {
    const model = await scripted({
      turns: [
        { tool_calls: [{ name: "list_files", arguments: { dir: "missing" } }] },
        {
          match: { tool_result_contains: "no such directory" },
          tool_calls: [{ name: "finish", arguments: { summary: "the directory is missing" } }],
        },
      ],
    });
    const failing = tool("list_files", async () => {
      throw new Error("no such directory: missing");
    });
    const r = await loop(model, { tools: [failing] }).result;
    expect(r).toMatchObject({
      stopReason: "finished",
      summary: "the directory is missing",
      rounds: 2,
      toolCalls: 1,
    });
    expect(r.transcript[2]).toMatchObject({
      role: "tool",
      isError: true,
      content: "error: no such directory: missing",
    });
    const second = messagesOf(model.requests()[1]);
    expect(second.find((m) => m.role === "tool")).toMatchObject({
      content: "error: no such directory: missing",
    });
  });

  it("answers unknown tools, broken arguments and a finish without a summary with error results", async () => {
    const model = await scripted({
      turns: [
        {
          tool_calls: [
            { name: "rm_rf", arguments: {} },
            { name: "list_files", arguments: "{not json" },
            { name: "finish", arguments: { done: true } },
          ],
        },
        { text: "giving up" },
      ],
    });
    const r = await loop(model).result;
    expect(r).toMatchObject({ stopReason: "final_text", rounds: 2, toolCalls: 0 });
    const results = r.transcript.filter((m) => m.role === "tool");
    expect(results.map((m) => m.role === "tool" && m.isError)).toEqual([true, true, true]);
    expect(results[2]).toMatchObject({ content: 'error: finish needs {"summary": string}' });
  });

  it("gives every tool call exactly one result message under its id, in the next request", async () => {
    const model = await scripted({
      turns: [
        {
          text: "two at once",
          tool_calls: [
            { name: "list_files", arguments: { dir: "a" } },
            { name: "list_files", arguments: { dir: "b" } },
          ],
        },
        {
          tool_calls: [
            { name: "list_files", arguments: { dir: "c" } },
            { name: "nope", arguments: {} },
          ],
        },
        {
          tool_calls: [
            { name: "finish", arguments: { summary: "done" } },
            { name: "list_files", arguments: { dir: "after finish" } },
          ],
        },
      ],
    });
    const r = await loop(model).result;
    expect(r).toMatchObject({ stopReason: "finished", rounds: 3, toolCalls: 3 });
    expect(expectOneResultPerCall(model.requests())).toBe(4);
    const last = r.transcript.at(-1);
    expect(last).toMatchObject({ role: "tool", isError: true, content: expect.stringContaining("not run") });
    const ids = r.transcript.flatMap((m) =>
      m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : [],
    );
    for (const id of ids) {
      expect(r.transcript.filter((m) => m.role === "tool" && m.toolCallId === id)).toHaveLength(1);
    }
  });

  it("stops with timeout when the loop's time limit passes during a model call", async () => {
    const model = await scripted({ turns: [{ text: "late", delay_ms: 30_000 }] });
    const r = await loop(model, { limits: { timeoutMs: 200 } }).result;
    expect(r).toMatchObject({ stopReason: "timeout", rounds: 1 });
  });

  it("stops with cancelled when the caller aborts during a tool, and the call still gets its result", async () => {
    const controller = new AbortController();
    const model = await scripted({
      turns: [{ tool_calls: [{ name: "hang", arguments: {} }] }, { text: "unreachable" }],
    });
    const hang = tool("hang", () => {
      controller.abort();
      return new Promise(() => {});
    });
    const r = await loop(model, { tools: [hang], signal: controller.signal }).result;
    expect(r).toMatchObject({ stopReason: "cancelled", rounds: 1, toolCalls: 1 });
    expect(r.transcript.at(-1)).toMatchObject({
      role: "tool",
      isError: true,
      content: expect.stringContaining("cancelled"),
    });
    expect(model.requests()).toHaveLength(1);
  });

  it("throws a model failure that is not its own limit", async () => {
    const model = await scripted({ turns: [{ error: { status: 401 } }] });
    await expect(loop(model).result).rejects.toMatchObject({ kind: "auth" });
  });

  it("refuses a tool named finish, a duplicate tool and a bad limit", async () => {
    const model = await scripted({ turns: [] });
    await expect(loop(model, { tools: [tool("finish", async () => 1)] }).result).rejects.toMatchObject({
      code: "invalid_value",
      message: expect.stringContaining("reserved"),
    });
    await expect(loop(model, { tools: [listFiles, listFiles] }).result).rejects.toMatchObject({
      code: "invalid_value",
    });
    await expect(loop(model, { limits: { maxRounds: 0 } }).result).rejects.toMatchObject({
      code: "invalid_value",
      details: { field: "limits.maxRounds" },
    });
    expect(model.requests()).toHaveLength(0);
  });
});
