/**
 * A reason's evidence level (spec §2.3), computed from its tier, its quote and its sources' derived
 * verifiability, never stored. The one definition: `why`, the headline's bounded read and
 * `note --node`'s answer all call it.
 */
export type EvidenceLevel = "linked" | "verbal" | "task_context" | "unstated";

/** `linked` > `verbal` > `task_context` > `unstated`. */
export function evidenceLevel(
  r: { tier: string; verbatim_utterance_id: number | null },
  sources: readonly { verifiability: string }[],
): EvidenceLevel {
  if (sources.some((s) => s.verifiability === "linked")) return "linked";
  if (r.verbatim_utterance_id !== null || sources.some((s) => s.verifiability === "verbal")) return "verbal";
  return r.tier === "unstated" ? "unstated" : "task_context";
}
