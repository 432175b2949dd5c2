import { describe, expect, it } from "vitest";
import { RatchetError } from "../core/index.js";
import type { LearnedStepResult, Workflow, WorkflowStep } from "../workflow/index.js";
import {
  asAuthoringAid,
  attemptError,
  attemptLog,
  attemptSummary,
  buildableStep,
  learningsAccess,
  nextAttemptTitle,
  notRunAttempt,
  repairFacts,
  taskFacts,
} from "./attempts.js";

const step = (id: string, extra: object = {}) =>
  ({
    id,
    description: `do ${id}`,
    context_dependencies: [],
    agent_configs: {},
    ...extra,
  }) as unknown as WorkflowStep;
const wf = (steps: WorkflowStep[], defaults: object = { declared_execution_mode: "learn_code" }) =>
  ({ id: "flow", steps, defaults, variables: { region: {} }, secrets: ["api_token"] }) as unknown as Workflow;
const limits = { repairs: 3, codeExec: 1 };

describe("builder attempts (pure)", () => {
  it("builds only a learn_code step the workflow has, naming the problem", () => {
    const w = wf([step("fetch"), step("ask", { agent_configs: { declared_execution_mode: "direct" } })]);
    expect(buildableStep(w, "fetch").id).toBe("fetch");
    const code = (id: string) => {
      try {
        buildableStep(w, id);
      } catch (e) {
        expect(e).toBeInstanceOf(RatchetError);
        return [(e as RatchetError).code, (e as RatchetError).message];
      }
      return undefined;
    };
    expect(code("ghost")).toEqual(["step_not_found", "workflow flow has no step ghost (steps: fetch, ask)"]);
    expect(code("ask")?.[0]).toBe("usage");
    expect(code("ask")?.[1]).toMatch(
      /^step ask runs in direct mode \(.*\): only learn_code steps are built$/,
    );
  });

  it("tells the agents the task, the declared names, the outputs; notes and objective by access", () => {
    const s = step("fetch", {
      context_dependencies: ["seed"],
      validation: { files: [{ file_name: "out.json" }] },
      agent_configs: { learning_objective: "learn the API" },
    });
    const w = wf([s]);
    expect(learningsAccess(w, s)).toBe("read");
    expect(learningsAccess(wf([s], { learnings_access: "none" }), s)).toBe("none");
    expect(learningsAccess(w, step("x", { agent_configs: { learnings_access: "read-write" } }))).toBe(
      "read-write",
    );
    expect(taskFacts(w, s, "read", undefined)).toEqual({
      stepId: "fetch",
      description: "do fetch",
      declared: ["VAR_region", "SECRET_api_token"],
      outputFiles: ["out.json"],
      dependencies: ["seed"],
    });
    const rw = taskFacts(w, s, "read-write", "a note");
    expect(rw.skillNotes).toBe("a note");
    expect(rw.learningObjective).toBe("learn the API");
    expect(taskFacts(w, s, "read", "x".repeat(20_000)).skillNotes?.length).toBeLessThan(9000);
  });

  it("titles the next attempt: repairs after a failing first attempt, then code_exec, which runs whatever its outcome", () => {
    expect(nextAttemptTitle(1, { kind: "fast_path", passed: true }, limits)).toBeUndefined();
    expect(nextAttemptTitle(1, { kind: "fast_path", passed: false, locked: true }, limits)).toBeUndefined();
    expect(nextAttemptTitle(1, { kind: "fast_path", passed: false }, limits)).toBe(
      "attempt 2: repair 1 of 3",
    );
    expect(nextAttemptTitle(1, { kind: "author", passed: false }, limits)).toBe("attempt 2: repair 1 of 3");
    expect(nextAttemptTitle(1, { kind: "author", passed: true }, limits)).toBeUndefined();
    expect(nextAttemptTitle(2, { kind: "repair", passed: false, round: 1 }, limits)).toBe(
      "attempt 3: repair 2 of 3",
    );
    expect(nextAttemptTitle(4, { kind: "repair", passed: false, round: 3 }, limits)).toBe(
      "attempt 5: code_exec (repairs exhausted)",
    );
    expect(
      nextAttemptTitle(4, { kind: "repair", passed: false, round: 3 }, { repairs: 3, codeExec: 0 }),
    ).toBe(undefined);
    expect(nextAttemptTitle(3, { kind: "repair", passed: true, round: 2 }, limits)).toBeUndefined();
    expect(
      nextAttemptTitle(5, { kind: "code_exec", passed: true, round: 1 }, { repairs: 3, codeExec: 2 }),
    ).toBe("attempt 6: code_exec");
    expect(nextAttemptTitle(5, { kind: "code_exec", passed: false, round: 1 }, limits)).toBeUndefined();
  });

  it("feeds a repair the blocking findings, the output (else the error) and the exit code", () => {
    const last = {
      ...notRunAttempt("boom"),
      exitCode: 3,
      output: "Traceback …",
      review: {
        findings: [
          { severity: "blocking", line: 2, rule: "R1", message: "eval", fix: "call it by name" },
          { severity: "advisory", line: 5, rule: "R9", message: "style", fix: "-" },
        ],
      },
    } as unknown as LearnedStepResult;
    expect(repairFacts(last, 2, "execution/run-1/fetch/code/main.py", 3)).toEqual({
      attempt: 2,
      maxAttempts: 3,
      scriptPath: "execution/run-1/fetch/code/main.py",
      findings: [{ line: 2, rule: "R1", message: "eval", fix: "call it by name" }],
      lastOutput: "Traceback …",
      lastExitCode: 3,
    });
    expect(repairFacts(notRunAttempt("no main.py"), 1, "main.py")).toMatchObject({
      lastOutput: "no main.py",
      lastExitCode: null,
      findings: [],
    });
    expect(repairFacts(undefined, 1, "main.py")).toMatchObject({ lastOutput: "", lastExitCode: null });
  });

  it("a code_exec pass does not make the learned script pass; summaries keep the error's first line", () => {
    expect(asAuthoringAid({ ...notRunAttempt("x"), outcome: "passed" }).outcome).toBe("script_failed");
    expect(asAuthoringAid(notRunAttempt("x")).outcome).toBe("missing_script");
    expect(attemptSummary("repair", "script_failed", "exit 3\nmore")).toBe("repair: script_failed: exit 3");
    expect(attemptSummary("author", "passed", null)).toBe("author: passed");
    expect(attemptError(true, "model down", "x")).toBeNull();
    expect(attemptError(false, "model down", "x")).toBe("model failed: model down");
    expect(attemptError(false, undefined, "x")).toBe("x");
    expect(
      attemptLog({ n: 2, kind: "repair", tokens: 7, subAgentLog: [], runLog: "ran", diff: "d.diff" }),
    ).toBe(
      "attempt 2 (repair), 7 tokens\n--- static review + run + validation ---\nran\n--- diff: d.diff ---",
    );
  });
});
