/**
 * Model-driven steps in runs, and the orchestrators' sub-agents. A run hands these out through
 * the `ModelStepRunner` seam of `workflow/`:
 *
 * - `code_exec`: one agent writes and runs `code/main.py` for this run only (same tools and
 *   confinement as the Builder); the outputs are validated; nothing is saved.
 * - `direct`: one agent calls tools through the run's bridge and writes the outputs with
 *   `write_output` (confined to the step's output folder); the outputs are validated.
 * - `call_sub_agent` (`{route_id, todo_id, instructions}`): a bounded sub-agent for one of the
 *   orchestrator step's `predefined_routes`; its tokens count toward the step.
 */
import { mkdirSync, rmSync } from "node:fs";
import type { BuiltinToolSpec } from "../bridge/index.js";
import { systemClock } from "../core/index.js";
import type { ModelClient } from "../model/index.js";
import {
  type LearnedStepResult,
  type ModelStepInput,
  type ModelStepResult,
  type ModelStepRunner,
  notRun,
  type OrchestratorContext,
  runLearnedStep,
  StepOutcome,
  stepCodeDir,
  stepOutputDir,
  validateOutputs,
} from "../workflow/index.js";
import { runAgent } from "./agent.js";
import {
  AGENT_MAX_ROUNDS,
  AGENT_MAX_TOKENS,
  AGENT_MAX_TOOL_CALLS,
  AGENT_TIMEOUT_MS,
  SUB_AGENT_MAX_ROUNDS,
  SUB_AGENT_TIMEOUT_MS,
} from "./limits.js";
import { builderSystemPrompt, directTask, initialTask, subAgentTask, type TaskFacts } from "./prompt.js";
import { scriptTools } from "./script-tools.js";
import { bridgeTools, fileTools } from "./tools.js";

const limits = {
  maxRounds: AGENT_MAX_ROUNDS,
  maxToolCalls: AGENT_MAX_TOOL_CALLS,
  maxTokens: AGENT_MAX_TOKENS,
  timeoutMs: AGENT_TIMEOUT_MS,
};

function facts(input: ModelStepInput): TaskFacts {
  const wf = input.workflow;
  return {
    stepId: input.step.id,
    description: input.step.description,
    declared: [...Object.keys(wf.variables).map((n) => `VAR_${n}`), ...wf.secrets.map((n) => `SECRET_${n}`)],
    outputFiles: (input.step.validation?.files ?? []).map((f) => f.file_name),
    dependencies: input.step.context_dependencies,
  };
}

async function codeExecStep(client: ModelClient, input: ModelStepInput): Promise<ModelStepResult> {
  const codeDir = stepCodeDir(input.home, input.runId, input.step.id);
  rmSync(stepOutputDir(input.home, input.runId, input.step.id), { recursive: true, force: true });
  mkdirSync(codeDir, { recursive: true });
  const evaluate = (): Promise<LearnedStepResult> => runLearnedStep({ ...input, workingCopy: true });
  const clock = input.clock ?? systemClock;
  const a = await runAgent({
    client,
    system: builderSystemPrompt("code_exec"),
    message: initialTask(facts(input), false),
    tools: scriptTools({
      kind: "code_exec",
      codeDir,
      evaluate,
      bridge: input.bridge,
      ...(input.step.allowed_tools ? { allowedTools: input.step.allowed_tools } : {}),
      stepId: input.step.id,
      now: () => new Date(clock.now()),
    }),
    limits,
    ...(input.signal ? { signal: input.signal } : {}),
  });
  const tokens = a.tokens;
  const agentLog = ["--- agent ---", ...a.log].join("\n");
  if (a.error) return { ...notRun(StepOutcome.ModelFailed, `model failed: ${a.error}`, agentLog), tokens };
  // The final verdict is a fresh run of what the agent left, validated like any step.
  const run = await evaluate();
  return { ...run, fastPath: false, log: `${agentLog}\n--- run + validation ---\n${run.log}`, tokens };
}

async function directStep(client: ModelClient, input: ModelStepInput): Promise<ModelStepResult> {
  const outputDir = stepOutputDir(input.home, input.runId, input.step.id);
  rmSync(outputDir, { recursive: true, force: true });
  mkdirSync(outputDir, { recursive: true });
  const started = performance.now();
  const a = await runAgent({
    client,
    system:
      "You perform one workflow step by calling tools. Write each output file with write_output, then call finish.",
    message: directTask(facts(input)),
    tools: [
      ...bridgeTools(input.bridge, input.step.allowed_tools),
      ...fileTools(outputDir, { writeName: "write_output", forbidden: ["code"] }),
    ],
    limits,
    ...(input.signal ? { signal: input.signal } : {}),
  });
  const tokens = a.tokens;
  const agentLog = ["--- agent ---", ...a.log].join("\n");
  if (a.error) return { ...notRun(StepOutcome.ModelFailed, `model failed: ${a.error}`, agentLog), tokens };
  const validation = validateOutputs(outputDir, input.step.validation);
  const issues = validation.issues.map(
    (i) => `${[i.file, i.path].filter(Boolean).join(" ")} ${i.check}: ${i.message}`,
  );
  return {
    outcome: validation.ok ? StepOutcome.Passed : StepOutcome.ValidationFailed,
    fastPath: false,
    exitCode: null,
    durationMs: performance.now() - started,
    error: validation.ok
      ? null
      : `the outputs do not validate (agent stopped: ${a.stopReason}):\n${issues.join("\n")}`,
    log: `${agentLog}\nvalidation: ${validation.ok ? "ok" : `${issues.length} issue(s)\n${issues.join("\n")}`}`,
    protection: "none",
    failureReason: null,
    metadataRecorded: false,
    validation,
    tokens,
  };
}

/** The `call_sub_agent` tool for whichever orchestrator step `current()` names. */
function subAgentTool(client: ModelClient, current: () => OrchestratorContext | undefined): BuiltinToolSpec {
  return {
    name: "call_sub_agent",
    description:
      "Delegate one todo to the sub-agent of a predefined route: {route_id, todo_id, instructions}; returns its result.",
    input_schema: {
      type: "object",
      properties: {
        route_id: { type: "string" },
        todo_id: { type: "string" },
        instructions: { type: "string" },
      },
      required: ["route_id", "todo_id", "instructions"],
      additionalProperties: false,
    },
    timeout_ms: SUB_AGENT_TIMEOUT_MS + 10_000,
    handler: async (args, { signal }) => {
      const o = current();
      if (!o) throw new Error("call_sub_agent is only available while an orchestrator step runs");
      const routes = o.step.predefined_routes ?? [];
      const route = routes.find((r) => r.id === args["route_id"]);
      if (!route)
        throw new Error(
          `route_id ${JSON.stringify(args["route_id"])} is not one of step ${o.step.id}'s routes: ${routes.map((r) => r.id).join(", ")}`,
        );
      const todoId = String(args["todo_id"]);
      const a = await runAgent({
        client,
        system:
          "You are a sub-agent: do the one todo you are given with the tools, then call finish with the result.",
        message: subAgentTask(route, todoId, String(args["instructions"])),
        tools: bridgeTools(o.bridge, o.step.allowed_tools),
        limits: { maxRounds: SUB_AGENT_MAX_ROUNDS, timeoutMs: SUB_AGENT_TIMEOUT_MS },
        signal: o.signal ? AbortSignal.any([o.signal, signal]) : signal,
      });
      o.tokens += a.tokens;
      o.log.push(
        `sub-agent ${route.id}/${todoId}: ${a.stopReason}, ${a.tokens} tokens`,
        ...a.log.map((l) => `  ${l}`),
      );
      if (a.error) throw new Error(`sub-agent ${route.id} failed: ${a.error}`);
      return {
        route_id: route.id,
        todo_id: todoId,
        result: a.summary ?? a.finalText,
        stop_reason: a.stopReason,
      };
    },
  };
}

/**
 * The run's model-driven steps. `client` is called once, when a step first needs the model; when
 * it throws (no model configured) `unavailable` should be given instead so the run fails those
 * steps with `needs_model` before spending anything.
 */
export function createModelStepRunner(opts: {
  client?: () => ModelClient;
  unavailable?: string;
}): ModelStepRunner {
  let client: ModelClient | undefined;
  const get = (): ModelClient => {
    if (!opts.client) throw new Error(opts.unavailable ?? "no model configured");
    client ??= opts.client();
    return client;
  };
  return {
    get model() {
      return client?.model ?? "(not yet resolved)";
    },
    ...(opts.unavailable !== undefined ? { unavailable: opts.unavailable } : {}),
    async runStep(input) {
      let c: ModelClient;
      try {
        c = get();
      } catch (e) {
        return { ...notRun(StepOutcome.NeedsModel, (e as Error).message), tokens: 0 };
      }
      return input.mode === "direct" ? directStep(c, input) : codeExecStep(c, input);
    },
    subAgentTool(current) {
      const lazy: BuiltinToolSpec = {
        ...subAgentTool({ model: "lazy", complete: (req) => get().complete(req) }, current),
      };
      return lazy;
    },
  };
}
