import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LedgerEvent, PLAN_MOVE_EVENT, STEP_MOVE_EVENT } from "./events.js";
import { PlanStatus, StepStatus } from "./states.js";

describe("ledger event types", () => {
  it("are pinned (a rename changes `ratchet events`, SSE and the dashboard)", () => {
    expect(Object.values(LedgerEvent).sort()).toEqual([
      "metric.recorded",
      "plan.abandoned",
      "plan.budget_raised",
      "plan.completed",
      "plan.deviated",
      "plan.failed",
      "plan.headline",
      "plan.headline_responded",
      "plan.needs_review",
      "plan.published",
      "plan.reopened",
      "plan.skill_recorded",
      "reasons.closed",
      "reasons.filled",
      "reference.added",
      "reference.checked",
      "step.completed",
      "step.failed",
      "step.heartbeat",
      "step.in_progress",
      "step.log_appended",
      "step.needs_review",
      "step.reopened",
      "step.run_started",
      "utterance.recorded",
    ]);
  });

  it("cover every status a move can reach", () => {
    for (const s of Object.values(StepStatus)) expect(STEP_MOVE_EVENT[s]).toBeDefined();
    for (const s of Object.values(PlanStatus)) expect(PLAN_MOVE_EVENT[s]).toBeDefined();
  });

  it("are never written as string literals or templates in the ledger's code", () => {
    const dir = import.meta.dirname;
    const files = [
      ...readdirSync(dir).filter((f) => f.endsWith(".ts")),
      ...readdirSync(join(dir, "flows")).map((f) => join("flows", f)),
    ].filter((f) => !f.endsWith(".test.ts") && f !== "events.ts");
    const offenders = files.filter((f) =>
      /type:\s*(["'`])(step|plan|metric)\./.test(readFileSync(join(dir, f), "utf8")),
    );
    expect(offenders).toEqual([]);
  });
});
