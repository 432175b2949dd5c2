/**
 * Save-back: the Builder's only write under `learnings/{step-id}/`. A script that fails static
 * review (a syntax error included) is never saved. Otherwise `main.py` (and the other files the
 * agent left in `code/`, not the tool helper nor `fix-diffs/`) replaces the saved one, with a
 * unified diff in `diffs/` when the bytes changed (`script_version` and `relearn_count` go up
 * only then), the step's contract in `contract.json`, and the build's verdict as one run in
 * `script_metadata.json`.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { PYTHON_HELPER_FILE } from "../bridge/index.js";
import { reviewScript } from "../review/index.js";
import {
  diffsDir,
  type LearnedStepResult,
  learningsDir,
  noteSavedScript,
  recordScriptRun,
  SCRIPT_METADATA_FILE,
  saveContract,
  type Workflow,
  type WorkflowStep,
  workflowHome,
  writeFileAtomic,
} from "../workflow/index.js";
import { unifiedDiff } from "./diff.js";

const SCRIPT = "main.py";

export interface SaveBackInput {
  workflow: Workflow;
  step: WorkflowStep;
  /** The latest learned script (undefined: the agents wrote none). */
  script: string | undefined;
  /** Whether it passed its last run. */
  passed: boolean;
  /** `VAR_*` / `SECRET_*` names for static review. */
  declared: readonly string[];
  codeDir: string;
  outputDir: string;
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

function readIf(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
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

/** Copies the working copy's regular top-level files (not main.py, the helper or fix-diffs/) to `to`. */
function saveFolder(codeDir: string, to: string): void {
  for (const name of readdirSync(codeDir)) {
    if (name === PYTHON_HELPER_FILE || name === "fix-diffs" || name === SCRIPT || name.startsWith("."))
      continue;
    const abs = join(codeDir, name);
    if (statSync(abs).isFile()) copyFileSync(abs, join(to, name));
  }
}

/** Saves the script back, or says why not. */
export async function saveBack(input: SaveBackInput): Promise<SaveBackResult> {
  const { workflow: wf, step, script } = input;
  if (script === undefined) return { saved: null, reason: "no main.py was written" };
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
  const target = join(savedDir, SCRIPT);
  const before = readIf(target);
  const changed = before !== script;
  let diffRel: string | null = null;
  if (changed) {
    mkdirSync(savedDir, { recursive: true });
    const prev = savedVersion(savedDir);
    const text = await unifiedDiff(before, script, {
      from: before === undefined ? "/dev/null" : `main.py (v${prev})`,
      to: `main.py (v${before === undefined ? 1 : prev + 1})`,
    });
    writeFileAtomic(target, script);
    saveFolder(input.codeDir, savedDir);
    const meta = noteSavedScript(savedDir, Buffer.from(script), input.now, step.id);
    const file = join(diffsDir(wf, step.id), `v${meta.script_version}-${input.runId}.diff`);
    writeFileAtomic(file, `${text}\n`);
    diffRel = relative(home, file);
  }
  saveContract(savedDir, step);
  // The build's verdict is one run of the saved script in its metadata.
  const last = input.lastRun;
  const meta = recordScriptRun(savedDir, {
    stepId: step.id,
    scriptBytes: Buffer.from(script),
    success: input.passed,
    exitCode: last?.exitCode ?? null,
    durationMs: Math.round(last?.durationMs ?? 0),
    groupName: input.groupName,
    runFolder: relative(home, input.outputDir),
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
