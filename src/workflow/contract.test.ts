/** The step contract: what is in it, that key order does not matter, which fields changed. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { changedContractFields, contractHash, readContract, saveContract } from "./contract.js";
import { parseWorkflowText } from "./schema.js";
import type { WorkflowStep } from "./types.js";

const step = (over: Partial<WorkflowStep> = {}): WorkflowStep => ({
  id: "s",
  description: "do it",
  context_dependencies: ["a"],
  agent_configs: {},
  validation: { files: [{ file_name: "o.json", must_exist: true }] },
  ...over,
});

describe("step contract", () => {
  it("hashes description, validation, dependencies and allowed tools; not the mode or other configs", () => {
    const base = contractHash(step());
    expect(
      contractHash(step({ agent_configs: { lock_code: true, declared_execution_mode: "learn_code" } })),
    ).toBe(base);
    expect(contractHash(step({ validation: { files: [{ must_exist: true, file_name: "o.json" }] } }))).toBe(
      base,
    );
    expect(contractHash(step({ description: "do it now" }))).not.toBe(base);
    expect(contractHash(step({ context_dependencies: [] }))).not.toBe(base);
    expect(contractHash(step({ allowed_tools: ["custom:echo"] }))).not.toBe(base);
    expect(contractHash(step({ validation: undefined }))).not.toBe(base);
  });

  it("names the fields that changed since the contract was saved; none without a saved contract", () => {
    const dir = mkdtempSync(join(tmpdir(), "ratchet-contract-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    expect(changedContractFields(dir, step())).toEqual([]);
    saveContract(dir, step());
    expect(readContract(dir)?.contract_sha256).toBe(contractHash(step()));
    expect(changedContractFields(dir, step())).toEqual([]);
    expect(changedContractFields(dir, step({ description: "x", allowed_tools: ["mcp:crm/*"] }))).toEqual([
      "description",
      "allowed_tools",
    ]);
  });

  it("the workflow schema reads allowed_tools and predefined_routes, and refuses duplicate routes", () => {
    const wf = parseWorkflowText(
      [
        "id: w",
        "steps:",
        "  - id: o",
        "    description: orchestrate",
        "    allowed_tools: [custom:echo]",
        "    predefined_routes: [{ id: research, description: look up }]",
      ].join("\n"),
      "w.yaml",
    );
    expect(wf.steps[0]).toMatchObject({
      allowed_tools: ["custom:echo"],
      predefined_routes: [{ id: "research", description: "look up" }],
    });
    expect(() =>
      parseWorkflowText(
        [
          "id: w",
          "steps:",
          "  - id: o",
          "    description: orchestrate",
          "    predefined_routes: [{ id: r, description: a }, { id: r, description: b }]",
        ].join("\n"),
        "w.yaml",
      ),
    ).toThrow(/steps\[0\]\.predefined_routes\[1\]\.id: duplicate route id r/);
  });
});
