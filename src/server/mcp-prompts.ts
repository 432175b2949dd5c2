/**
 * MCP prompts. `ledger-protocol` teaches an agent the ledger protocol (publish → start →
 * run/complete → deviate → review) with each flow's tool, required fields, refusals and exit
 * statuses, generated from `FLOWS` so it cannot drift from what the tools do. `start-workflow-run`
 * asks for a workflow run with variables through `start_run` and `get_run`.
 */
import { McpError, ErrorCode as McpErrorCode, type Prompt } from "@modelcontextprotocol/sdk/types.js";
import { assertNoForbiddenKeys, MAX_ID_CHARS, MAX_PATH_CHARS, MAX_TEXT_CHARS } from "../core/index.js";
import { type AnyFlow, FLOWS, type Op } from "../ledger/index.js";
import { toolNameOf } from "./mcp-tools.js";

export const PROMPTS: readonly Prompt[] = [
  {
    name: "ledger-protocol",
    title: "The Ratchet ledger protocol",
    description:
      "How to record work in the ledger: publish a plan, start steps, run or complete them, deviate, close the review — the exact tools, fields, refusals and exit statuses.",
    arguments: [],
  },
  {
    name: "start-workflow-run",
    title: "Start a workflow run",
    description: "Start a workflow run with variables and follow it to its end.",
    arguments: [
      {
        name: "workflow",
        description: "workflow file or folder (relative: to the workspace's folder)",
        required: true,
      },
      {
        name: "variables",
        description:
          'variable values: a JSON object ({"names": "Ada"}) or NAME=value pairs separated by newlines or commas (a comma not followed by NAME= belongs to the value)',
        required: false,
      },
    ],
  },
];

/** The protocol's stages and the flows each uses; flows in no stage are listed after them. */
const STAGES: readonly { title: string; text: string; ops: readonly Op[] }[] = [
  {
    title: "1. Publish",
    text: "Publish the whole plan before any work: a goal and its steps (THINKING steps for reasoning, COMMAND steps for shell work). Keep the plan_id, step_ids and review_step_id it returns.",
    ops: ["publish-plan"],
  },
  {
    title: "2. Start",
    text: "Start a step when you begin it; it takes the step's lease. Renew the lease with heartbeat during long work.",
    ops: ["start-step", "heartbeat"],
  },
  {
    title: "3. Run or complete",
    text: "Shell work goes through run_step (it starts the step, runs the command, records the true exit code and completes or fails the step). Other steps: append_log what you observed, then complete_step with one sentence, or fail_step with the reason.",
    ops: ["run-step", "append-log", "complete-step", "fail-step"],
  },
  {
    title: "4. Deviate",
    text: "When the plan turns out wrong, deviate: add sub-steps under a step with a justification (one revision each). A FAILED step of a FAILED plan takes retries that re-open it. When the revision budget is spent, raise_budget with a reason.",
    ops: ["deviate", "raise-budget"],
  },
  {
    title: "5. Review",
    text: "When every step is done the plan rolls up. A plan of a registered project waits in NEEDS_REVIEW for an agent review: close it with agent_review_close (pass or fail). finish_plan runs the close-out (idempotent on a closed plan).",
    ops: ["agent-review-close", "finish-plan"],
  },
];

function flowLines(f: AnyFlow): string[] {
  const schema = f.input.json() as { required?: string[] };
  const required = schema.required ?? [];
  const lines = [
    `- \`${toolNameOf(f.op)}\` (op \`${f.op}\`, CLI \`ratchet ${f.command.join(" ")}\`): ${f.summary}`,
    `  required: ${required.length ? required.map((r) => `\`${r}\``).join(", ") : "none"}; example: \`${JSON.stringify(f.example)}\``,
  ];
  for (const r of f.refusals) lines.push(`  refused with \`${r.code}\` (exit ${r.exit}) when ${r.when}`);
  return lines;
}

/** The `ledger-protocol` text, from `FLOWS` (pure). */
export function ledgerProtocolText(flows: readonly AnyFlow[] = FLOWS): string {
  const byOp = new Map(flows.map((f) => [f.op, f]));
  const used = new Set<string>();
  const out = [
    "# The Ratchet ledger protocol",
    "",
    "Record your work in the Ratchet ledger as you do it, with these tools. Every call returns {result, marker}; a refusal is a tool error {ok:false, error:{code, message, field?}, marker} with accepted:false and nothing written — read the message, fix the cause, try again.",
    "",
  ];
  for (const stage of STAGES) {
    const present = stage.ops.map((op) => byOp.get(op)).filter((f): f is AnyFlow => f !== undefined);
    if (present.length === 0) continue;
    out.push(`## ${stage.title}`, "", stage.text, "");
    for (const f of present) {
      used.add(f.op);
      out.push(...flowLines(f));
    }
    out.push("");
  }
  const others = flows.filter((f) => !used.has(f.op));
  if (others.length) {
    out.push("## Other flows", "");
    for (const f of others) out.push(...flowLines(f));
    out.push("");
  }
  out.push(
    "## Exit statuses (the CLI's; `step_apply` returns the first failed op's as exit_status)",
    "",
    "0 done · 2 bad input (the message names the field) · 3 not found · 4 refused by a state machine or a soft breaker · 5 COMMAND work outside run_step · 6 revision budget exhausted · 7 the plan awaits its agent review · 8 the work ran and failed",
    "",
    "Many calls in one go: `step_apply` with {ops: [{op, as?, …input}]}; a later op can use {{label.path}} of an earlier op's result.",
  );
  return out.join("\n");
}

/** Parses the `variables` argument. @throws McpError InvalidParams naming `variables`. */
export function parseVariables(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === "") return {};
  const bad = (why: string): never => {
    throw new McpError(McpErrorCode.InvalidParams, `variables: ${why}`);
  };
  if (raw.length > MAX_TEXT_CHARS) bad(`at most ${MAX_TEXT_CHARS} characters`);
  const out: Record<string, string> = {};
  if (raw.trim().startsWith("{")) {
    let v: unknown;
    try {
      v = JSON.parse(raw);
      assertNoForbiddenKeys(v);
    } catch (e) {
      bad(`not a JSON object of strings: ${(e as Error).message}`);
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) bad("must be a JSON object");
    for (const [k, val] of Object.entries(v as object)) {
      if (typeof val !== "string") bad(`${k} must be a string`);
      out[k] = val as string;
    }
  } else {
    // A comma separates pairs only before another NAME=: `names=Ada,Grace` is one value.
    for (const part of raw
      .split(/\n|,(?=\s*[A-Za-z_][A-Za-z0-9_-]*=)/)
      .map((p) => p.trim())
      .filter(Boolean)) {
      const eq = part.indexOf("=");
      if (eq <= 0) bad(`expected NAME=value, got ${JSON.stringify(part.slice(0, 80))}`);
      out[part.slice(0, eq).trim()] = part.slice(eq + 1);
    }
  }
  for (const k of Object.keys(out))
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) || k.length > MAX_ID_CHARS)
      bad(`${JSON.stringify(k.slice(0, 80))} is not a variable name`);
  return out;
}

type PromptReply = {
  description: string;
  messages: { role: "user"; content: { type: "text"; text: string } }[];
};

const user = (description: string, text: string): PromptReply => ({
  description,
  messages: [{ role: "user", content: { type: "text", text } }],
});

/** `prompts/get`. @throws McpError InvalidParams for an unknown prompt or a bad argument. */
export function getPrompt(name: string, args: Record<string, string>): PromptReply {
  const known = PROMPTS.find((p) => p.name === name);
  if (!known)
    throw new McpError(
      McpErrorCode.InvalidParams,
      `no prompt ${JSON.stringify(name)} (prompts: ${PROMPTS.map((p) => p.name).join(", ")})`,
    );
  const allowed = (known.arguments ?? []).map((a) => a.name);
  for (const k of Object.keys(args))
    if (!allowed.includes(k))
      throw new McpError(
        McpErrorCode.InvalidParams,
        `${k}: unknown argument of ${name} (allowed: ${allowed.join(", ") || "none"})`,
      );
  if (name === "ledger-protocol") return user(known.description ?? name, ledgerProtocolText());
  const workflow = args.workflow?.trim();
  if (!workflow)
    throw new McpError(McpErrorCode.InvalidParams, "workflow: required (a workflow file or folder)");
  if (workflow.length > MAX_PATH_CHARS)
    throw new McpError(McpErrorCode.InvalidParams, `workflow: at most ${MAX_PATH_CHARS} characters`);
  const vars = parseVariables(args.variables);
  const body = { workflow, ...(Object.keys(vars).length ? { vars } : {}) };
  return user(
    `start ${workflow}`,
    [
      `Start a run of the workflow ${JSON.stringify(workflow)} and follow it to its end.`,
      "",
      `1. Call the \`start_run\` tool with exactly: ${JSON.stringify(body)}`,
      "   A refusal names the field (an unknown variable, a missing secret, a bad group): report it and stop.",
      "2. Call `get_run` with the run_id it returns until the run's status is no longer `running`.",
      "3. Report the status (passed, failed, interrupted or cancelled) and, for each step, its outcome, whether it ran on the fast path (a saved script, no model) and its error.",
    ].join("\n"),
  );
}
