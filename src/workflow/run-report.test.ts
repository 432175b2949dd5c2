import { describe, expect, it } from "vitest";
import type { ModelStepRunner } from "./model-step.js";
import {
  needsSubAgents,
  probeLanguages,
  runEnding,
  sealProblemText,
  selectRun,
  whyNotRun,
  withLogSection,
} from "./run-report.js";
import type { StepReport } from "./runs.js";
import { ExecutionMode, type Workflow, type WorkflowStep } from "./types.js";

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

  const wfStep = (id: string, deps: string[], agent_configs: object = {}, routes?: object[]) =>
    ({
      id,
      description: id,
      context_dependencies: deps,
      agent_configs,
      ...(routes ? { predefined_routes: routes } : {}),
    }) as unknown as WorkflowStep;
  const wf = {
    id: "flow",
    defaults: { declared_execution_mode: "learn_code" },
    steps: [
      wfStep("report", ["fetch"]),
      wfStep("fetch", []),
      wfStep("ask", [], { declared_execution_mode: "direct" }),
      wfStep("route", ["fetch"], {}, [{ id: "r" }]),
    ],
  } as unknown as Workflow;
  const model = (unavailable?: string) => ({ ...(unavailable ? { unavailable } : {}) }) as ModelStepRunner;

  it("selects the steps in dependency order with their modes; --only keeps that order", () => {
    const all = selectRun(wf);
    expect(all.selected).toEqual(["fetch", "report", "ask", "route"]);
    expect([...all.modes]).toEqual([
      ["fetch", "learn_code"],
      ["report", "learn_code"],
      ["ask", "direct"],
      ["route", "learn_code"],
    ]);
    expect(all.byId.get("ask")?.id).toBe("ask");
    expect(selectRun(wf, ["report", "ask"]).selected).toEqual(["report", "ask"]);
    expect(() => selectRun(wf, ["ghost"])).toThrow(/--only: no step ghost/);
  });
  it("probes the languages of the learned steps' saved scripts only, each once", () => {
    const seen: string[] = [];
    const langs = probeLanguages(selectRun(wf), (id) => {
      seen.push(id);
      return id === "fetch" ? "javascript" : id === "route" ? undefined : "python";
    });
    expect(seen).toEqual(["fetch", "report", "route"]);
    expect(langs).toEqual(["javascript", "python"]);
  });
  it("serves call_sub_agent only with a usable model and a selected learned orchestrator", () => {
    expect(needsSubAgents(selectRun(wf), model())).toBe(true);
    expect(needsSubAgents(selectRun(wf), undefined)).toBe(false);
    expect(needsSubAgents(selectRun(wf), model("set RATCHET_MODEL"))).toBe(false);
    expect(needsSubAgents(selectRun(wf, ["fetch", "ask"]), model())).toBe(false);
  });
  it("appends a log section only when it has lines; names the changed dependency", () => {
    expect(withLogSection("out", "tool bridge", [])).toBe("out");
    expect(withLogSection("out", "tool bridge", ["a", "b"])).toBe("out\n--- tool bridge ---\na\nb");
    expect(sealProblemText("fetch", "out.json changed")).toBe(
      "harness failure: the outputs of fetch changed after validation (out.json changed); this step did not run",
    );
  });
});
