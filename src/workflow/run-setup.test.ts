import { describe, expect, it } from "vitest";
import { Redactor } from "../core/index.js";
import { newOrchestratorContext } from "./model-step.js";
import { learnedStepInput, type RunSetup } from "./run-setup.js";
import type { Workflow, WorkflowStep } from "./types.js";

const setup: RunSetup = {
  variables: { VAR_REGION: "eu" },
  secrets: { SECRET_TOKEN: "t" },
  sandbox: { kind: "none" } as unknown as RunSetup["sandbox"],
  readPolicy: { readRoots: ["/opt/data"], secretDirs: ["/ws/.ratchet"] },
  timeoutSeconds: 42,
  home: { runs: "/ws/.ratchet/runs", scripts: "/ws/.ratchet/scripts" },
};
const workflow = { id: "flow" } as unknown as Workflow;
const step = { id: "fetch" } as unknown as WorkflowStep;
const bridge = () => Promise.reject(new Error("not used"));
const clock = { now: () => 0 };

describe("the shared set-up of a learned step (pure)", () => {
  it("combines the run's set-up with the step's own parts; signal and runner only when given", () => {
    const redactor = new Redactor();
    const input = learnedStepInput(setup, {
      workflow,
      step,
      runId: "run-1",
      dependencyDirs: ["/a"],
      bridge,
      baseEnv: { PATH: "/bin" },
      groupName: null,
      redactor,
      clock,
    });
    expect(input).toEqual({
      workflow,
      step,
      runId: "run-1",
      home: setup.home,
      dependencyDirs: ["/a"],
      variables: setup.variables,
      secrets: setup.secrets,
      bridge,
      baseEnv: { PATH: "/bin" },
      timeoutSeconds: 42,
      groupName: null,
      sandbox: setup.sandbox,
      readPolicy: setup.readPolicy,
      redactor,
      clock,
    });
    expect(input).not.toHaveProperty("signal");
    expect(input).not.toHaveProperty("runner");
    const signal = new AbortController().signal;
    const withSignal = learnedStepInput(setup, {
      ...input,
      signal,
      runner: { run: () => Promise.reject(new Error("x")) } as never,
    });
    expect(withSignal.signal).toBe(signal);
    expect(withSignal).toHaveProperty("runner");
  });
  it("starts an orchestrator's context with no tokens and no log", () => {
    const redactor = new Redactor();
    const c = newOrchestratorContext({ workflow, step, outputDir: "/out", bridge, redactor });
    expect(c).toEqual({ workflow, step, outputDir: "/out", bridge, redactor, tokens: 0, log: [] });
    expect(c).not.toHaveProperty("signal");
  });
});
