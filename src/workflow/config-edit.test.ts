import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { editStepMode, modeFields, writeStepMode } from "./config-edit.js";
import { resolveMode } from "./modes.js";
import { loadWorkflow } from "./schema.js";

const YAML = `# The order pipeline (comments survive edits)
id: orders
steps:
  - id: fetch # pulls the orders
    description: Fetch the orders
    agent_configs:
      use_code_execution_mode: true
      declared_execution_mode: code_exec   # still exploring
  - id: report
    description: Build the report
    context_dependencies: [fetch]
`;

const dir = mkdtempSync(join(tmpdir(), "ratchet-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("modeFields", () => {
  it("forces code execution on for learn_code/code_exec and off for direct", () => {
    expect(modeFields({ mode: "learn_code", reason: "r" })).toEqual({
      declared_execution_mode: "learn_code",
      use_code_execution_mode: true,
      declared_execution_mode_reason: "r",
    });
    expect(modeFields({ mode: "direct", reason: "r" }).use_code_execution_mode).toBe(false);
  });
});

describe("editStepMode", () => {
  it("edits YAML in place, keeping comments and the other steps as they were", () => {
    const next = editStepMode("w.yaml", YAML, "fetch", { mode: "learn_code", reason: "stable for 12 runs" });
    expect(next).toContain("# The order pipeline (comments survive edits)");
    expect(next).toContain("- id: fetch # pulls the orders");
    expect(next).toContain("declared_execution_mode: learn_code # still exploring");
    expect(next).toContain("declared_execution_mode_reason: stable for 12 runs");
    expect(next).toContain("context_dependencies: [ fetch ]");
    expect(next.split("\n").length).toBe(YAML.split("\n").length + 1);
  });

  it("creates agent_configs on a step that has none", () => {
    const next = editStepMode("w.yml", YAML, "report", { mode: "direct", reason: "needs judgement" });
    const path = join(dir, "direct.yaml");
    writeFileSync(path, next);
    const wf = loadWorkflow(path);
    const report = wf.steps.find((s) => s.id === "report");
    expect(report?.agent_configs).toEqual({
      declared_execution_mode: "direct",
      use_code_execution_mode: false,
      declared_execution_mode_reason: "needs judgement",
    });
  });

  it("rewrites JSON with a 2-space indent", () => {
    const json = JSON.stringify({ id: "j", steps: [{ id: "a", description: "A" }] });
    const next = editStepMode("w.json", json, "a", { mode: "code_exec", reason: "adaptive" });
    expect(next).toBe(
      `${JSON.stringify(
        {
          id: "j",
          steps: [
            {
              id: "a",
              description: "A",
              agent_configs: {
                declared_execution_mode: "code_exec",
                use_code_execution_mode: true,
                declared_execution_mode_reason: "adaptive",
              },
            },
          ],
        },
        null,
        2,
      )}\n`,
    );
  });

  it("refuses an unknown step", () => {
    expect(() => editStepMode("w.yaml", YAML, "nope", { mode: "direct", reason: "r" })).toThrow(
      /no step nope/,
    );
  });
});

describe("writeStepMode", () => {
  it("writes the file atomically and returns the reloaded workflow", () => {
    const path = join(dir, "workflow.yaml");
    writeFileSync(path, YAML);
    const wf = loadWorkflow(path);
    const next = writeStepMode(wf, "fetch", { mode: "learn_code", reason: "promoted" });
    expect(resolveMode(next.steps[0] as never, next.defaults).mode).toBe("learn_code");
    expect(readFileSync(path, "utf8")).toContain("declared_execution_mode: learn_code");
    expect(loadWorkflow(path).steps[0]?.agent_configs.declared_execution_mode_reason).toBe("promoted");
  });

  it("writes nothing when the result would not be a valid workflow", () => {
    const path = join(dir, "invalid.yaml");
    writeFileSync(path, YAML);
    const wf = loadWorkflow(path);
    expect(() => writeStepMode(wf, "fetch", { mode: "learn_code", reason: "x".repeat(70_000) })).toThrow(
      /declared_execution_mode_reason/,
    );
    expect(readFileSync(path, "utf8")).toBe(YAML);
  });
});
