// The scripted model: its wire format (pure), turn choice (pure), and the HTTP server as a client
// other than the AI SDK sees it (plain fetch), plus the CLI entry of the built package.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isRatchetError } from "../core/index.js";
import { type ScriptedModel, startScriptedModel } from "./scripted-model.js";
import { completionBody, replyUsage, streamPlan, TEXT_DELTA_CHARS } from "./scripted-model-replies.js";
import {
  parseScript,
  pickTurn,
  type RequestView,
  requestChars,
  type ScriptInput,
} from "./scripted-model-script.js";

/** Generous: a loaded machine may take seconds to start a Node process. */
const WAIT = { timeout: 30_000, interval: 20 };
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURES = join(ROOT, "test", "fixtures", "model");

const open: ScriptedModel[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

async function scripted(script: ScriptInput | string): Promise<ScriptedModel> {
  const model = await startScriptedModel({ script });
  open.push(model);
  return model;
}

function post(model: ScriptedModel, body: unknown, path = "/chat/completions"): Promise<Response> {
  return fetch(`${model.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-secret-value-000000000" },
    body: JSON.stringify(body),
  });
}

/** The JSON payloads of an SSE body, `[DONE]` kept as the string. */
function sseData(text: string): unknown[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.startsWith("data: "))
    .map((frame) => frame.slice(6))
    .map((data) => (data === "[DONE]" ? data : JSON.parse(data)));
}

const ctx = { requestNo: 4, model: "m", promptChars: 40 };
const user = (content: string): RequestView => ({ messages: [{ role: "user", content }] });

describe("scripted replies (pure)", () => {
  it("streams a role chunk, text deltas, tool calls in fragments, then finish_reason with usage", () => {
    const reply = parseScript({
      turns: [
        {
          text: "Hello there, this is a text of some length.",
          tool_calls: [{ name: "edit", arguments: { path: "src/a.ts", text: "export const a = 1;" } }],
          usage: { prompt_tokens: 7, completion_tokens: 9 },
        },
      ],
    }).turns[0]!;
    const { chunks, cutAfter } = streamPlan(reply, ctx, true);
    const deltas = chunks.map(
      (c) => (c as { choices: { delta: Record<string, unknown> }[] }).choices[0]?.delta,
    );
    expect(deltas[0]).toEqual({ role: "assistant", content: "" });
    const text = deltas.filter((d) => typeof d?.content === "string" && d.role === undefined);
    expect(text.length).toBeGreaterThan(1);
    expect(text.every((d) => String(d?.content).length <= TEXT_DELTA_CHARS)).toBe(true);
    expect(text.map((d) => d?.content).join("")).toBe(reply.text);
    const calls = deltas.flatMap((d) => (d?.tool_calls as Record<string, unknown>[] | undefined) ?? []);
    expect(calls[0]).toEqual({
      index: 0,
      id: "call_4_0",
      type: "function",
      function: { name: "edit", arguments: "" },
    });
    const fragments = calls.slice(1).map((c) => (c.function as { arguments: string }).arguments);
    expect(fragments.length).toBe(3);
    expect(JSON.parse(fragments.join(""))).toEqual({ path: "src/a.ts", text: "export const a = 1;" });
    expect(calls.slice(1).every((c) => c.index === 0 && c.id === undefined)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }],
      usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 },
    });
    expect(streamPlan(reply, ctx, false).chunks.at(-1)).not.toHaveProperty("usage");
    expect(cutAfter).toBeGreaterThan(1);
    expect(cutAfter).toBeLessThan(chunks.length - 1);
  });

  it("builds a plain chat.completion and estimates usage when the script gives none", () => {
    const reply = parseScript({ turns: [{ text: "12345678" }] }).turns[0]!;
    expect(replyUsage(reply, ctx)).toEqual({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 });
    expect(completionBody(reply, ctx)).toEqual({
      id: "chatcmpl-scripted-4",
      object: "chat.completion",
      created: 0,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "12345678" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    });
  });

  it("sizes the whole request for the estimate: every message, the assistant's tool calls, the tools", () => {
    const tools = [{ type: "function", function: { name: "run", parameters: { type: "object" } } }];
    const body = {
      messages: [
        { role: "system", content: "S".repeat(10) },
        { role: "user", content: [{ type: "text", text: "U".repeat(5) }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "write", arguments: '{"a":1}' } }],
        },
        { role: "tool", tool_call_id: "c1", content: "ok" },
      ],
      tools,
    };
    expect(requestChars(body)).toBe(
      10 + 5 + "write".length + '{"a":1}'.length + 2 + JSON.stringify(tools).length,
    );
    // Without tools, only the text counts; a body without messages is empty.
    expect(requestChars({ messages: [{ role: "user", content: "abcd" }], tools: [] })).toBe(4);
    expect(requestChars({})).toBe(0);
  });

  it("picks the first turn with uses left whose match accepts the request", () => {
    const script = parseScript({
      turns: [
        { match: { contains: "deploy" }, text: "deploying" },
        { text: "anything", repeat: 2 },
        { match: { model: "big" }, text: "big" },
        { match: { tool_result_contains: "FAILED" }, text: "fix it" },
      ],
    });
    const uses: number[] = [];
    expect(pickTurn(script, uses, user("hello"))).toBe(1);
    uses[1] = 2;
    expect(pickTurn(script, uses, user("hello"))).toBe(-1);
    expect(pickTurn(script, uses, user("please deploy"))).toBe(0);
    expect(pickTurn(script, uses, { model: "big", messages: [] })).toBe(2);
    const afterTools: RequestView = {
      messages: [
        { role: "user", content: "run tests" },
        { role: "assistant", content: "" },
        { role: "tool", content: "3 FAILED" },
        { role: "tool", content: "ok" },
      ],
    };
    expect(pickTurn(script, uses, afterTools)).toBe(3);
  });

  it("refuses a bad script, naming the field", () => {
    for (const [bad, field] of [
      [{ turns: [{ txt: "typo" }] }, "turns.0"],
      [{ turns: [{ tool_calls: [{ arguments: {} }] }] }, "turns.0.tool_calls.0.name"],
      [{ turns: [{ error: { status: 200 } }] }, "turns.0.error.status"],
      [{ turns: "nope" }, "turns"],
    ] as const) {
      try {
        parseScript(bad);
        expect.unreachable();
      } catch (err) {
        expect(isRatchetError(err, "schema_violation"), String(err)).toBe(true);
        expect((err as { details: { field: string } }).details.field).toBe(field);
      }
    }
  });
});

describe("the scripted model over HTTP", () => {
  it("streams SSE chunks ending in [DONE], usage only when asked for", async () => {
    const model = await scripted({ turns: [{ text: "hi there", repeat: 2 }] });
    const withUsage = await post(model, {
      model: "scripted",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hello" }],
    });
    expect(withUsage.headers.get("content-type")).toBe("text/event-stream");
    const frames = sseData(await withUsage.text());
    expect(frames.at(-1)).toBe("[DONE]");
    expect(frames.at(-2)).toMatchObject({ choices: [{ finish_reason: "stop" }], usage: { total_tokens: 4 } });
    const plain = sseData(
      await (
        await post(model, { model: "scripted", stream: true, messages: [{ role: "user", content: "x" }] })
      ).text(),
    );
    expect(plain.at(-2)).not.toHaveProperty("usage");
  });

  it("answers a non-streaming request with one chat.completion", async () => {
    const model = await scripted({ turns: [{ tool_calls: [{ name: "t", arguments: { a: 1 } }] }] });
    const res = await post(model, { model: "scripted", messages: [{ role: "user", content: "x" }] });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      object: "chat.completion",
      choices: [
        {
          message: {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1_0", type: "function", function: { name: "t", arguments: '{"a":1}' } }],
          },
          finish_reason: "tool_calls",
        },
      ],
    });
  });

  it("estimates prompt tokens from the whole request, tool definitions included", async () => {
    const model = await scripted({ default: { text: "ok" } });
    const messages = [{ role: "user", content: "x".repeat(40) }];
    const tools = [
      {
        type: "function",
        function: { name: "t", description: "d".repeat(200), parameters: { type: "object" } },
      },
    ];
    const bare = (await (await post(model, { messages })).json()) as { usage: { prompt_tokens: number } };
    const withTools = (await (await post(model, { messages, tools })).json()) as {
      usage: { prompt_tokens: number };
    };
    expect(bare.usage.prompt_tokens).toBe(10);
    expect(withTools.usage.prompt_tokens).toBe(Math.ceil((40 + JSON.stringify(tools).length) / 4));
  });

  it("sends the scripted error with its Retry-After, then a 500 naming the request once the script is exhausted", async () => {
    const model = await scripted({ turns: [{ error: { status: 429, retry_after: 3 } }] });
    const first = await post(model, { messages: [] });
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("3");
    const second = await post(model, { messages: [] });
    expect(second.status).toBe(500);
    expect(await second.json()).toEqual({
      error: {
        message: "scripted model: no turn left for request #2",
        type: "server_error",
        param: null,
        code: null,
      },
    });
  });

  it("says when turns are left but none matches; the default answers everything else", async () => {
    const model = await scripted({ turns: [{ match: { contains: "never" }, text: "x" }] });
    const res = await post(model, { messages: [{ role: "user", content: "hello" }] });
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      "scripted model: no turn left for request #1 (1 turn(s) left, none matches)",
    );
    model.reset({ turns: [], default: { text: "always" } });
    for (let i = 0; i < 3; i++) {
      const body = await (await post(model, { messages: [{ role: "user", content: "x" }] })).json();
      expect(body).toMatchObject({ choices: [{ message: { content: "always" } }] });
    }
    expect(model.requests().map((r) => r.turn)).toEqual(["default", "default", "default"]);
  });

  it("records every request without its credentials, over HTTP too, and forgets them on reset", async () => {
    const model = await scripted(join(FIXTURES, "chat.yaml"));
    await post(model, { model: "scripted", messages: [{ role: "user", content: "hello" }] });
    const models = await (await fetch(`${model.url}/models`)).json();
    expect(models).toMatchObject({ object: "list", data: [{ id: "scripted" }, { id: "scripted-large" }] });
    const log = model.requests();
    expect(log).toHaveLength(2);
    expect(log[0]).toMatchObject({
      n: 1,
      method: "POST",
      path: "/v1/chat/completions",
      authorized: true,
      turn: 0,
      status: 200,
      aborted: false,
      body: { model: "scripted", messages: [{ role: "user", content: "hello" }] },
    });
    expect(log[0]?.headers["content-type"]).toBe("application/json");
    expect(JSON.stringify(log)).not.toContain("sk-secret-value");
    const base = model.url.replace(/\/v1$/, "");
    expect(await (await fetch(`${base}/__requests`)).json()).toEqual(log);
    const bad = await fetch(`${base}/__reset`, {
      method: "POST",
      body: JSON.stringify({ script: "/etc/passwd" }),
    });
    expect(bad.status).toBe(400);
    expect((await fetch(`${base}/__reset`, { method: "POST" })).status).toBe(200);
    expect(model.requests()).toEqual([]);
    // The script starts over: turn 0 answers again.
    await post(model, { model: "scripted", messages: [{ role: "user", content: "hello" }] });
    expect(model.requests()[0]?.turn).toBe(0);
  });

  it("loads a JSON script file and refuses a bad one with a clear error", async () => {
    const model = await scripted(join(FIXTURES, "tool-then-finish.json"));
    const res = await post(model, { messages: [{ role: "user", content: "please count the files" }] });
    expect(await res.json()).toMatchObject({ choices: [{ message: { content: "Let me look." } }] });
    await expect(startScriptedModel({ script: join(FIXTURES, "missing.json") })).rejects.toMatchObject({
      code: "unreadable_input",
    });
    const dir = mkdtempSync(join(tmpdir(), "scripted-"));
    try {
      writeFileSync(join(dir, "broken.yaml"), "turns: [ { text: 'x' ");
      await expect(startScriptedModel({ script: join(dir, "broken.yaml") })).rejects.toMatchObject({
        code: "malformed_input",
      });
      writeFileSync(join(dir, "wrong.json"), JSON.stringify({ turns: [{ text: 1 }] }));
      await expect(startScriptedModel({ script: join(dir, "wrong.json") })).rejects.toMatchObject({
        code: "schema_violation",
        message: expect.stringContaining("wrong.json is not a valid scripted-model script"),
        details: { field: "turns.0.text" },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("answers a body that is not a chat request with a 400, and an unknown route with a 404", async () => {
    const model = await scripted({ turns: [{ text: "x" }] });
    expect((await post(model, { prompt: "old API" })).status).toBe(400);
    expect((await post(model, {}, "/completions")).status).toBe(404);
    expect(model.requests().map((r) => r.status)).toEqual([400, 404]);
  });

  it("tripwire mode answers every request with a 500 and records it", async () => {
    const model = await startScriptedModel({ tripwire: true });
    open.push(model);
    const res = await post(model, { model: "scripted", messages: [{ role: "user", content: "x" }] });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /tripwire.*no model call/,
    );
    expect((await fetch(`${model.url}/models`)).status).toBe(500);
    expect(model.requests().map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      "POST /v1/chat/completions 500",
      "GET /v1/models 500",
    ]);
  });
});

describe("scripted-model-cli (built)", () => {
  const CLI = join(ROOT, "dist", "testing", "scripted-model-cli.js");

  function start(args: string[]) {
    if (!existsSync(CLI))
      throw new Error(`${CLI} does not exist: run \`npm run build\` first (npm test does)`);
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = { stdout: "", stderr: "" };
    child.stdout?.on("data", (d: Buffer) => {
      output.stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      output.stderr += d.toString();
    });
    const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const firstLine = async (): Promise<string> => {
      await vi.waitFor(() => {
        if (child.exitCode !== null) throw new Error(`exited early: ${output.stderr}`);
        expect(output.stdout).toContain("\n");
      }, WAIT);
      return output.stdout.split("\n")[0] ?? "";
    };
    return { child, output, exit, firstLine };
  }

  it("prints its URL, serves the script, and stops on SIGTERM", async () => {
    const { child, exit, firstLine } = start(["--script", join(FIXTURES, "chat.yaml"), "--port", "0"]);
    try {
      const { url, port } = JSON.parse(await firstLine()) as { url: string; port: number };
      expect(url).toBe(`http://127.0.0.1:${port}/v1`);
      const res = await fetch(`${url}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ messages: [{ role: "user", content: "hello" }] }),
      });
      expect(await res.json()).toMatchObject({
        choices: [{ message: { content: "Hello! How can I help?" } }],
      });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exit).toBe(0);
  });

  it("exits 2 on a bad script or flag", async () => {
    const { exit, output } = start(["--script", join(FIXTURES, "missing.json")]);
    expect(await exit).toBe(2);
    expect(output.stderr).toContain("cannot read script");
    expect(output.stdout).toBe("");
    const flags = start(["--script", join(FIXTURES, "chat.yaml"), "--port", "http"]);
    expect(await flags.exit).toBe(2);
    expect(flags.output.stderr).toContain("--port must be an integer");
  });
});
