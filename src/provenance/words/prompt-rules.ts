/**
 * The prompt hook's pure rules (spec §3.1): which prompts are not the user's words, and which
 * name an outside source worth a `reference add`. Deterministic, no I/O.
 */

/** Text the host injects as a "prompt": not the user's words (checked after trimming). */
export const HOST_PREFIXES = [
  "<task-notification>",
  "<system-reminder>",
  "<local-command-caveat>",
  "<command-name>",
  "<agent-message",
] as const;

/** Environment switches of headless mode (the ledger's own model calls): the original's and Ratchet's. */
export const HEADLESS_VARS = ["PROVLEDGER_HEADLESS", "RATCHET_HEADLESS"] as const;

export type SkipReason = "empty" | "slash_command" | "host_injected" | "headless";

/** Why a prompt is not recorded, or undefined when it is. */
export function skipReason(prompt: string, env: Record<string, string | undefined>): SkipReason | undefined {
  if (HEADLESS_VARS.some((v) => env[v] === "1")) return "headless";
  const t = prompt.trim();
  if (t === "") return "empty";
  if (t.startsWith("/")) return "slash_command";
  if (HOST_PREFIXES.some((p) => t.startsWith(p))) return "host_injected";
  return undefined;
}

/**
 * Words that name an outside source, by reference kind (whole words, case-insensitive). Plural
 * "docs"/"documentation" are left out on purpose: in a coding prompt they mean the project's own docs.
 */
const SOURCE_WORDS: readonly (readonly [kind: string, re: RegExp])[] = [
  ["email", /\b(e-?mails?|inbox)\b/i],
  ["meeting", /\b(meetings?|stand-?ups?|standup|call with|1:1)\b/i],
  ["chat", /\b(slack|teams chat|discord|chat)\b/i],
  ["ticket", /\b(jira|tickets?)\b/i],
  ["doc", /\b(doc|document|confluence|notion|wiki|google doc)\b/i],
];

/** The reference kind the prompt's words point at, or undefined (first match in list order). */
export function sourceKind(prompt: string): string | undefined {
  for (const [kind, re] of SOURCE_WORDS) if (re.test(prompt)) return kind;
  return undefined;
}

/** The one line the hook prints for a prompt that names a source (a plain line, no markup). */
export function sourceHint(kind: string, utteranceId: number): string {
  return `ratchet: this prompt names an outside source (${kind}); if it matters, record where it is: ratchet reference add --utterance ${utteranceId} --kind ${kind} --label "<what it is, not its text>" --occurred-at <YYYY-MM-DD> --uri <link>`;
}
