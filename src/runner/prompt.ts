/** The text the model gets each round (pure). */
import type { TaskSpec } from "./spec.js";

export const SYSTEM_PROMPT = [
  "You are a careful software engineer making one small, bounded code change in a git repository.",
  "Use the tools: read_file, search_code, edit_file (after reading), write_file, run_command.",
  "Only allowlisted paths can be written. Destructive commands are blocked.",
  "A deterministic definition of done (DoD) is run after you call finish; make it pass.",
  "Call finish with a short summary when the change is done.",
].join("\n");

export interface RoundPromptInput {
  spec: TaskSpec;
  round: number;
  /** `path → text` of the read_context files (already bounded). */
  context: readonly { path: string; text: string }[];
  lastDod: { passed: boolean; exitCode: number | null; outputTail: string };
  bestScore: number;
}

export function roundPrompt(p: RoundPromptInput): string {
  const { spec } = p;
  const parts = [
    `# Task ${spec.task_id}: ${spec.title}`,
    spec.prompt,
    `## Allowlist (only these paths may be written)\n${spec.allowlist.map((a) => `- ${a}`).join("\n")}`,
  ];
  if (spec.protected_paths.length > 0) {
    parts.push(`## Protected (never change)\n${spec.protected_paths.map((a) => `- ${a}`).join("\n")}`);
  }
  parts.push(
    `## Definition of done\nCommand: ${spec.definition_of_done.command}\nAssertion: ${spec.definition_of_done.assertion}`,
  );
  for (const c of p.context) parts.push(`## Context: ${c.path}\n\`\`\`\n${c.text}\n\`\`\``);
  parts.push(
    `## Round ${p.round} of ${spec.max_rounds} (best score so far ${p.bestScore})\nLast DoD run: ${p.lastDod.passed ? "passed" : "failed"} (exit ${p.lastDod.exitCode}). Output tail:\n\`\`\`\n${p.lastDod.outputTail}\n\`\`\``,
  );
  return parts.join("\n\n");
}
