import { describe, expect, it } from "vitest";
import { Op } from "../inputs.js";
import { FLOW_BY_OP, FLOWS, OP_NAMES } from "./index.js";

describe("FLOWS: one definition per write flow", () => {
  it("lists every marker op exactly once, with a unique command", () => {
    expect([...OP_NAMES].sort()).toEqual(Object.values(Op).sort());
    expect(new Set(FLOWS.map((f) => f.command.join(" "))).size).toBe(FLOWS.length);
    for (const op of OP_NAMES) expect(FLOW_BY_OP[op].op).toBe(op);
  });

  it.each(FLOWS.map((f) => [f.op, f] as const))("%s: every input field is described", (_op, flow) => {
    const json = flow.input.json() as { properties?: Record<string, { description?: string }> };
    const undescribed = Object.entries(json.properties ?? {})
      .filter(([, p]) => !p.description)
      .map(([k]) => k);
    expect(undescribed).toEqual([]);
  });

  it.each(FLOWS.map((f) => [f.op, f] as const))("%s: its example parses with its own schema", (_op, flow) => {
    expect(() => flow.input.parse(flow.example, "")).not.toThrow();
    if (flow.positional)
      expect(Object.keys(flow.input.json().properties as object)).toContain(flow.positional);
  });
});
