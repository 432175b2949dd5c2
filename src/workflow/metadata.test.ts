import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ERROR_SNIPPET_MAX_CHARS, RECENT_RUNS_KEPT } from "./limits.js";
import {
  applyRun,
  NO_GROUP_KEY,
  noteSavedScript,
  readMetadata,
  recordScriptRun,
  SCRIPT_METADATA_FILE,
  type ScriptRun,
  sha256Hex,
} from "./metadata.js";
import type { ScriptMetadata } from "./types.js";

const root = mkdtempSync(join(tmpdir(), "ratchet-metadata-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SCRIPT = Buffer.from("print('hi')\n");
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function run(i: number, over: Partial<ScriptRun> = {}): ScriptRun {
  return {
    stepId: "fetch",
    scriptBytes: SCRIPT,
    success: true,
    exitCode: 0,
    durationMs: 100,
    groupName: null,
    runFolder: `execution/run-2026010112000${i % 10}-abcdef/fetch`,
    failureReason: null,
    errorSummary: null,
    locked: false,
    now: new Date(T0 + i * 1000),
    ...over,
  };
}

const fail = (i: number, over: Partial<ScriptRun> = {}) =>
  run(i, {
    success: false,
    exitCode: 1,
    failureReason: "execution_error",
    errorSummary: `boom ${i}`,
    ...over,
  });

function fold(runs: ScriptRun[], start?: ScriptMetadata): ScriptMetadata {
  let m = start;
  for (const r of runs) m = applyRun(m, r);
  return m!;
}

describe("applyRun", () => {
  it("starts a record on the first run", () => {
    const m = applyRun(undefined, run(0));
    expect(m).toEqual({
      step_id: "fetch",
      script_version: 1,
      script_sha256: sha256Hex(SCRIPT),
      created_at: "2026-01-01T12:00:00.000Z",
      last_run_at: "2026-01-01T12:00:00.000Z",
      relearn_count: 0,
      total_runs: 1,
      successful_runs: 1,
      failed_runs: 0,
      recent_runs: [
        {
          timestamp: "2026-01-01T12:00:00.000Z",
          success: true,
          exit_code: 0,
          duration_ms: 100,
          group_name: null,
          run_folder: "execution/run-20260101120000-abcdef/fetch",
          failure_reason: null,
          error_summary: null,
        },
      ],
      group_stats: { [NO_GROUP_KEY]: { runs: 1, successes: 1, failures: 0 } },
      duration_stats: { min_ms: 100, max_ms: 100, avg_ms: 100, last_ms: 100 },
      last_failure: null,
      current_streak: 1,
      lock_code_stats: { locked_runs: 0, consecutive_locked_failures: 0, needs_review: false },
    });
  });

  it("does not modify the previous record", () => {
    const a = applyRun(undefined, run(0));
    const copy = structuredClone(a);
    applyRun(a, fail(1));
    expect(a).toEqual(copy);
  });

  it("counts runs, keeps the last 10 and tracks groups and durations", () => {
    const runs = Array.from({ length: 12 }, (_, i) =>
      i % 3 === 2
        ? fail(i, { groupName: "eu", durationMs: 300 })
        : run(i, { groupName: i % 2 ? "eu" : null, durationMs: 100 + i }),
    );
    const m = fold(runs);
    expect(m.total_runs).toBe(12);
    expect(m.successful_runs).toBe(8);
    expect(m.failed_runs).toBe(4);
    expect(m.recent_runs).toHaveLength(RECENT_RUNS_KEPT);
    expect(m.recent_runs[0]?.timestamp).toBe(new Date(T0 + 2000).toISOString());
    expect(m.recent_runs.at(-1)?.timestamp).toBe(new Date(T0 + 11000).toISOString());
    expect(m.group_stats).toEqual({
      [NO_GROUP_KEY]: { runs: 4, successes: 4, failures: 0 },
      eu: { runs: 8, successes: 4, failures: 4 },
    });
    const durations = runs.map((r) => r.durationMs);
    expect(m.duration_stats.min_ms).toBe(Math.min(...durations));
    expect(m.duration_stats.max_ms).toBe(300);
    expect(m.duration_stats.last_ms).toBe(300);
    expect(m.duration_stats.avg_ms).toBeCloseTo(durations.reduce((a, b) => a + b, 0) / durations.length, 1);
    expect(m.created_at).toBe(new Date(T0).toISOString());
    expect(m.last_run_at).toBe(new Date(T0 + 11000).toISOString());
  });

  it("current_streak counts consecutive successes up and failures down", () => {
    const streaks: number[] = [];
    let m: ScriptMetadata | undefined;
    for (const r of [run(0), run(1), fail(2), fail(3), fail(4), run(5)]) {
      m = applyRun(m, r);
      streaks.push(m.current_streak);
    }
    expect(streaks).toEqual([1, 2, -1, -2, -3, 1]);
  });

  it("records the failure: error_summary in full, error_snippet capped", () => {
    const long = `Traceback (most recent call last):\n${"x".repeat(5000)}\nValueError: the real cause`;
    const m = applyRun(
      undefined,
      fail(0, { errorSummary: long, failureReason: "validation_error", exitCode: 0 }),
    );
    expect(m.recent_runs[0]?.error_summary).toBe(long);
    expect(m.recent_runs[0]?.failure_reason).toBe("validation_error");
    expect(m.last_failure?.failure_reason).toBe("validation_error");
    expect(m.last_failure?.exit_code).toBe(0);
    const snip = m.last_failure?.error_snippet ?? "";
    expect(snip.length).toBeLessThanOrEqual(ERROR_SNIPPET_MAX_CHARS);
    expect(snip.startsWith("Traceback")).toBe(true);
    expect(snip.endsWith("ValueError: the real cause")).toBe(true);
    expect(snip).toContain("chars omitted");
    // A later success keeps the last failure for reference.
    expect(applyRun(m, run(1)).last_failure).toEqual(m.last_failure);
  });

  it("a success stores no failure reason", () => {
    const m = applyRun(undefined, run(0, { failureReason: "execution_error" }));
    expect(m.recent_runs[0]?.failure_reason).toBeNull();
  });

  it("needs_review after 3 consecutive failures while locked, reset by a success", () => {
    const locked = { locked: true };
    let m = fold([fail(0, locked), fail(1, locked)]);
    expect(m.lock_code_stats).toEqual({
      locked_runs: 2,
      consecutive_locked_failures: 2,
      needs_review: false,
    });
    m = applyRun(m, fail(2, locked));
    expect(m.lock_code_stats).toEqual({ locked_runs: 3, consecutive_locked_failures: 3, needs_review: true });
    m = applyRun(m, fail(3, locked));
    expect(m.lock_code_stats.needs_review).toBe(true);
    m = applyRun(m, run(4, locked));
    expect(m.lock_code_stats).toEqual({
      locked_runs: 5,
      consecutive_locked_failures: 0,
      needs_review: false,
    });
    // Failures while unlocked do not count.
    m = fold([fail(5), fail(6), fail(7)], m);
    expect(m.lock_code_stats).toEqual({
      locked_runs: 5,
      consecutive_locked_failures: 0,
      needs_review: false,
    });
  });

  it("runs never change script_version, relearn_count or script_sha256", () => {
    const m = fold([run(0), run(1, { scriptBytes: Buffer.from("changed") })]);
    expect(m.script_version).toBe(1);
    expect(m.relearn_count).toBe(0);
    expect(m.script_sha256).toBe(sha256Hex(SCRIPT));
  });
});

describe("recordScriptRun / readMetadata / noteSavedScript", () => {
  let n = 0;
  const dir = () => join(root, `learnings-${++n}`, "fetch");

  it("creates the folder and the file on the first run, then appends", () => {
    const d = dir();
    expect(readMetadata(d)).toBeUndefined();
    const first = recordScriptRun(d, fail(0));
    expect(first.script_version).toBe(1);
    expect(readMetadata(d)).toEqual(first);
    const second = recordScriptRun(d, run(1));
    expect(second.total_runs).toBe(2);
    expect(JSON.parse(readFileSync(join(d, SCRIPT_METADATA_FILE), "utf8"))).toEqual(second);
    // No temp file is left behind.
    expect(readdirSync(d)).toEqual([SCRIPT_METADATA_FILE]);
  });

  it("sets a corrupt file aside and starts again", () => {
    const d = dir();
    recordScriptRun(d, run(0));
    writeFileSync(join(d, SCRIPT_METADATA_FILE), "{not json");
    expect(() => readMetadata(d)).toThrow(/invalid JSON/);
    const m = recordScriptRun(d, run(1));
    expect(m.total_runs).toBe(1);
    const files = readdirSync(d).sort();
    expect(files).toHaveLength(2);
    expect(files.some((f) => f.startsWith("script_metadata.corrupt-"))).toBe(true);
  });

  it("fills fields missing from an older file", () => {
    const d = dir();
    recordScriptRun(d, run(0));
    writeFileSync(
      join(d, SCRIPT_METADATA_FILE),
      JSON.stringify({ step_id: "fetch", script_version: 4, script_sha256: "abc", total_runs: 7 }),
    );
    const m = recordScriptRun(d, run(1));
    expect(m.script_version).toBe(4);
    expect(m.total_runs).toBe(8);
    expect(m.recent_runs).toHaveLength(1);
    expect(m.lock_code_stats.needs_review).toBe(false);
  });

  it("noteSavedScript bumps script_version and relearn_count only when the bytes change", () => {
    const d = dir();
    const created = noteSavedScript(d, SCRIPT, new Date(T0));
    expect(created).toMatchObject({ step_id: "fetch", script_version: 1, relearn_count: 0, total_runs: 0 });
    expect(created.script_sha256).toBe(sha256Hex(SCRIPT));
    expect(noteSavedScript(d, SCRIPT, new Date(T0 + 1))).toEqual(created);
    recordScriptRun(d, run(1));
    const bumped = noteSavedScript(d, Buffer.from("print('v2')\n"), new Date(T0 + 2));
    expect(bumped).toMatchObject({ script_version: 2, relearn_count: 1, total_runs: 1 });
    expect(bumped.script_sha256).toBe(sha256Hex(Buffer.from("print('v2')\n")));
    expect(readMetadata(d)).toEqual(bumped);
  });

  it("noteSavedScript on an existing history keeps it", () => {
    const d = dir();
    recordScriptRun(d, run(0));
    recordScriptRun(d, fail(1));
    const m = noteSavedScript(d, Buffer.from("new"), new Date(T0 + 5000));
    expect(m.total_runs).toBe(2);
    expect(m.script_version).toBe(2);
    expect(existsSync(join(d, SCRIPT_METADATA_FILE))).toBe(true);
  });
});
