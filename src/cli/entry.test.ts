import { describe, expect, it } from "vitest";
import { plainWriteFlow } from "./entry.js";

describe("plainWriteFlow: which command lines skip building the full CLI", () => {
  it.each([
    [["step", "start", "in.json"], { op: "start-step", input: "in.json" }],
    [["step", "run", "-"], { op: "run-step", input: "-" }],
    [["plan", "review-close", "x.json"], { op: "agent-review-close", input: "x.json" }],
    [["metric", "record", "m.json"], { op: "record-metric", input: "m.json" }],
    [["--db", "/tmp/l.db", "step", "fail", "f.json"], { op: "fail-step", input: "f.json", db: "/tmp/l.db" }],
    [
      ["--db=/tmp/l.db", "plan", "publish", "p.yaml"],
      { op: "publish-plan", input: "p.yaml", db: "/tmp/l.db" },
    ],
    // Flag style and input-less commands take the fast path too (`plan sweep` takes no input).
    [["step", "start", "p-A"], { op: "start-step", args: ["p-A"] }],
    [["step", "complete", "p-A", "--summary", "s"], { op: "complete-step", args: ["p-A", "--summary", "s"] }],
    [["plan", "sweep"], { op: "sweep", args: [] }],
    [["plan", "sweep", "in.json"], { op: "sweep", input: "in.json" }],
    [["headline", "respond", "-"], { op: "headline-respond", input: "-" }],
  ])("%j is a write flow", (args, expected) => {
    expect(plainWriteFlow(args)).toMatchObject(expected);
  });

  it.each([
    [[]],
    [["--help"]],
    [["step"]],
    [["step", "start", "--help"]],
    [["step", "complete", "p-A", "-h"]],
    [["step", "apply", "ops.jsonl"]],
    [["plan", "show", "p-1"]],
    [["--db=", "step", "start", "a.json"]],
    [["--version"]],
    // `headline respond <plan> <finding> --action …` is hand-written in why-commands.ts.
    [["headline", "respond", "p-1", "active_constraint:nk_1:1", "--action", "proceed"]],
  ])("%j goes to the full CLI", (args) => {
    expect(plainWriteFlow(args)).toBeUndefined();
  });
});
