/**
 * Seals of validated outputs: the sha256 of every file a step left in its output folder (its
 * `code/` working copy aside), taken once the step passed, and checked before a dependent step of
 * the same run starts. Every process of a step is gone before validation (exec's process runner
 * and the launcher's supervisor); the seal makes "the dependent step gets exactly the validated
 * bytes" checkable rather than assumed: a mismatch stops the dependent step as a harness failure.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Relative path → sha256 (hex), or `symlink`/`other` for what is not a regular file. */
export type OutputSeal = Map<string, string>;

/** Seals `dir`, leaving out the top-level `skip` entries (the `code` folder). */
export function sealOutputs(dir: string, skip: readonly string[] = ["code"]): OutputSeal {
  const seal: OutputSeal = new Map();
  const walk = (abs: string, rel: string): void => {
    let names: string[];
    try {
      names = readdirSync(abs).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (rel === "" && skip.includes(name)) continue;
      const p = join(abs, name);
      const r = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p, r);
      else if (st.isFile()) seal.set(r, createHash("sha256").update(readFileSync(p)).digest("hex"));
      else seal.set(r, st.isSymbolicLink() ? "symlink" : "other");
    }
  };
  walk(dir, "");
  return seal;
}

/** The first difference between `seal` and `dir` now (a changed, added or removed file), or undefined. */
export function sealBroken(
  dir: string,
  seal: OutputSeal,
  skip: readonly string[] = ["code"],
): string | undefined {
  const now = sealOutputs(dir, skip);
  for (const [rel, digest] of seal) {
    const cur = now.get(rel);
    if (cur === undefined) return `${rel} was removed`;
    if (cur !== digest) return `${rel} changed`;
  }
  for (const rel of now.keys()) if (!seal.has(rel)) return `${rel} appeared`;
  return undefined;
}
