/** A run's steps as timeline rows: times from the run tables, retries from the plan as children. */
import { describe, expect, it } from "vitest";
import { bars } from "../../web/src/lanes.js";
import { runTimelineSteps } from "../../web/src/run-timeline.js";

const t = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}.000Z`;
const sr = (id: string, start: number | null, end: number | null, outcome: string | null) => ({
  step_id: id,
  ledger_step_id: `p-${id}`,
  outcome,
  started_at: start === null ? null : t(start),
  finished_at: end === null ? null : t(end),
});

describe("runTimelineSteps", () => {
  it("two overlapping steps get two lanes; a later one reuses the first", () => {
    const run = { run_id: "r", status: "passed", finished_at: t(9) };
    const rows = runTimelineSteps(
      run,
      [sr("a", 1, 4, "passed"), sr("b", 2, 5, "passed"), sr("c", 6, 8, "script_failed")],
      [],
    );
    expect(rows.map((r) => [r.step_id, r.status])).toEqual([
      ["p-a", "COMPLETED"],
      ["p-b", "COMPLETED"],
      ["p-c", "FAILED"],
    ]);
    const bs = bars(rows, Date.parse(t(10)));
    expect(bs.map((b) => b.lane)).toEqual([0, 1, 0]);
  });

  it("a retry of a run step is its child; its own retry hangs under it", () => {
    const run = { run_id: "r", status: "running", finished_at: null };
    const plan = [
      {
        step_id: "p-a.1.1",
        parent_step_id: "p-a.1",
        depth: 2,
        seq: 1,
        title: "again",
        status: "PENDING",
        started_at: null,
        finished_at: null,
      },
      {
        step_id: "p-a.1",
        parent_step_id: "p-a",
        depth: 1,
        seq: 1,
        title: "retry",
        status: "IN_PROGRESS",
        started_at: t(5),
        finished_at: null,
      },
      {
        step_id: "p-other",
        parent_step_id: null,
        depth: 0,
        seq: 9,
        title: "not of the run",
        status: "PENDING",
        started_at: null,
        finished_at: null,
      },
    ];
    const rows = runTimelineSteps(run, [sr("a", 1, 4, "model_failed")], plan);
    expect(rows.map((r) => [r.step_id, r.parent_step_id])).toEqual([
      ["p-a", null],
      ["p-a.1", "p-a"],
      ["p-a.1.1", "p-a.1"],
    ]);
    const bs = bars(rows, Date.parse(t(10)));
    expect(bs.map((b) => [b.step.step_id, b.depth, b.running])).toEqual([
      ["p-a", 0, false],
      ["p-a.1", 1, true],
    ]);
  });

  it("a started step without an end runs to now in a running run, to the run's end in a closed one", () => {
    const open = runTimelineSteps({ run_id: "r", status: "running" }, [sr("a", 1, null, null)], []);
    expect(open[0]!.status).toBe("IN_PROGRESS");
    expect(open[0]!.finished_at).toBeNull();
    const closed = runTimelineSteps(
      { run_id: "r", status: "interrupted", finished_at: t(7) },
      [sr("a", 1, null, null)],
      [],
    );
    expect(closed[0]!.status).toBe("FAILED");
    expect(closed[0]!.finished_at).toBe(t(7));
    const never = runTimelineSteps(
      { run_id: "r", status: "failed", finished_at: t(7) },
      [sr("b", null, null, null)],
      [],
    );
    expect(never[0]!.status).toBe("PENDING");
    expect(never[0]!.finished_at).toBeNull();
  });

  it("a step run with no ledger step gets an id of its own", () => {
    const rows = runTimelineSteps(
      { run_id: "r", status: "passed" },
      [{ ...sr("a", 1, 2, "skipped"), ledger_step_id: null }],
      [],
    );
    expect(rows[0]!.step_id).toBe("r:a");
    expect(rows[0]!.status).toBe("SKIPPED");
  });
});
