import { describe, expect, it } from "vitest";
import { FLOW_BY_OP } from "../ledger/index.js";
import { didYouMean, flowHelp, parseFlowArgs } from "./flow-args.js";

describe("flag-style write-flow arguments (from the flow's schema)", () => {
  it("a single .json/.yaml/.yml file, a path or - is the input; an id is the positional field", () => {
    const start = FLOW_BY_OP["start-step"];
    expect(parseFlowArgs(start, ["in.json"])).toEqual({ source: "in.json" });
    expect(parseFlowArgs(start, ["plan.yml"])).toEqual({ source: "plan.yml" });
    expect(parseFlowArgs(start, ["-"])).toEqual({ source: "-" });
    expect(parseFlowArgs(start, ["./in.txt"])).toEqual({ source: "./in.txt" });
    expect(parseFlowArgs(start, ["p-20260101000000-A.1"])).toEqual({
      raw: { step_id: "p-20260101000000-A.1" },
    });
    expect(parseFlowArgs(start, [])).toEqual({ empty: true });
  });

  it("types values by the schema: numbers, booleans, JSON lists (a bare string is a one-item list)", () => {
    expect(
      parseFlowArgs(FLOW_BY_OP["start-step"], ["p-A", "--lease-seconds", "600", "--type=ANALYSIS"]),
    ).toEqual({
      raw: { step_id: "p-A", lease_seconds: 600, type: "ANALYSIS" },
    });
    expect(
      parseFlowArgs(FLOW_BY_OP["run-step"], [
        "p-A",
        "--type",
        "COMMAND",
        "--command",
        "true",
        "--allow-nonzero",
      ]),
    ).toEqual({ raw: { step_id: "p-A", type: "COMMAND", command: "true", allow_nonzero: true } });
    expect(
      parseFlowArgs(FLOW_BY_OP.deviate, ["p-A", "--justification", "j", "--sub-steps", "retry"]),
    ).toEqual({
      raw: { parent_step_id: "p-A", justification: "j", sub_steps: ["retry"] },
    });
    expect(parseFlowArgs(FLOW_BY_OP.deviate, ["p-A", "--sub-steps", '["a", {"title": "b"}]'])).toEqual({
      raw: { parent_step_id: "p-A", sub_steps: ["a", { title: "b" }] },
    });
  });

  it("refuses an unknown flag with a suggestion, a bad number, a missing value, a second positional", () => {
    const complete = FLOW_BY_OP["complete-step"];
    expect(() => parseFlowArgs(complete, ["p-A", "--sumary", "s"])).toThrow(/did you mean --summary\?/);
    expect(() => parseFlowArgs(complete, ["p-A", "--log-contxt-file", "x"])).toThrow(
      /did you mean --log-context-file\?/,
    );
    expect(() => parseFlowArgs(FLOW_BY_OP["start-step"], ["p-A", "--lease-seconds", "ten"])).toThrow(
      /expected a number/,
    );
    expect(() => parseFlowArgs(complete, ["p-A", "--summary"])).toThrow(/needs a value/);
    expect(() => parseFlowArgs(complete, ["p-A", "p-B"])).toThrow(/unexpected argument/);
    expect(didYouMean("zzzzzz", ["summary", "reason"])).toBeUndefined();
  });

  it("--help shows the fields, the flags, an example and the refusals", () => {
    const help = flowHelp(FLOW_BY_OP["fail-step"]);
    expect(help).toContain("reason");
    expect(help).toContain("--reason-file");
    expect(help).toContain("Example:");
    expect(help).toContain("exit 4 (illegal_transition)");
  });
});
