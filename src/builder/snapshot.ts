/**
 * The code folder as a run found it. Save-back writes exactly these bytes, never the folder as it is
 * afterwards: a script can rewrite its own `main.py` while it runs, and a candidate can leave a
 * symbolic link (`extra.py -> ../../.ratchet/secrets`) that a later read would follow.
 *
 * {@link snapshotCode} reads the top-level regular files of `code/` (not the tool helper, not
 * `fix-diffs/`, no dot files, sub-folders are not saved) through `lstat` and `O_NOFOLLOW`, bounded
 * by {@link SAVE_FILE_MAX_BYTES}, {@link SAVE_MAX_FILES} and {@link SAVE_TOTAL_MAX_BYTES}. Anything
 * else — a symbolic link, a FIFO, a device, a socket, a file over a limit — refuses the snapshot,
 * naming the file. {@link RanCode} takes one right before each working-copy run and checks after it
 * that the run left the folder's code as it found it. Files a run itself created are never saved:
 * working files (or a link planted under a data name) are left out of later snapshots while they
 * stay as the run left them; code a run wrote (`.py`, `.so`, `__pycache__/`, …) fails that run and
 * refuses later snapshots. Only what the agent wrote, and the run started from, is saved.
 */
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, opendirSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { PYTHON_HELPER_FILE } from "../bridge/index.js";
import { type LearnedStepResult, notRun, StepOutcome } from "../workflow/index.js";
import {
  SAVE_FILE_MAX_BYTES,
  SAVE_MAX_FILES,
  SAVE_SCAN_MAX_ENTRIES,
  SAVE_TOTAL_MAX_BYTES,
} from "./limits.js";

/** One saved file: its name in `code/`, its bytes and their sha256 (hex). */
export interface CodeFile {
  name: string;
  bytes: Buffer;
  sha256: string;
}

/** The files, sorted by name; or why the folder cannot be saved. */
export type CodeSnapshot = { ok: true; files: CodeFile[] } | { ok: false; refusal: string };

export interface SnapshotLimits {
  fileMaxBytes: number;
  maxFiles: number;
  totalMaxBytes: number;
}

const DEFAULT_LIMITS: SnapshotLimits = {
  fileMaxBytes: SAVE_FILE_MAX_BYTES,
  maxFiles: SAVE_MAX_FILES,
  totalMaxBytes: SAVE_TOTAL_MAX_BYTES,
};

/** Files of a script's language whose change during a run means the code that ran changed. */
const CODE_FILE = /\.(py|pyw|mjs|cjs|js|sh)$/;
/**
 * What an interpreter may load that a run must never write: sources, bytecode, extension modules
 * (a `helper.so` shadows `helper.py`), path hooks, a `__pycache__/`.
 */
const RUN_CODE = /\.(py|pyw|pyc|pyo|so|pth|mjs|cjs|js|sh)$|^__pycache__$/;

/** Names of `code/` that are never part of the saved folder. */
function skipped(name: string): boolean {
  return name === PYTHON_HELPER_FILE || name === "fix-diffs" || name.startsWith(".");
}

function kindOf(st: {
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}): string {
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}

/**
 * Reads one regular file without following a link and without blocking on a FIFO, at most
 * `max` bytes. Returns the bytes, or why not.
 */
export function readRegular(abs: string, label: string, max: number): Buffer | string {
  const ls = lstatSync(abs, { throwIfNoEntry: false });
  if (!ls) return `${label} disappeared while it was read`;
  if (ls.isDirectory()) return `${label} is a folder`;
  if (!ls.isFile()) return `${label} is ${kindOf(ls)}: only regular files are saved`;
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    return `${label} cannot be read safely (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
  try {
    const st = fstatSync(fd);
    // Swapped between the lstat and the open: refuse rather than read something else.
    if (!st.isFile() || st.ino !== ls.ino || st.dev !== ls.dev)
      return `${label} changed while it was read: only regular files are saved`;
    if (st.size > max) return `${label} is ${st.size} bytes, over the ${max}-byte limit of a saved file`;
    const buf = Buffer.alloc(max + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > max) return `${label} grew over the ${max}-byte limit of a saved file while it was read`;
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * `code/main.py` (or another file of `code/`) as text when it is a regular file within
 * {@link SAVE_FILE_MAX_BYTES}; undefined otherwise (missing, a link — never followed — or too big).
 */
export function readCodeText(codeDir: string, name: string): string | undefined {
  const b = readRegular(join(codeDir, name), `code/${name}`, SAVE_FILE_MAX_BYTES);
  return typeof b === "string" ? undefined : b.toString("utf8");
}

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

const runWroteCode = (name: string): string =>
  `code/${name} was written by a run of the script: code a run writes is never run or saved`;

/** Who a directory entry is, without following it: a rewrite (write + rename) makes a new one. */
function identity(abs: string): string | undefined {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}` : undefined;
}

/**
 * The saveable files of `codeDir` (missing folder: no files), or the first refusal. An entry named
 * in `runMade` whose identity is still the one recorded there is left out.
 */
export function snapshotCode(
  codeDir: string,
  limits: SnapshotLimits = DEFAULT_LIMITS,
  runMade: ReadonlyMap<string, string> = new Map(),
): CodeSnapshot {
  let dir: ReturnType<typeof opendirSync>;
  try {
    dir = opendirSync(codeDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { ok: true, files: [] };
    return {
      ok: false,
      refusal: `code/ cannot be listed (${(e as NodeJS.ErrnoException).code ?? String(e)})`,
    };
  }
  const files: CodeFile[] = [];
  let total = 0;
  let entries = 0;
  try {
    for (let e = dir.readSync(); e !== null; e = dir.readSync()) {
      if (++entries > SAVE_SCAN_MAX_ENTRIES)
        return { ok: false, refusal: `code/ holds more than ${SAVE_SCAN_MAX_ENTRIES} entries` };
      if (skipped(e.name)) continue;
      const made = runMade.get(e.name);
      if (made !== undefined && made === identity(join(codeDir, e.name))) {
        if (RUN_CODE.test(e.name)) return { ok: false, refusal: runWroteCode(e.name) };
        continue;
      }
      if (e.isDirectory()) continue;
      if (files.length >= limits.maxFiles)
        return { ok: false, refusal: `code/ holds more than ${limits.maxFiles} files` };
      const label = `code/${e.name}`;
      const bytes = readRegular(join(codeDir, e.name), label, limits.fileMaxBytes);
      if (typeof bytes === "string") return { ok: false, refusal: bytes };
      total += bytes.length;
      if (total > limits.totalMaxBytes)
        return { ok: false, refusal: `code/ holds more than ${limits.totalMaxBytes} bytes` };
      files.push({ name: e.name, bytes, sha256: sha256(bytes) });
    }
  } finally {
    dir.closeSync();
  }
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ok: true, files };
}

/**
 * The code files of `before` that are no longer the same in `codeDir` (changed, removed or
 * replaced), one line each; empty when the run left its code as it found it. Data files a script
 * rewrites in its working folder are not counted: the saved folder keeps the bytes the run started from.
 */
export function changedCode(before: CodeSnapshot & { ok: true }, codeDir: string): string[] {
  const changed: string[] = [];
  for (const f of before.files) {
    if (!CODE_FILE.test(f.name)) continue;
    const now = readRegular(join(codeDir, f.name), `code/${f.name}`, SAVE_FILE_MAX_BYTES);
    if (typeof now === "string") changed.push(now);
    else if (sha256(now) !== f.sha256)
      changed.push(
        `code/${f.name} changed while the script ran (sha256 ${f.sha256.slice(0, 12)}… before, ${sha256(now).slice(0, 12)}… after)`,
      );
  }
  return changed;
}

/**
 * Keeps the code folder as the latest working-copy run started from, verified after it. Save-back
 * takes {@link RanCode.last}; a run whose folder cannot be saved, or that changed its own code, is
 * not a pass (the agent sees why and may repair it).
 */
export class RanCode {
  #last: CodeSnapshot | undefined;
  /** Entries the runs created, with their identity as the run left them. */
  #runMade = new Map<string, string>();

  constructor(private readonly codeDir: string) {}

  /** What the latest run started from (a refusal when it could not be saved); undefined before any run. */
  get last(): CodeSnapshot | undefined {
    return this.#last;
  }

  /** Snapshots `code/`, runs, verifies. A refused snapshot does not run. */
  async around(run: () => Promise<LearnedStepResult>): Promise<LearnedStepResult> {
    const before = snapshotCode(this.codeDir, DEFAULT_LIMITS, this.#runMade);
    this.#last = before;
    if (!before.ok) return notRun(StepOutcome.ScriptFailed, `${before.refusal}; the script was not run`);
    const r = await run();
    this.#noteRunMade(before);
    const changed = changedCode(before, this.codeDir);
    for (const name of this.#runMade.keys()) if (RUN_CODE.test(name)) changed.push(runWroteCode(name));
    if (changed.length === 0) return r;
    const note = `${changed.join("\n")}\na learned script must not rewrite its own code: not saved`;
    this.#last = { ok: false, refusal: changed.join("; ") };
    return {
      ...r,
      outcome: r.outcome === StepOutcome.Passed ? StepOutcome.ScriptFailed : r.outcome,
      failureReason: r.failureReason ?? "execution_error",
      error: r.error ? `${note}\n${r.error}` : note,
      ...(r.output !== undefined
        ? { output: `${r.output}${r.output.endsWith("\n") || r.output === "" ? "" : "\n"}${note}` }
        : {}),
      log: `${r.log}\n${note}`,
    };
  }

  /** Records the top-level entries that are not in `before` (bounded like a snapshot's listing). */
  #noteRunMade(before: CodeSnapshot & { ok: true }): void {
    const known = new Set(before.files.map((f) => f.name));
    this.#runMade = new Map();
    let dir: ReturnType<typeof opendirSync>;
    try {
      dir = opendirSync(this.codeDir);
    } catch {
      return;
    }
    try {
      let entries = 0;
      for (let e = dir.readSync(); e !== null && ++entries <= SAVE_SCAN_MAX_ENTRIES; e = dir.readSync()) {
        if (known.has(e.name) || skipped(e.name)) continue;
        const id = identity(join(this.codeDir, e.name));
        if (id !== undefined) this.#runMade.set(e.name, id);
      }
    } finally {
      dir.closeSync();
    }
  }
}
