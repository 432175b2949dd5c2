/** `reviewFile`: read a script from disk and review it (the language comes from its extension). */
import { readFile, stat } from "node:fs/promises";
import { extname } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { MAX_SCRIPT_BYTES } from "./limits.js";
import { reviewScript } from "./review.js";
import type { ReviewFileOptions, ReviewReport, ScriptLanguage } from "./types.js";

const EXTENSIONS: Readonly<Record<string, ScriptLanguage>> = {
  ".py": "python",
  ".mjs": "javascript",
  ".js": "javascript",
};

/**
 * The language of a script file from its extension (`.py`, `.mjs`, `.js`).
 * @throws RatchetError `invalid_value` (exit 2) for any other extension, naming the file.
 */
export function languageOf(path: string): ScriptLanguage {
  const lang = EXTENSIONS[extname(path).toLowerCase()];
  if (!lang) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `cannot review ${path}: unknown script extension "${extname(path)}" (expected .py, .mjs or .js)`,
      { file: path },
    );
  }
  return lang;
}

/**
 * Reads and reviews one script file.
 * @throws RatchetError `invalid_value` for an unknown extension; `unreadable_input` when the file
 * cannot be read, is not a regular file or is over {@link MAX_SCRIPT_BYTES} (all exit 2).
 */
export async function reviewFile(path: string, opts: ReviewFileOptions = {}): Promise<ReviewReport> {
  const language = opts.language ?? languageOf(path);
  let source: string;
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > MAX_SCRIPT_BYTES)
      throw new Error(`${st.size} bytes, over the limit of ${MAX_SCRIPT_BYTES}`);
    source = await readFile(path, "utf8");
  } catch (err) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `cannot read script ${path}: ${(err as Error).message}`,
      {
        file: path,
      },
    );
  }
  return reviewScript(source, {
    language,
    filename: path,
    ...(opts.declared ? { declared: opts.declared } : {}),
  });
}
