import { describe, expect, it } from "vitest";
import { FLOWS } from "../ledger/index.js";
import { idleMsOf } from "./main.js";
import { DEFAULT_IDLE_MS, isServedCommand, readsStdin, SERVED_COMMANDS } from "./protocol.js";

describe("daemon protocol", () => {
  it("serves every write flow of the CLI's fast path but step run (pinned against FLOWS)", () => {
    const fromFlows = FLOWS.filter((f) => !f.ownCommand && f.op !== "run-step").map((f) =>
      f.command.join(" "),
    );
    expect([...SERVED_COMMANDS].sort()).toEqual(fromFlows.sort());
  });

  it.each([
    [["step", "start", "-"], true],
    [["step", "complete", "x-A", "--summary", "done"], true],
    [["plan", "publish", "plan.yaml"], true],
    [["headline", "respond", "in.json"], true],
    [["headline", "respond", "p", "f", "--action", "x"], false],
    [["step", "run", "-"], false],
    [["step", "start", "-", "--db", "x.db"], false],
    [["step", "start", "--db=x.db", "-"], false],
    [["step", "start", "--help"], false],
    [["step", "start", "-h"], false],
    [["plan", "show", "x"], false],
    [["step", "apply", "-"], false],
    [["--db", "x.db", "step", "start", "-"], false],
    [["step"], false],
  ])("isServedCommand(%j) is %s", (args, served) => {
    expect(isServedCommand(args)).toBe(served);
  });

  it("knows when a command reads stdin", () => {
    expect(readsStdin(["step", "start", "-"])).toBe(true);
    expect(readsStdin(["step", "complete", "x", "--summary-file", "-"])).toBe(true);
    expect(readsStdin(["step", "start", "x-A"])).toBe(false);
  });

  it("reads the idle time from its variable, refusing junk", () => {
    expect(idleMsOf(undefined)).toBe(DEFAULT_IDLE_MS);
    expect(idleMsOf("1500")).toBe(1500);
    for (const bad of ["", "0", "-5", "1.5", "ten", "1e400"]) expect(idleMsOf(bad)).toBe(DEFAULT_IDLE_MS);
  });
});
