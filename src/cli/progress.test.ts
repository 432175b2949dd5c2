/** The shared progress printers of `runner run` and `build`, and `thread watch`'s rendering. */
import { describe, expect, it } from "vitest";
import { buildProgressPrinter, liveMode, painter, short, taskProgressPrinter } from "./progress.js";
import { renderWatchEvent } from "./thread-render.js";

const collect = () => {
  const lines: string[] = [];
  return { lines, write: (l: string) => lines.push(l) };
};

describe("progress", () => {
  it("liveMode: none with --json or --quiet or on a pipe; colour unless NO_COLOR", () => {
    expect(liveMode({}, true, {})).toEqual({ live: true, colour: true });
    expect(liveMode({}, true, { NO_COLOR: "1" })).toEqual({ live: true, colour: false });
    expect(liveMode({ json: true }, true, {})).toBeUndefined();
    expect(liveMode({ quiet: true }, true, {})).toBeUndefined();
    expect(liveMode({}, false, {})).toBeUndefined();
  });

  it("short keeps one bounded line", () => {
    expect(short("a\n  b")).toBe("a b");
    expect(short("x".repeat(50), 10)).toBe(`${"x".repeat(9)}…`);
    expect(short({ a: 1 })).toBe('{"a":1}');
  });

  it("runner task events become lines; unknown events print nothing", () => {
    const c = collect();
    const p = taskProgressPrinter({ live: true, colour: false }, c.write);
    const ev = (type: string, rest: Record<string, unknown> = {}) =>
      p({ seq: 1, time: "", task_id: "t", type, ...rest });
    ev("round_started", { round: 2 });
    ev("model_reply", { text: "", tool_calls: [{ name: "read_file", args: { path: "a" } }] });
    ev("tool_result", { name: "read_file", is_error: true, content: "no such file" });
    ev("dod_run", { label: "round 2", passed: false, exit_code: 1, timed_out: false });
    ev("worktree_created", { path: "/x" });
    ev("task_finished", { status: "failed", stop_reason: "max_rounds" });
    expect(c.lines).toEqual([
      "● round 2",
      '  → read_file {"path":"a"}',
      "  ✗ read_file: no such file",
      "  ✗ DoD (round 2): failed, exit 1",
      "✗ task failed (max_rounds)",
    ]);
  });

  it("build: agent rounds and an attempt's failed check with its error, coloured on request", () => {
    const c = collect();
    const p = buildProgressPrinter({ live: true, colour: true }, c.write);
    p.agent({ type: "round_start", round: 1 });
    p.attempt({
      n: 1,
      kind: "author",
      ledger_step_id: "s",
      outcome: "failed",
      exit_code: 1,
      tokens: 10,
      diff: null,
      error: "Traceback\nValueError",
    });
    expect(c.lines[0]).toBe("  \x1b[36m●\x1b[0m round 1");
    expect(c.lines[1]).toBe(
      "\x1b[31m✗\x1b[0m attempt 1 \x1b[1mauthor\x1b[0m: check failed, exit 1, 10 tokens",
    );
    expect(c.lines[2]).toContain("Traceback ValueError");
  });

  it("thread watch: a message without its row, a bad payload and an unknown event still render", () => {
    const paint = painter(false);
    const e = (type: string, payload: string) => ({ id: 1, at: "", type, payload });
    expect(
      renderWatchEvent(e("thread.message", '{"role":"user","chars":5}'), undefined, "th", paint),
    ).toEqual(["user: (5 characters)"]);
    expect(renderWatchEvent(e("thread.state_changed", "not json"), undefined, "th", paint)).toEqual([
      "[ → ]",
    ]);
    expect(renderWatchEvent(e("something.new", "{}"), undefined, "th", paint)).toEqual(["· something.new"]);
    const tool = {
      role: "tool",
      content: "x\n".repeat(20),
      tool_calls: null,
      call_id: "c",
      tool_name: "t",
      is_error: 1,
    };
    const lines = renderWatchEvent(e("thread.message", "{}"), tool, "th", paint);
    expect(lines[0]).toBe("✗ t error");
    expect(lines.at(-1)).toContain("more line(s)");
    const bad = {
      role: "assistant",
      content: "",
      tool_calls: "{oops",
      call_id: null,
      tool_name: null,
      is_error: 0,
    };
    expect(renderWatchEvent(e("thread.message", "{}"), bad, "th", paint)).toEqual([]);
  });
});
