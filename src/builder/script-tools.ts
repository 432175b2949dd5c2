/**
 * The tool set of an agent that writes a script in a step's `code/` folder: the confined file
 * tools, `run_script` (the working copy through the same runner as the fast path: sandbox, time
 * limit, the run's bridge), the bridge tools, and `append_skill_note` when the step may write the
 * shared notes. `run_script` answers with the exit code, the static-review findings and the
 * output — never the validation details.
 *
 * A learned script's author (`kind: "learn_code"`) gets `get_api_spec` but not `call_tool`: the
 * script it writes makes the calls on every later run, and `run_script` runs them through the
 * bridge; a tool's live answer in the conversation would only invite copying this run's data into
 * a script that is kept. A `code_exec` agent (this run only) keeps `call_tool`.
 */
import { join } from "node:path";
import type { LoopTool } from "../model/index.js";
import type { BridgeProvider, LearnedStepResult } from "../workflow/index.js";
import { FEEDBACK_OUTPUT_HEAD_CHARS, FEEDBACK_OUTPUT_TAIL_CHARS } from "./limits.js";
import { headTailChars } from "./text.js";
import { bridgeTools, fileTools, skillNoteTool } from "./tools.js";

/** What run_script reports to the model. */
export function describeRun(r: LearnedStepResult): string {
  if (r.outcome === "review_blocked") return r.error ?? "static review blocked the script";
  if (r.output === undefined) return r.error ?? `the script did not run (${r.outcome})`;
  const output = headTailChars(r.output, FEEDBACK_OUTPUT_HEAD_CHARS, FEEDBACK_OUTPUT_TAIL_CHARS);
  return `exit code ${r.exitCode ?? "none"}\n${output || "(no output)"}`;
}

export function scriptTools(opts: {
  kind: "learn_code" | "code_exec";
  codeDir: string;
  evaluate: () => Promise<LearnedStepResult>;
  bridge: BridgeProvider;
  allowedTools?: readonly string[];
  skillNotesFile?: string;
  stepId: string;
  now: () => Date;
}): LoopTool[] {
  const tools: LoopTool[] = [
    ...fileTools(opts.codeDir, { forbidden: ["fix-diffs"] }),
    {
      def: {
        name: "run_script",
        description:
          "Run code/main.py (python3 -B main.py <dependency output folders>) with the step's environment; returns the exit code and the output.",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
      },
      async execute() {
        return describeRun(await opts.evaluate());
      },
    },
    ...bridgeTools(opts.bridge, opts.allowedTools, { callTool: opts.kind === "code_exec" }),
  ];
  if (opts.skillNotesFile) tools.push(skillNoteTool(opts.skillNotesFile, opts.stepId, opts.now));
  return tools;
}

/** `learnings/_global/SKILL.md` of a workflow home. */
export function skillNotesPath(home: string): string {
  return join(home, "learnings", "_global", "SKILL.md");
}
