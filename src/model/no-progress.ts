/**
 * The tool loop's no-progress detector, as pure functions: a round is fingerprinted by its tool
 * calls (names and arguments, key order ignored) plus the caller's optional progress key, and the
 * loop has stalled when the last {@link NO_PROGRESS_ROUNDS} fingerprints are the same.
 */
import { NO_PROGRESS_ROUNDS } from "./limits.js";

/** What the detector knows about one round. */
export interface RoundFingerprint {
  calls: readonly { name: string; args: unknown }[];
  /** The caller's own progress signal for the round (e.g. a hash of the worktree, a DoD score). */
  progress?: string | undefined;
}

/** JSON with object keys sorted at every level, so `{a,b}` and `{b,a}` read the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The fingerprint of a round as one string. */
export function roundKey(round: RoundFingerprint): string {
  return canonicalJson({ calls: round.calls.map((c) => [c.name, c.args]), progress: round.progress });
}

/**
 * True when the last `rounds` rounds of `history` made the same tool calls with the same
 * arguments (and, when given, reported the same progress key). Rounds without tool calls never
 * count: such a round ends the loop by itself.
 */
export function detectNoProgress(
  history: readonly RoundFingerprint[],
  rounds: number = NO_PROGRESS_ROUNDS,
): boolean {
  if (rounds < 2 || history.length < rounds) return false;
  const recent = history.slice(-rounds);
  if (recent.some((r) => r.calls.length === 0)) return false;
  const first = roundKey(recent[0] as RoundFingerprint);
  return recent.every((r) => roundKey(r) === first);
}
