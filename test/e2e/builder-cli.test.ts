/**
 * The Builder through the BUILT CLI, with the scripted model as a real HTTP server and the model
 * chosen from the environment: `ratchet build` learns a step, `ratchet run --trigger schedule`
 * then costs 0 tokens and 0 model requests, `ratchet runs show` reports tokens, `--model` wins over
 * the environment, and a run with a model-driven step but no model fails clearly.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { GOOD, workflowYaml, writesScript } from "../helpers/builder.js";
import { assertBuilt, makeWorkspace, type TestWorkspace } from "../helpers/cli.js";

const workspaces: TestWorkspace[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

async function setup(yaml: string) {
  const ws = await makeWorkspace("ratchet-e2e-builder-");
  workspaces.push(ws);
  const home = join(ws.dir, "flow");
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, "workflow.yaml"), yaml);
  return { ws, home };
}

describe("ratchet build (built CLI, scripted model)", () => {
  test("build learns the step; the scheduled run after it makes zero model requests", async () => {
    const { ws, home } = await setup(workflowYaml());
    const model = await startScriptedModel({ script: { turns: [writesScript(GOOD)] } });
    try {
      const env = {
        RATCHET_MODEL: "openai-compatible:scripted",
        OPENAI_BASE_URL: model.url,
        RATCHET_SANDBOX: "off",
      };
      const build = await ws.run(["build", "flow", "--step", "report", "--json"], { env });
      expect(build.status, build.stderr).toBe(0);
      const report = JSON.parse(build.stdout);
      expect(report).toMatchObject({ verdict: "passed", tokens: 150, model: "openai-compatible:scripted" });
      expect(readFileSync(join(home, "learnings", "report", "main.py"), "utf8")).toBe(GOOD);
      expect(model.requests()).toHaveLength(1);

      const run = await ws.run(["run", "flow", "--trigger", "schedule"], { env });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/passed: 1 step\(s\), 0 tokens/);
      expect(model.requests()).toHaveLength(1);

      const plan = await ws.run(["plan", "show", report.plan_id, "--json"]);
      expect(plan.status).toBe(0);
      expect(plan.stdout).toContain("builder");
    } finally {
      await model.close();
    }
  });

  test("runs show reports a code_exec step's tokens; --model beats RATCHET_MODEL; no model fails clearly", async () => {
    const { ws } = await setup(
      workflowYaml(
        [],
        [
          "  - id: report",
          "    description: write report.json with the region",
          "    agent_configs: { declared_execution_mode: code_exec }",
          "    validation: { files: [{ file_name: report.json, must_exist: true }] }",
        ],
      ),
    );
    const model = await startScriptedModel({
      script: { turns: [{ match: { model: "picked" }, ...writesScript(GOOD) }] },
    });
    try {
      const env = {
        RATCHET_MODEL: "openai-compatible:other",
        OPENAI_BASE_URL: model.url,
        RATCHET_SANDBOX: "off",
      };
      const run = await ws.run(["run", "flow", "--model", "openai-compatible:picked", "--json"], { env });
      expect(run.status, run.stderr).toBe(0);
      const r = JSON.parse(run.stdout);
      expect(r.steps[0]).toMatchObject({ mode: "code_exec", tokens: 150, outcome: "passed" });
      const show = await ws.run(["runs", "show", r.run_id]);
      expect(show.stdout).toMatch(/tokens=150/);

      const none = await ws.run(["run", "flow"], {
        env: { RATCHET_MODEL: undefined, OPENAI_BASE_URL: undefined, RATCHET_SANDBOX: "off" },
      });
      expect(none.status).toBe(8);
      expect(none.stderr).toMatch(/needs_model.*needs a model: no model configured: set RATCHET_MODEL/);
    } finally {
      await model.close();
    }
  });
});
