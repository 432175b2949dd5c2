/**
 * The hash chain of the append-only provenance tables (utterances, references, reference checks,
 * change reasons): each row's `hash` is sha256 over its canonical JSON followed by the previous
 * row's hash. Computed at insert, inside the insert's transaction, so the chain never forks.
 */
import { createHash } from "node:crypto";

/** Columns never part of a row's hashed content. */
const UNHASHED = new Set(["id", "hash", "prev_hash", "superseded_by", "last_checked"]);

/** JSON with sorted keys and no whitespace; non-ASCII characters kept as they are. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
}

/** The row's hash given the previous row's hash (`""` for the first row of a table). */
export function chainHash(row: Record<string, unknown>, prevHash: string): string {
  const content: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (!UNHASHED.has(k)) content[k] = v;
  return createHash("sha256")
    .update(canonicalJson(content) + prevHash)
    .digest("hex");
}
