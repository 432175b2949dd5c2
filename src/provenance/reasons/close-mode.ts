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
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const CloseMode = { Ask: "ask", Pending: "pending" } as const;
export type CloseMode = (typeof CloseMode)[keyof typeof CloseMode];

export interface CloseModeSetting {
  mode: CloseMode;
  /** The file it came from (absent: the default). */
  source?: string;
  /** A load error (the mode then is `ask`). */
  error?: string;
}

export interface CloseModeLookup {
  /** The project's repository (its `provledger-extensions.json`). */
  repo?: string | null;
  /** The workspace folder (`.ratchet/`), for `config.json`. */
  workspaceDir?: string | null;
  env?: NodeJS.ProcessEnv;
  home?: string;
}

/** The extensions files in lookup order. */
export function extensionsCandidates(l: CloseModeLookup): string[] {
  const env = l.env ?? process.env;
  const out: string[] = [];
  if (l.repo) out.push(join(l.repo, "provledger-extensions.json"));
  if (env.PROVLEDGER_EXTENSIONS) out.push(env.PROVLEDGER_EXTENSIONS);
  out.push(join(l.home ?? homedir(), "skill-workspace", "provledger-extensions.json"));
  return out;
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
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    return {
      mode: CloseMode.Ask,
      source: file,
      error: `${file}: cannot be read as JSON (${(e as Error).message})`,
    };
  }
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
  const ext = extensionsCandidates(l).find((f) => existsSync(f));
  if (ext) return readMode(ext, ["reasons", "close_mode"], true);
  if (l.workspaceDir) {
    const cfg = join(l.workspaceDir, "config.json");
    if (existsSync(cfg)) return readMode(cfg, ["provenance", "close_mode"], false);
  }
  return { mode: CloseMode.Ask };
}
