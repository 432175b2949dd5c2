/**
 * `provledger-extensions.json`, the one loader: which file (first that exists of
 * `<project repo>/provledger-extensions.json`, `$PROVLEDGER_EXTENSIONS`,
 * `~/skill-workspace/provledger-extensions.json`, never merged) and its parsed document. Its
 * readers — `close_mode` (close-mode.ts) and the headline's `constraints` (headline-extensions.ts) —
 * check their own part of the document.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const EXTENSIONS_FILE = "provledger-extensions.json";

export interface ExtensionsLookup {
  /** The project's repository. */
  repo?: string | null;
  env?: NodeJS.ProcessEnv;
  home?: string;
}

/** The extensions files in lookup order. */
export function extensionsCandidates(l: ExtensionsLookup): string[] {
  const env = l.env ?? process.env;
  const out: string[] = [];
  if (l.repo) out.push(join(l.repo, EXTENSIONS_FILE));
  if (env.PROVLEDGER_EXTENSIONS) out.push(env.PROVLEDGER_EXTENSIONS);
  out.push(join(l.home ?? homedir(), "skill-workspace", EXTENSIONS_FILE));
  return out;
}

/** The extensions file in use (undefined when none exists). */
export function extensionsFile(l: ExtensionsLookup): string | undefined {
  return extensionsCandidates(l).find((f) => existsSync(f));
}

/** A JSON file's document, or why it could not be read. */
export function readJsonFile(file: string): { doc: unknown } | { error: string } {
  try {
    return { doc: JSON.parse(readFileSync(file, "utf8")) as unknown };
  } catch (e) {
    return { error: (e as Error).message };
  }
}
