/**
 * `close_mode` (spec §4.4): `ask` (the review agent asks the user once; nodes still open at close
 * get `unstated` rows, state `active`) or `pending` (nobody is asked; open nodes get `unstated`
 * rows with state `unknown`, answered later by `reason-fill`). Default `ask`.
 *
 * Where it is read, first found wins, never merged:
 * 1. the first existing file of `<project repo>/provledger-extensions.json`, `$PROVLEDGER_EXTENSIONS`,
 *    `~/skill-workspace/provledger-extensions.json` → `{"version": 1, "reasons": {"close_mode": …}}`;
 * 2. else the workspace's `.ratchet/config.json` → `{"provenance": {"close_mode": …}}` (Ratchet's
 *    own settings file, where its users look first);
 * 3. else `ask`.
 * A file that cannot be read or parsed, or any other value, is a load error: the close uses `ask`
 * and the error is logged on the review step (`[REASONS] close_mode: …`).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ExtensionsLookup, extensionsFile, readJsonFile } from "./extensions.js";

export const CloseMode = { Ask: "ask", Pending: "pending" } as const;
export type CloseMode = (typeof CloseMode)[keyof typeof CloseMode];

export interface CloseModeSetting {
  mode: CloseMode;
  /** The file it came from (absent: the default). */
  source?: string;
  /** A load error (the mode then is `ask`). */
  error?: string;
}

export interface CloseModeLookup extends ExtensionsLookup {
  /** The workspace folder (`.ratchet/`), for `config.json`. */
  workspaceDir?: string | null;
}

function valueAt(doc: unknown, path: readonly string[]): unknown {
  let v = doc;
  for (const k of path) {
    if (v === null || typeof v !== "object" || Array.isArray(v) || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function readMode(file: string, path: readonly string[], requireVersion: boolean): CloseModeSetting {
  const read = readJsonFile(file);
  if ("error" in read)
    return { mode: CloseMode.Ask, source: file, error: `${file}: cannot be read as JSON (${read.error})` };
  const doc = read.doc;
  if (requireVersion && valueAt(doc, ["version"]) !== 1)
    return { mode: CloseMode.Ask, source: file, error: `${file}: \`version\` must be 1` };
  const v = valueAt(doc, path);
  if (v === undefined) return { mode: CloseMode.Ask, source: file };
  if (v === CloseMode.Ask || v === CloseMode.Pending) return { mode: v, source: file };
  return {
    mode: CloseMode.Ask,
    source: file,
    error: `${file}: \`${path.join(".")}\` must be "ask" or "pending" (got ${JSON.stringify(v)})`,
  };
}

/** The close mode of a project, with where it came from and any load error. */
export function loadCloseMode(l: CloseModeLookup): CloseModeSetting {
  const ext = extensionsFile(l);
  if (ext) return readMode(ext, ["reasons", "close_mode"], true);
  if (l.workspaceDir) {
    const cfg = join(l.workspaceDir, "config.json");
    if (existsSync(cfg)) return readMode(cfg, ["provenance", "close_mode"], false);
  }
  return { mode: CloseMode.Ask };
}
