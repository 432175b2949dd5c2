/**
 * What identifies and bounds a tool call: the canonical JSON and hash its approval is bound to, its
 * result text as stored, and the lease that covers it.
 */
import { createHash } from "node:crypto";
import { ACTION_RESULT_MAX_CHARS } from "./limits.js";
import { globMatch } from "./policy.js";
import type { LeaseRow } from "./thread-store.js";

/** Canonical JSON (sorted keys) so the same arguments always hash the same. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v ?? null);
}

export function argsHash(action: string, args: unknown): string {
  return createHash("sha256")
    .update(`${action}\n${canonicalJson(args)}`)
    .digest("hex");
}

/** A tool result as the text of its result message (cut in the middle past the limit). */
export function resultText(v: unknown): string {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text.length > ACTION_RESULT_MAX_CHARS
    ? `${text.slice(0, ACTION_RESULT_MAX_CHARS / 2)}\n…[cut]…\n${text.slice(-ACTION_RESULT_MAX_CHARS / 2)}`
    : text;
}

/** The live lease covering `action`, if any. */
export function findLease(leases: readonly LeaseRow[], action: string, nowMs: number): LeaseRow | undefined {
  return leases.find(
    (l) =>
      globMatch(l.pattern, action) &&
      (l.uses_left === null || l.uses_left > 0) &&
      (l.expires_ms === null || l.expires_ms > nowMs),
  );
}
