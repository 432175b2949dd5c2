/**
 * Save-back: the Builder's only write under `learnings/{step-id}/`. It writes the snapshot of
 * `code/` the last run started from (snapshot.ts), never the folder as it is afterwards: exactly
 * the bytes that ran. A snapshot that was refused (a symbolic link, a FIFO or device, a file or
 * folder over its limit, code changed during the run) or a script that fails static review (a
 * syntax error included) is never saved. Otherwise `main.py` (and the other top-level files of
 * the snapshot, not the tool helper nor `fix-diffs/`) replaces the saved one, with a
 * unified diff in `diffs/` when the bytes changed (`script_version` and `relearn_count` go up
 * only then), the step's contract in `contract.json`; and the build's verdict as one run in
 * `script_metadata.json`, which lives in the run home with the runs' history (layout.ts), not in
 * `learnings/`. A workspace without that history yet (a fresh clone) numbers the next version after
 * the newest diff in `diffs/`, so versions keep counting across clones.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { reviewScript } from "../review/index.js";
import {
  diffsDir,
  historyDir,
  type LearnedStepResult,
  learningsDir,
  noteSavedScript,
  type RunHome,
  recordScriptRun,
  SCRIPT_METADATA_FILE,
  saveContract,
  type Workflow,
  type WorkflowStep,
  workflowHome,
  writeFileAtomic,
} from "../workflow/index.js";
import { unifiedDiff } from "./diff.js";
import { SAVE_FILE_MAX_BYTES } from "./limits.js";
import { type CodeFile, type CodeSnapshot, readRegular } from "./snapshot.js";

const SCRIPT = "main.py";

export interface SaveBackInput {
  workflow: Workflow;
  step: WorkflowStep;
  /**
   * `code/` as the last run started from it (`RanCode.last`); undefined when no run happened.
   * Nothing is read from `code/` here.
   */
  code: CodeSnapshot | undefined;
  /** Whether it passed its last run. */
  passed: boolean;
  /** `VAR_*` / `SECRET_*` names for static review. */
  declared: readonly string[];
  outputDir: string;
  /** Where the script's run history lives (`script_metadata.json`). */
  runHome: RunHome;
  runId: string;
  groupName: string | null;
  lastRun: LearnedStepResult | undefined;
  now: Date;
}

export interface SaveBackResult {
  saved: { script_version: number; relearn_count: number; changed: boolean; diff: string | null } | null;
  /** Why nothing was saved. */
  reason: string | null;
}

/** The saved main.py when it is a regular file (a link there is replaced, never followed). */
function savedBytes(savedDir: string): Buffer | undefined {
  const b = readRegular(join(savedDir, SCRIPT), SCRIPT, SAVE_FILE_MAX_BYTES);
  return typeof b === "string" ? undefined : b;
}

function savedVersion(dir: string): number {
  try {
    const m = JSON.parse(readFileSync(join(dir, SCRIPT_METADATA_FILE), "utf8")) as {
      script_version?: number;
    };
    return m.script_version ?? 0;
  } catch {
    return 0;
  }
}

/** The newest `v<N>-…diff` in `diffs/` (0 when none): the version history the workflow carries. */
function diffVersion(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let max = 0;
  for (const n of names) {
    const m = /^v(\d+)-.*\.diff$/.exec(n);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max;
}

/** Writes the snapshot's other files (not main.py) to `to`, each replacing what is there (a link included). */
function saveFolder(files: readonly CodeFile[], to: string): void {
  for (const f of files) if (f.name !== SCRIPT) writeFileAtomic(join(to, f.name), f.bytes);
}

/** Saves the script back, or says why not. */
export async function saveBack(input: SaveBackInput): Promise<SaveBackResult> {
  const { workflow: wf, step, code } = input;
  // A last attempt that left no main.py ran nothing: an older run's snapshot is not saved.
  if (code === undefined || input.lastRun?.outcome === "missing_script")
    return { saved: null, reason: "no main.py was written" };
  if (!code.ok) return { saved: null, reason: `${code.refusal}: not saved` };
  const main = code.files.find((f) => f.name === SCRIPT);
  if (main === undefined) return { saved: null, reason: "no main.py was written" };
  const script = main.bytes.toString("utf8");
  const report = await reviewScript(script, {
    language: "python",
    declared: input.declared,
    filename: SCRIPT,
  });
  if (!report.ok) {
    const syntax = report.findings.some((f) => f.rule === "syntax");
    return {
      saved: null,
      reason: syntax
        ? "main.py has a syntax error: not saved"
        : `main.py fails static review (${report.blocking} blocking finding(s)): not saved`,
    };
  }
  const home = workflowHome(wf);
  const savedDir = learningsDir(wf, step.id);
  const history = historyDir(input.runHome, wf, step.id);
  const target = join(savedDir, SCRIPT);
  const beforeBytes = savedBytes(savedDir);
  const before = beforeBytes?.toString("utf8");
  const changed = beforeBytes === undefined || !beforeBytes.equals(main.bytes);
  let diffRel: string | null = null;
  if (changed) {
    mkdirSync(savedDir, { recursive: true });
    const known = savedVersion(history);
    const prev = Math.max(known, diffVersion(diffsDir(wf, step.id)));
    const text = await unifiedDiff(before, script, {
      from: before === undefined ? "/dev/null" : `main.py (v${prev})`,
      to: `main.py (v${before === undefined ? 1 : prev + 1})`,
    });
    writeFileAtomic(target, main.bytes);
    saveFolder(code.files, savedDir);
    const meta = noteSavedScript(history, main.bytes, input.now, step.id, {
      firstVersion: before === undefined && prev === 0 ? 1 : prev + 1,
    });
    const file = join(diffsDir(wf, step.id), `v${meta.script_version}-${input.runId}.diff`);
    writeFileAtomic(file, `${text}\n`);
    diffRel = relative(home, file);
  }
  saveContract(savedDir, step);
  // The build's verdict is one run of the saved script in its metadata.
  const last = input.lastRun;
  const meta = recordScriptRun(history, {
    stepId: step.id,
    scriptBytes: main.bytes,
    success: input.passed,
    exitCode: last?.exitCode ?? null,
    durationMs: Math.round(last?.durationMs ?? 0),
    groupName: input.groupName,
    runFolder: input.outputDir,
    failureReason: input.passed ? null : (last?.failureReason ?? "execution_error"),
    errorSummary: input.passed ? null : (last?.error ?? null),
    locked: false,
    now: input.now,
  });
  return {
    saved: { script_version: meta.script_version, relearn_count: meta.relearn_count, changed, diff: diffRel },
    reason: null,
  };
}
