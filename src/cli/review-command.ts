/**
 * `ratchet review <script>`: static review of a learned step script (`main.py`, `main.mjs`).
 * Prints the findings as text (or JSON with `--json`) and returns the exit status: 0 when no finding
 * blocks, 9 (`review_blocked`) when one does, 2 for a file that cannot be read or has an unknown
 * extension.
 */
import { ErrorCode, exitStatusFor, isRatchetError } from "../core/index.js";
import { err, out } from "./io.js";

export interface ReviewCommandOptions {
  /** Declared variables, comma-separated (`VAR_REGION,SECRET_TOKEN`). Default: every VAR_/SECRET_ name. */
  declared?: string;
  json?: boolean;
}

/** Parses `--declared a,b` into names (empty entries dropped). */
export function parseDeclared(list: string | undefined): string[] | undefined {
  if (list === undefined) return undefined;
  return list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * Reviews `file`, prints the report and returns the exit status: 0 (no blocking finding),
 * 9 (blocking findings), 2 (unreadable file or unknown extension: the message on stderr names the
 * file, nothing on stdout).
 */
export async function reviewCommand(file: string, opts: ReviewCommandOptions = {}): Promise<number> {
  // Loaded on demand: the parsers are only needed by this command.
  const { formatReport, reviewFile } = await import("../review/index.js");
  const declared = parseDeclared(opts.declared);
  let report: Awaited<ReturnType<typeof reviewFile>>;
  try {
    report = await reviewFile(file, declared ? { declared } : {});
  } catch (e) {
    if (!isRatchetError(e) || e.exitStatus !== 2) throw e;
    err(`ratchet: ${e.message}`);
    return e.exitStatus;
  }
  out(opts.json ? JSON.stringify({ file, ...report }, null, 2) : formatReport(report, file));
  return report.ok ? 0 : exitStatusFor(ErrorCode.ReviewBlocked);
}
