/** The dashboard's parallel-branch layout: siblings whose run times overlap share a row. */
import { describe, expect, it } from "vitest";
import { childrenByParent, parallelRows, type Timed } from "../../web/src/lanes.js";

const step = (
  id: string,
  seq: number,
  start: string | null,
  end: string | null,
  parent: string | null = null,
): Timed => ({
  step_id: id,
  parent_step_id: parent,
  seq,
  started_at: start && `2026-01-01T00:00:${start}Z`,
  finished_at: end && `2026-01-01T00:00:${end}Z`,
});

const ids = (rows: Timed[][]) => rows.map((r) => r.map((s) => s.step_id));

describe("parallelRows", () => {
  it("puts overlapping siblings side by side and keeps sequential ones apart", () => {
    const rows = parallelRows([
      step("A", 1, "00", "05"),
      step("B", 2, "02", "06"),
      step("C", 3, "07", "08"),
      step("D", 4, null, null),
    ]);
    expect(ids(rows)).toEqual([["A", "B"], ["C"], ["D"]]);
  });

  it("chains overlaps across the row's span; a still-running step runs until now", () => {
    const now = Date.parse("2026-01-01T00:00:30Z");
    const rows = parallelRows(
      [step("A", 1, "00", "10"), step("B", 2, "09", "20"), step("C", 3, "15", null)],
      now,
    );
    expect(ids(rows)).toEqual([["A", "B", "C"]]);
    expect(ids(parallelRows([step("A", 1, "00", "01"), step("B", 2, "01", "02")], now))).toEqual([
      ["A"],
      ["B"],
    ]);
  });

  it("groups children by parent, unknown parents at the top", () => {
    const m = childrenByParent([
      step("A", 1, null, null),
      step("A.1", 1, null, null, "A"),
      step("X.1", 1, null, null, "X"),
    ]);
    expect(m.get(null)?.map((s) => s.step_id)).toEqual(["A", "X.1"]);
    expect(m.get("A")?.map((s) => s.step_id)).toEqual(["A.1"]);
  });
});
