/**
 * Model-driven steps in runs (scripted model, real python3, real bridge): code_exec writes and
 * runs code for this run only, direct writes its outputs through tools, an orchestrator's saved
 * script delegates with call_sub_agent, tokens are recorded per step and per run, and a run with a
 * model-driven step but no model fails clearly.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  builderFixture,
  clientOf,
  GOOD,
  scripted,
  systemText,
  toolNames,
  writesScript,
} from "../../test/helpers/builder.js";
import { runStoreOf, runWorkflow } from "../workflow/index.js";
import { createModelStepRunner } from "./model-steps.js";

const step = (mode: string, extra: string[] = []) => [
  "  - id: report",
  "    description: write report.json with the region",
  `    agent_configs: { declared_execution_mode: ${mode} }`,
  ...extra,
  "    validation:",
  "      files:",
  "        - file_name: report.json",
  "          must_exist: true",
  "          json_checks: [{ path: $.region, value_type: string }]",
];
const yaml = (lines: string[]) =>
  ["id: flow", "variables: { region: { default: eu } }", "steps:", ...lines, ""].join("\n");

describe("model-driven steps in runs", () => {
  it("code_exec: the model writes and runs code for this run only; nothing is saved; tokens recorded", async () => {
    const f = builderFixture(yaml(step("code_exec")));
    const model = await scripted({ turns: [], default: writesScript(GOOD) });
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(run.status).toBe("passed");
    expect(run.steps[0]).toMatchObject({ mode: "code_exec", fast_path: false, tokens: 150 });
    // A code_exec agent works for this run only and keeps call_tool beside the script tools.
    const [req] = model.requests();
    expect(systemText(req?.body)).toContain("for this run only");
    expect(toolNames(req?.body)).toEqual(
      expect.arrayContaining(["write_file", "run_script", "get_api_spec", "call_tool", "finish"]),
    );
    expect(existsSync(join(f.home, "learnings", "report"))).toBe(false);
    const out = JSON.parse(
      readFileSync(join(f.ctx.workspace.dir, "runs", run.run_id, "report", "report.json"), "utf8"),
    );
    expect(out).toEqual({ region: "eu" });
    expect(runStoreOf(f.ctx.store).stepRuns(run.run_id)[0]?.tokens).toBe(150);
    // A second run asks the model again: code_exec never persists.
    await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(model.requests()).toHaveLength(2);
  });

  it("direct: the model writes the outputs with write_output (confined) and they are validated", async () => {
    const f = builderFixture(yaml(step("direct")));
    const model = await scripted({
      turns: [
        {
          tool_calls: [
            { name: "write_output", arguments: { path: "../escape.json", content: "{}" } },
            { name: "write_output", arguments: { path: "report.json", content: '{"region": "eu"}' } },
            { name: "finish", arguments: { summary: "wrote it" } },
          ],
          usage: { prompt_tokens: 40, completion_tokens: 20 },
        },
      ],
    });
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(run.status).toBe("passed");
    expect(run.steps[0]).toMatchObject({ mode: "direct", tokens: 60 });
    expect(existsSync(join(f.ctx.workspace.dir, "runs", run.run_id, "escape.json"))).toBe(false);
    expect(toolNames(model.requests()[0]?.body)).toEqual(
      expect.arrayContaining(["call_tool", "get_api_spec", "write_output", "finish"]),
    );
    // A direct step whose outputs do not validate fails with validation_failed.
    const bad = await scripted({
      turns: [],
      default: { tool_calls: [{ name: "finish", arguments: { summary: "x" } }] },
    });
    const failed = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(bad) }),
    });
    expect(failed.steps[0]?.outcome).toBe("validation_failed");
  });

  it("a model-driven step with no model configured fails with needs_model naming what to set", async () => {
    const f = builderFixture(yaml(step("code_exec")));
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ unavailable: "no model configured: set RATCHET_MODEL" }),
    });
    expect(run.status).toBe("failed");
    expect(run.steps[0]?.outcome).toBe("needs_model");
    expect(run.steps[0]?.error).toContain("set RATCHET_MODEL");
    const none = await runWorkflow(f.ctx, f.wf(), { env: f.env });
    expect(none.steps[0]?.outcome).toBe("needs_model");
  });

  it("an orchestrator's saved script delegates with call_sub_agent; route_id must be a route; sub-agent tokens count", async () => {
    const f = builderFixture(
      yaml([
        "  - id: plan",
        "    description: delegate the research todos",
        "    agent_configs: { declared_execution_mode: learn_code }",
        "    predefined_routes:",
        "      - { id: research, description: look things up }",
        "    validation:",
        "      files: [{ file_name: results.json, must_exist: true }]",
      ]),
    );
    f.save(
      "plan",
      [
        "import json",
        "import os",
        "from ratchet_tools import call_custom",
        "",
        'ok = call_custom("call_sub_agent", {"route_id": "research", "todo_id": "t1", "instructions": "find the capital"})',
        "try:",
        '    call_custom("call_sub_agent", {"route_id": "nowhere", "todo_id": "t2", "instructions": "x"})',
        '    bad = "accepted"',
        "except Exception as e:",
        "    bad = str(e)",
        'with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "results.json"), "w") as out:',
        '    json.dump({"ok": ok, "bad": bad}, out)',
        "",
      ].join("\n"),
    );
    const model = await scripted({
      turns: [
        {
          match: { contains: "Todo t1: find the capital" },
          tool_calls: [{ name: "finish", arguments: { summary: "Paris" } }],
          usage: { prompt_tokens: 70, completion_tokens: 5 },
        },
      ],
    });
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(run.status).toBe("passed");
    expect(run.steps[0]).toMatchObject({ fast_path: true, tokens: 75 });
    const results = JSON.parse(
      readFileSync(join(f.ctx.workspace.dir, "runs", run.run_id, "plan", "results.json"), "utf8"),
    );
    expect(results.ok).toMatchObject({ route_id: "research", todo_id: "t1", result: "Paris" });
    expect(results.bad).toContain("is not one of step plan's routes: research");
    expect(model.requests()).toHaveLength(1);
    // The script stays read-only at run time.
    expect(readFileSync(join(f.home, "learnings", "plan", "main.py"), "utf8")).toContain("call_sub_agent");
  });
});
