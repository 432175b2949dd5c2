/**
 * What the Builder's agents are told. Pure: no I/O. The repair feedback holds exactly what the
 * spec lists — the task, a pointer to `main.py` on disk (never its text), the static-review
 * findings with the declared variables, the last output and exit code (head and tail), and the
 * attempt counter — and deliberately not the validation details, so that an agent cannot shape
 * made-up outputs to fit the schema.
 */
import { FEEDBACK_OUTPUT_HEAD_CHARS, FEEDBACK_OUTPUT_TAIL_CHARS } from "./limits.js";
import { headTailChars } from "./text.js";

/** A static-review finding as the feedback shows it. */
export interface FeedbackFinding {
  line: number;
  rule: string;
  message: string;
  fix: string;
}

export interface TaskFacts {
  stepId: string;
  description: string;
  /** `VAR_*` and `SECRET_*` names the script may read from the environment. */
  declared: readonly string[];
  /** Output files the step's validation names (names only, never the checks). */
  outputFiles: readonly string[];
  /** Argv of the script: the dependency output folders, in order. */
  dependencies: readonly string[];
  /** Shared skill notes the step may read (`learnings_access` read or read-write). */
  skillNotes?: string;
  /** Whether the agent may add to the skill notes (`read-write` with a learning objective). */
  learningObjective?: string;
}

/** The rule every scripted agent gets. */
export const NO_FABRICATION_RULE =
  "No fabricated data: every value the script writes must come from a tool call through the bridge, an API response, or an input file. Never invent, hard-code or guess output values to make a check pass; when the data cannot be obtained, let the script fail with a clear error on stderr.";

/**
 * The system prompt of a Builder agent (learn_code) or a code_exec agent: the same rules for the
 * script, only the first sentence differs. A repair's message does not repeat what is here.
 */
export function builderSystemPrompt(kind: "learn_code" | "code_exec"): string {
  return [
    kind === "learn_code"
      ? "You write code/main.py: it does one workflow step on every later run, without a model."
      : "You write and run Python code in code/ to perform one workflow step for this run only.",
    "Your file tools work inside the step's code/ folder only. run_script runs main.py there (python3 -B main.py <dependency output folders>) and returns its exit code and output.",
    "The script must write its outputs under the folder in the STEP_OUTPUT_DIR environment variable, read variables and secrets from VAR_* / SECRET_* environment variables (never a hard-coded fallback), take dependency output folders from sys.argv, and print diagnostics to stdout/stderr.",
    "Tools of the workspace are reached over HTTP at MCP_API_URL with the bearer token MCP_API_TOKEN: POST /tools/mcp/{server}/{tool} or /tools/custom/{tool} with the arguments as the JSON body. The helper ratchet_tools.py in code/ wraps this (from ratchet_tools import call_mcp, call_custom). Call get_api_spec before writing code for a tool.",
    NO_FABRICATION_RULE,
    "Never write into learnings/ or knowledgebase/, never use absolute paths of this run. When the script runs correctly, call finish with a short summary.",
    "Write plain code: no eval, exec or compile, no imports or attributes by computed names (import what you use by name), and the script must not change its own files in code/ while it runs; static review refuses all of these.",
  ].join("\n\n");
}

function taskLines(t: TaskFacts): string[] {
  const lines = [`Step ${t.stepId}: ${t.description}`];
  if (t.outputFiles.length > 0)
    lines.push(`Output files (under STEP_OUTPUT_DIR): ${t.outputFiles.join(", ")}`);
  lines.push(
    t.dependencies.length > 0
      ? `Arguments: the output folders of ${t.dependencies.join(", ")}, in that order.`
      : "Arguments: none.",
  );
  lines.push(`Declared variables: ${t.declared.length > 0 ? t.declared.join(", ") : "none"}.`);
  if (t.skillNotes) lines.push(`Shared skill notes (read-only unless told otherwise):\n${t.skillNotes}`);
  if (t.learningObjective)
    lines.push(
      `Learning objective: ${t.learningObjective}. When you learn something reusable, record it with append_skill_note.`,
    );
  return lines;
}

/** The first message of the first agent (no script, or a saved script to start from). */
export function initialTask(t: TaskFacts, hasScript: boolean): string {
  return [
    ...taskLines(t),
    hasScript
      ? "code/main.py holds the saved script, which does not pass. Read it, fix it, run it with run_script."
      : "There is no script yet: write code/main.py, run it with run_script, and fix it until it works.",
  ].join("\n\n");
}

export interface RepairFacts {
  /** 1-based repair iteration. */
  attempt: number;
  maxAttempts: number;
  /** Where main.py is, relative to the agent's code/ folder (always `main.py`), and its run folder. */
  scriptPath: string;
  findings: readonly FeedbackFinding[];
  lastOutput: string;
  lastExitCode: number | null;
}

/**
 * The message of a fresh repair agent: the spec's feedback and nothing else. The no-fabrication
 * rule of the feedback is the system prompt's ({@link builderSystemPrompt}), sent with this
 * message in the same request, so it is not repeated here.
 */
export function repairFeedback(t: TaskFacts, r: RepairFacts): string {
  const findings =
    r.findings.length === 0
      ? "Static review: no blocking findings."
      : `Static review found ${r.findings.length} blocking issue(s):\n${r.findings
          .map((f) => `- line ${f.line} [${f.rule}] ${f.message} (fix: ${f.fix})`)
          .join("\n")}`;
  return [
    `Repair attempt ${r.attempt} of ${r.maxAttempts}.`,
    ...taskLines(t),
    `The current script is on disk at ${r.scriptPath} (read it with read_file; it is not inlined here). It did not pass.`,
    findings,
    `Last run: exit code ${r.lastExitCode ?? "none (did not finish)"}. Output (head and tail):\n${headTailChars(r.lastOutput, FEEDBACK_OUTPUT_HEAD_CHARS, FEEDBACK_OUTPUT_TAIL_CHARS) || "(no output)"}`,
    "Fix main.py, run it with run_script, and call finish when it works.",
  ].join("\n\n");
}

/** The message of a `direct` step's agent. */
export function directTask(t: TaskFacts): string {
  return [
    ...taskLines(t),
    "Do the step with the tools: call_tool reaches the workspace's tools through the bridge (get_api_spec describes them); write each output file with write_output. Then call finish.",
    NO_FABRICATION_RULE.replace("the script writes", "you write"),
  ].join("\n\n");
}

/** The message of a sub-agent called by an orchestrator script. */
export function subAgentTask(
  route: { id: string; description: string },
  todoId: string,
  instructions: string,
): string {
  return [
    `You are the sub-agent of route ${route.id}: ${route.description}`,
    `Todo ${todoId}: ${instructions}`,
    "Use call_tool (get_api_spec describes the tools) as needed, then call finish with the result as the summary.",
    NO_FABRICATION_RULE.replace("the script writes", "you report"),
  ].join("\n\n");
}
