/**
 * Where the script helpers live. They ship as source files (`src/bridge/helpers/`, listed in the
 * package's `files`) and are found by walking up from this module, which works from `src/bridge/`
 * (tests), `dist/bridge/` (the compiled library) and `dist/` (the bundled CLI and its chunks).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, findAbove, RatchetError } from "../core/index.js";

/** File names of the helpers. Copy them next to a script under the same names. */
export const PYTHON_HELPER_FILE = "ratchet_tools.py";
export const JAVASCRIPT_HELPER_FILE = "ratchet-tools.mjs";

const CANDIDATES = ["helpers", join("src", "bridge", "helpers")];
let found: string | undefined;

function helpersDir(): string {
  found ??= findAbove(import.meta.url, CANDIDATES, (d) => existsSync(join(d, PYTHON_HELPER_FILE)));
  if (found) return found;
  throw new RatchetError(
    ErrorCode.Internal,
    `the bridge's script helpers (${PYTHON_HELPER_FILE}) were not found above ${fileURLToPath(import.meta.url)}: is src/bridge/helpers in the package?`,
  );
}

/**
 * Absolute paths of the script helpers: `python` (`ratchet_tools.py`, import with
 * `from ratchet_tools import call_mcp`) and `javascript` (`ratchet-tools.mjs`, import with
 * `import { callMcp } from "./ratchet-tools.mjs"` once copied next to the script).
 *
 * @throws RatchetError `internal` when the package is missing them.
 */
export function helperFiles(): { python: string; javascript: string } {
  const dir = helpersDir();
  return { python: join(dir, PYTHON_HELPER_FILE), javascript: join(dir, JAVASCRIPT_HELPER_FILE) };
}
