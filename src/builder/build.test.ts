/**
 * The Builder with the scripted model, real python3, real git diffs, the real ledger: generation,
 * repair, exhaustion, lock_code, learnings_access, contract change, no save of a script that fails
 * static review, and a scheduled run after a build that makes zero model requests.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  BROKEN,
  builderFixture,
  clientOf,
  GOOD,
  scripted,
  systemText,
  toolNames,
  userText,
  workflowYaml,
  writesScript,
} from "../../test/helpers/builder.js";
import { ErrorCode, RatchetError } from "../core/index.js";
import { RunTrigger, runStoreOf, runWorkflow } from "../workflow/index.js";
import { buildStep } from "./build.js";
import { createModelStepRunner } from "./model-steps.js";

/** The run history of the saved script: in the workspace (layout.ts `historyDir`), not in learnings/. */
const meta = (f: { ctx: { workspace: { dir: string } }; wf: () => { id: string } }) =>
  JSON.parse(
    readFileSync(join(f.ctx.workspace.dir, "scripts", f.wf().id, "report", "script_metadata.json"), "utf8"),
  );

describe("ratchet build (scripted model)", () => {
  it("generates a passing script from nothing, saves it with a real diff, and later runs cost 0 tokens and 0 requests", async () => {
    const f = builderFixture();
    const model = await scripted({
      turns: [
        {
          match: { contains: "There is no script yet" },
          tool_calls: [
            { name: "write_file", arguments: { path: "main.py", content: GOOD } },
            { name: "run_script", arguments: {} },
          ],
          usage: { prompt_tokens: 300, completion_tokens: 120 },
        },
        {
          match: { tool_result_contains: "exit code 0" },
          tool_calls: [{ name: "finish", arguments: { summary: "done" } }],
          usage: { prompt_tokens: 400, completion_tokens: 10 },
        },
      ],
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.verdict).toBe("passed");
    expect(r.attempts.map((a) => [a.kind, a.outcome])).toEqual([["author", "passed"]]);
    expect(r.tokens).toBe(830);
    expect(model.requests()).toHaveLength(2);
    // The author's request: what the script may and may not do, and the tools a learned script's
    // author needs — no call_tool (the script makes the calls; run_script runs them).
    const first = model.requests()[0]?.body;
    const system = systemText(first);
    for (const rule of [
      "code/main.py",
      "every later run, without a model",
      "STEP_OUTPUT_DIR",
      "VAR_* / SECRET_* environment variables (never a hard-coded fallback)",
      "sys.argv",
      "MCP_API_URL",
      "get_api_spec",
      "No fabricated data",
      "Never write into learnings/ or knowledgebase/",
      "no eval, exec or compile",
      "must not change its own files",
    ])
      expect(system).toContain(rule);
    expect(toolNames(first).sort()).toEqual(
      ["edit_file", "finish", "get_api_spec", "list_files", "read_file", "run_script", "write_file"].sort(),
    );
    // Saved back with a real unified diff, version 1, the contract beside it.
    const saved = join(f.home, "learnings", "report");
    expect(readFileSync(join(saved, "main.py"), "utf8")).toBe(GOOD);
    const diffs = readdirSync(join(saved, "diffs"));
    expect(diffs).toHaveLength(1);
    const diff = readFileSync(join(saved, "diffs", diffs[0] as string), "utf8");
    expect(diff).toMatch(/^--- \/dev\/null\n\+\+\+ main\.py \(v1\)\n@@ -0,0 \+1,7 @@/);
    expect(diff).toContain('+    json.dump({"region": os.environ["VAR_REGION"]}, f)');
    expect(existsSync(join(saved, "contract.json"))).toBe(true);
    expect(meta(f)).toMatchObject({
      script_version: 1,
      relearn_count: 0,
      total_runs: 1,
      successful_runs: 1,
    });
    // The ledger: a builder_run plan whose one attempt completed, with its tokens.
    const plan = f.ctx.store.getPlan(r.plan_id);
    expect(plan?.status).toBe("COMPLETED");
    expect(f.ctx.store.getStep(r.attempts[0]?.ledger_step_id as string)?.status).toBe("COMPLETED");

    // A scheduled run afterwards: fast path, zero tokens, zero model requests.
    const before = model.requests().length;
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      trigger: RunTrigger.Schedule,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(run.status).toBe("passed");
    expect(run.steps[0]).toMatchObject({ fast_path: true, tokens: 0 });
    expect(model.requests().length).toBe(before);
    expect(runStoreOf(f.ctx.store).stepRuns(run.run_id)[0]?.tokens).toBe(0);

    // Building again: the saved script passes, so the fast path only (no request, nothing saved).
    const again = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(again.attempts.map((a) => a.kind)).toEqual(["fast_path"]);
    expect(again.verdict).toBe("passed");
    expect(again.saved).toBeNull();
    expect(model.requests().length).toBe(before);
    expect(meta(f).script_version).toBe(1);
  });

  it("repairs a broken saved script with a fresh agent fed the spec's feedback, and bumps the version", async () => {
    const f = builderFixture();
    f.save("report", BROKEN);
    const model = await scripted({ turns: [writesScript(GOOD, { contains: "Repair attempt 1 of 3" })] });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.attempts.map((a) => [a.kind, a.outcome])).toEqual([
      ["fast_path", "execution_and_validation_failed"],
      ["repair", "passed"],
    ]);
    expect(r.verdict).toBe("passed");
    const [req] = model.requests();
    const text = userText(req?.body);
    // Exactly the feedback the spec lists…
    expect(text).toContain("Repair attempt 1 of 3");
    expect(text).toContain("write report.json with the region");
    expect(text).toMatch(/on disk at \/\S+\/\.ratchet\/runs\/run-[0-9a-f-]+\/report\/code\/main\.py/);
    expect(text).toContain("exit code 3");
    expect(text).toContain("cannot reach the data");
    expect(text).toContain("Declared variables: VAR_REGION");
    // The no-fabrication rule reaches the repair agent once, in the system prompt of the request.
    expect(systemText(req?.body).split("No fabricated data")).toHaveLength(2);
    expect(text).not.toContain("No fabricated data");
    expect(toolNames(req?.body)).not.toContain("call_tool");
    // …and not the script inlined, nor the validation details.
    expect(text).not.toContain("sys.exit(3)");
    expect(text).not.toContain("value_type");
    expect(text).not.toContain("min_length");
    // Fix diffs between iterations, a real diff in learnings, version and relearn count bumped.
    expect(r.attempts[1]?.diff).toMatch(/code\/fix-diffs\/attempt-2\.diff$/);
    const fix = readFileSync(join(f.home, r.attempts[1]?.diff as string), "utf8");
    expect(fix).toContain("-sys.exit(3)");
    expect(fix).toContain("+import json");
    expect(readFileSync(join(f.home, "learnings", "report", "main.py"), "utf8")).toBe(GOOD);
    expect(meta(f)).toMatchObject({ script_version: 2, relearn_count: 1 });
    // Ledger: attempt A failed, its repair A.1 completed, the plan completed (recovered).
    const [a1, a2] = r.attempts;
    expect(a2?.ledger_step_id).toBe(`${a1?.ledger_step_id}.1`);
    expect(f.ctx.store.getPlan(r.plan_id)?.status).toBe("COMPLETED");
  });

  it("exhausts 3 repairs, then goes on in code_exec; the plan fails", async () => {
    const f = builderFixture();
    const model = await scripted({ turns: [], default: writesScript(BROKEN) });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.attempts.map((a) => a.kind)).toEqual(["author", "repair", "repair", "repair", "code_exec"]);
    expect(r.verdict).toBe("failed");
    const texts = model.requests().map((q) => userText(q.body));
    expect(texts.filter((t) => t.includes("Repair attempt"))).toHaveLength(3);
    expect(texts[3]).toContain("Repair attempt 3 of 3");
    // The learned attempts' agents have no call_tool; the code_exec fallback has a run's tool set.
    const requests = model.requests();
    expect(requests.slice(0, 4).map((q) => toolNames(q.body).includes("call_tool"))).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(toolNames(requests[4]?.body)).toContain("call_tool");
    expect(systemText(requests[4]?.body)).toContain("for this run only");
    expect(f.ctx.store.getPlan(r.plan_id)?.status).toBe("FAILED");
    const ids = r.attempts.map((a) => /-(A[.\d]*)$/.exec(a.ledger_step_id)?.[1]);
    expect(ids).toEqual(["A", "A.1", "A.1.1", "A.1.1.1", "A.1.1.2"]);
  });

  it("an author that calls call_tool anyway gets an unknown-tool error, and the build goes on", async () => {
    const f = builderFixture();
    const model = await scripted({
      turns: [
        {
          match: { contains: "There is no script yet" },
          tool_calls: [{ name: "call_tool", arguments: { name: "custom:anything", arguments: {} } }],
        },
        {
          match: { tool_result_contains: "call_tool" },
          tool_calls: [
            { name: "write_file", arguments: { path: "main.py", content: GOOD } },
            { name: "finish", arguments: { summary: "wrote main.py" } },
          ],
        },
      ],
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(model.requests()).toHaveLength(2);
    expect(model.requests()[1]?.turn).toBe(1);
    const second = model.requests()[1]?.body as { messages?: { role: string; content: unknown }[] };
    const results = (second?.messages ?? [])
      .filter((m) => m.role === "tool")
      .map((m) => JSON.stringify(m.content));
    expect(results.join("\n")).toMatch(/unavailable tool|unknown tool/i);
    expect(r.verdict).toBe("passed");
    expect(readFileSync(join(f.home, "learnings", "report", "main.py"), "utf8")).toBe(GOOD);
  });

  it("never saves a script that fails static review (or has a syntax error)", async () => {
    const f = builderFixture();
    const fallback = GOOD.replace('os.environ["VAR_REGION"]', 'os.environ.get("VAR_REGION", "eu")');
    const model = await scripted({ turns: [], default: writesScript(fallback) });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.verdict).toBe("failed");
    expect(r.saved).toBeNull();
    expect(r.not_saved_reason).toMatch(/fails static review/);
    expect(existsSync(join(f.home, "learnings", "report", "main.py"))).toBe(false);
    // The repair feedback named the finding.
    expect(userText(model.requests()[1]?.body)).toMatch(/Static review found \d+ blocking issue/);

    const g = builderFixture();
    const syntax = await scripted({ turns: [], default: writesScript("def broken(:\n") });
    const s = await buildStep(g.ctx, g.wf(), "report", { env: g.env, model: clientOf(syntax) });
    expect(s.not_saved_reason).toMatch(/syntax error/);
    expect(existsSync(join(g.home, "learnings", "report", "main.py"))).toBe(false);
  });

  it("lock_code: the saved script runs, no repair agent, nothing saved, metadata recorded", async () => {
    const f = builderFixture(
      workflowYaml(
        [],
        [
          "  - id: report",
          "    description: write report.json with the region",
          "    agent_configs: { lock_code: true }",
        ],
      ),
    );
    f.save("report", BROKEN);
    const model = await scripted({ tripwire: true });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.attempts.map((a) => a.kind)).toEqual(["fast_path"]);
    expect(r.attempts[0]?.outcome).not.toBe("passed");
    expect(r.verdict).toBe("failed");
    expect(r.not_saved_reason).toMatch(/lock_code/);
    expect(model.requests()).toHaveLength(0);
    expect(readFileSync(join(f.home, "learnings", "report", "main.py"), "utf8")).toBe(BROKEN);
    expect(meta(f)).toMatchObject({
      total_runs: 1,
      failed_runs: 1,
      lock_code_stats: { locked_runs: 1 },
    });
  });

  it("learnings_access: read shows the shared notes, read-write may add to them, none hides them", async () => {
    const steps = (access: string, objective = "") => [
      "  - id: report",
      "    description: write report.json with the region",
      `    agent_configs: { learnings_access: ${access}${objective ? `, learning_objective: ${objective}` : ""} }`,
    ];
    const notes = (home: string) => {
      mkdirSync(join(home, "learnings", "_global"), { recursive: true });
      writeFileSync(join(home, "learnings", "_global", "SKILL.md"), "- NOTE-XYZ: the API pages by 50\n");
    };
    const write = writesScript(GOOD);

    const read = builderFixture(workflowYaml([], steps("read")));
    notes(read.home);
    const m1 = await scripted({ turns: [], default: write });
    await buildStep(read.ctx, read.wf(), "report", { env: read.env, model: clientOf(m1) });
    expect(userText(m1.requests()[0]?.body)).toContain("NOTE-XYZ");
    expect(toolNames(m1.requests()[0]?.body)).not.toContain("append_skill_note");

    const none = builderFixture(workflowYaml([], steps("none")));
    notes(none.home);
    const m2 = await scripted({ turns: [], default: write });
    await buildStep(none.ctx, none.wf(), "report", { env: none.env, model: clientOf(m2) });
    expect(userText(m2.requests()[0]?.body)).not.toContain("NOTE-XYZ");

    const rw = builderFixture(workflowYaml([], steps("read-write", "learn the API paging")));
    notes(rw.home);
    const m3 = await scripted({
      turns: [
        {
          tool_calls: [
            { name: "append_skill_note", arguments: { note: "NEW-LESSON: region codes are two letters" } },
            { name: "write_file", arguments: { path: "main.py", content: GOOD } },
            { name: "finish", arguments: { summary: "ok" } },
          ],
        },
      ],
    });
    await buildStep(rw.ctx, rw.wf(), "report", { env: rw.env, model: clientOf(m3) });
    expect(toolNames(m3.requests()[0]?.body)).toContain("append_skill_note");
    const after = readFileSync(join(rw.home, "learnings", "_global", "SKILL.md"), "utf8");
    expect(after).toContain("NOTE-XYZ");
    expect(after).toMatch(/\(report\): NEW-LESSON: region codes are two letters/);
  });

  it("a run of a step whose contract changed fails with 'contract changed: rebuild with `ratchet build`'", async () => {
    const f = builderFixture();
    const model = await scripted({ turns: [], default: writesScript(GOOD) });
    const built = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(built.verdict).toBe("passed");
    f.writeWorkflow(
      workflowYaml().replace(
        "description: write report.json with the region",
        "description: write report.json with the region in upper case",
      ),
    );
    const n = model.requests().length;
    const run = await runWorkflow(f.ctx, f.wf(), {
      env: f.env,
      modelSteps: createModelStepRunner({ client: clientOf(model) }),
    });
    expect(run.status).toBe("failed");
    expect(run.steps[0]?.outcome).toBe("contract_changed");
    expect(run.steps[0]?.error).toContain("contract changed: rebuild with `ratchet build`");
    expect(run.steps[0]?.error).toContain("description");
    expect(model.requests().length).toBe(n); // runs never repair
    // Rebuilding checks the saved script against the new contract (it still passes: no model call)
    // and records the new contract; the next run passes.
    const rebuilt = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(rebuilt.verdict).toBe("passed");
    expect(
      rebuilt.attempts.map((a) => a.kind),
      JSON.stringify(rebuilt.attempts),
    ).toEqual(["fast_path"]);
    expect(rebuilt.saved).toMatchObject({ changed: false, script_version: 1 });
    expect(model.requests().length).toBe(n);
    const again = await runWorkflow(f.ctx, f.wf(), { env: f.env });
    expect(again.status).toBe("passed");
    // A contract the script no longer meets (a new required field) sends the Builder to repair.
    f.writeWorkflow(
      workflowYaml().replace(
        "min_length: 2 }",
        "min_length: 2 }, { path: $.week, must_exist: true, value_type: string }",
      ),
    );
    const broken = await runWorkflow(f.ctx, f.wf(), { env: f.env });
    expect(broken.steps[0]?.outcome).toBe("contract_changed");
    const repaired = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(repaired.attempts[0]).toMatchObject({ kind: "fast_path", outcome: "validation_failed" });
    expect(repaired.attempts[1]?.kind).toBe("repair");
    expect(model.requests().length).toBeGreaterThan(n);
  });

  it("needs a model only when an agent must write: no model configured fails clearly and closes the attempt", async () => {
    const f = builderFixture();
    const fail = () => {
      throw new RatchetError(ErrorCode.InvalidValue, "no model configured: set RATCHET_MODEL", {
        field: "RATCHET_MODEL",
      });
    };
    await expect(buildStep(f.ctx, f.wf(), "report", { env: f.env, model: fail })).rejects.toMatchObject({
      code: "invalid_value",
    });
    const plans = f.ctx.store.listPlans({ limit: 5 });
    expect(plans[0]?.status).toBe("FAILED");
    // A passing saved script needs no model at all.
    f.save("report", GOOD);
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: fail });
    expect(r.verdict).toBe("passed");
  });

  it("Ctrl-C cancels a build: the agent stops, nothing is saved, no attempt is left open", async () => {
    const f = builderFixture();
    const model = await scripted({ turns: [], default: { ...writesScript(GOOD), delay_ms: 5000 } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const r = await buildStep(f.ctx, f.wf(), "report", {
      env: f.env,
      model: clientOf(model),
      signal: controller.signal,
    });
    expect(r.verdict).toBe("failed");
    expect(r.saved).toBeNull();
    expect(r.not_saved_reason).toMatch(/cancelled/);
    expect(model.requests()).toHaveLength(1);
    expect(f.ctx.store.getPlan(r.plan_id)?.status).toBe("FAILED");
  });

  it("builds an orchestrator: its script is tried with real sub-agents, whose tokens count toward the attempt", async () => {
    const f = builderFixture(
      workflowYaml(
        [],
        [
          "  - id: triage",
          "    description: delegate the todo to the research route and write results.json",
          "    predefined_routes: [{ id: research, description: look things up }]",
          "    validation: { files: [{ file_name: results.json, must_exist: true }] }",
        ],
      ),
    );
    const script = [
      "import json",
      "import os",
      "from ratchet_tools import call_custom",
      "",
      'r = call_custom("call_sub_agent", {"route_id": "research", "todo_id": "t1", "instructions": "find the capital"})',
      'with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "results.json"), "w") as out:',
      "    json.dump(r, out)",
      "",
    ].join("\n");
    const model = await scripted({
      turns: [
        {
          match: { contains: "Todo t1" },
          tool_calls: [{ name: "finish", arguments: { summary: "Paris" } }],
          usage: { prompt_tokens: 30, completion_tokens: 3 },
        },
        writesScript(script),
      ],
    });
    const r = await buildStep(f.ctx, f.wf(), "triage", { env: f.env, model: clientOf(model) });
    expect(r.verdict).toBe("passed");
    expect(r.attempts[0]).toMatchObject({ kind: "author", tokens: 150 + 33 });
    const saved = JSON.parse(
      readFileSync(join(f.ctx.workspace.dir, "runs", r.run_id, "triage", "results.json"), "utf8"),
    );
    expect(saved).toMatchObject({ route_id: "research", result: "Paris" });
  });

  it("refuses an unknown step and a step that is not learn_code, before anything is recorded", async () => {
    const f = builderFixture(
      workflowYaml([
        "  - id: explore",
        "    description: adaptive",
        "    agent_configs: { declared_execution_mode: code_exec }",
      ]),
    );
    await expect(buildStep(f.ctx, f.wf(), "nope", { env: f.env })).rejects.toMatchObject({
      code: "step_not_found",
    });
    await expect(buildStep(f.ctx, f.wf(), "explore", { env: f.env })).rejects.toMatchObject({
      code: "usage",
      message: expect.stringContaining("only learn_code steps are built"),
    });
    expect(f.ctx.store.listPlans({ limit: 5 })).toHaveLength(0);
  });

  it("each repair is a fresh agent: a second repair starts a new conversation and passes within 3", async () => {
    const f = builderFixture();
    f.save("report", BROKEN);
    const stillBroken = BROKEN.replace("sys.exit(3)", "sys.exit(4)");
    const model = await scripted({
      turns: [
        writesScript(stillBroken, { contains: "Repair attempt 1 of 3" }),
        writesScript(GOOD, { contains: "Repair attempt 2 of 3" }),
      ],
    });
    const r = await buildStep(f.ctx, f.wf(), "report", { env: f.env, model: clientOf(model) });
    expect(r.attempts.map((a) => a.kind)).toEqual(["fast_path", "repair", "repair"]);
    expect(r.verdict).toBe("passed");
    const second = model.requests()[1]?.body as { messages: { role: string }[] };
    // A fresh conversation: no earlier assistant turn or tool result, one user message.
    expect(second.messages.filter((m) => m.role === "user")).toHaveLength(1);
    expect(second.messages.some((m) => m.role === "assistant" || m.role === "tool")).toBe(false);
    expect(userText(second)).toContain("exit code 4");
    const fix = readFileSync(join(f.home, r.attempts[2]?.diff as string), "utf8");
    expect(fix).toContain("-sys.exit(4)");
    expect(r.attempts.map((a) => /-(A[.\d]*)$/.exec(a.ledger_step_id)?.[1])).toEqual(["A", "A.1", "A.1.1"]);
    expect(f.ctx.store.getPlan(r.plan_id)?.status).toBe("COMPLETED");
    expect(meta(f)).toMatchObject({ script_version: 2, relearn_count: 1 });
  });
});
