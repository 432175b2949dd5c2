import { describe, expect, it } from "vitest";
import { runEnding, whyNotRun } from "./run-report.js";
import type { StepReport } from "./runs.js";
import { ExecutionMode, type WorkflowStep } from "./types.js";

const step = {
  id: "fetch",
  description: "d",
  context_dependencies: [],
  agent_configs: {},
} as unknown as WorkflowStep;
const report = (step_id: string, outcome: string) => ({ step_id, outcome }) as StepReport;

describe("run report (pure)", () => {
  it("ends interrupted when cancelled, passed when all passed, else failed naming the steps", () => {
    expect(runEnding([report("a", "passed")], false)).toEqual({ status: "passed", error: null });
    expect(runEnding([report("a", "passed")], true)).toEqual({
      status: "interrupted",
      error: "the run was cancelled",
    });
    expect(runEnding([report("a", "passed"), report("b", "script_failed")], false)).toEqual({
      status: "failed",
      error: "1 of 2 steps did not pass: b (script_failed)",
    });
  });
  it("says why a step does not run, in order: cancelled, blocked, broken seal, no model", () => {
    const g = { step, mode: ExecutionMode.LearnCode, cancelled: false };
    expect(whyNotRun(g)).toBeUndefined();
    expect(whyNotRun({ ...g, cancelled: true, blocked: "x" })?.outcome).toBe("skipped");
    expect(whyNotRun({ ...g, blocked: "dependency a did not pass" })?.error).toBe(
      "dependency a did not pass",
    );
    expect(whyNotRun({ ...g, sealProblem: "changed" })?.outcome).toBe("harness_failed");
    expect(whyNotRun({ ...g, mode: ExecutionMode.Direct })?.outcome).toBe("needs_model");
  });
});
