/**
 * The fast path of one learned step in a run: static review → a fresh `code/` copy of the saved
 * folder (plus the tool bridge's script helper) → a clean output folder → the saved script through
 * `exec/` under write protection, with the run's tool bridge → output validation →
 * `script_metadata.json`. No model is ever called, and nothing in the workflow's folder is written:
 * the working copy, the outputs and the run history live in the run's home (layout.ts `RunHome`),
 * and the script may write its own output folder only.
 *
 * Outcomes (types.ts `StepOutcome`): `passed`, `script_failed`, `validation_failed`,
 * `execution_and_validation_failed` (all recorded against the script); `missing_script`,
 * `review_blocked` (the script did not run); `harness_failed` (the process could not be started —
 * python3 missing, bubblewrap failing, the tool bridge not starting — or the run was cancelled:
 * nothing is recorded against the script).
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { copyFile, cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { helperFiles, JAVASCRIPT_HELPER_FILE, PYTHON_HELPER_FILE } from "../bridge/helper-files.js";
import { type Clock, type Redactor, systemClock } from "../core/index.js";
import { Forkserver, fitsForkserver, pooledServer } from "../exec/forkserver.js";
import {
  buildEnv,
  compileConfinement,
  confineLauncher,
  DEFAULT_KILL_GRACE_MS,
  isSandboxSetupFailure,
  launcherTimedOut,
  type ProcessRunner,
  type RunResult,
  readRoots,
  realProcessRunner,
  resolveNode,
  type SandboxInfo,
  Supervise,
  scriptConfinement,
  stepDirPrefix,
  wrapCommand,
} from "../exec/index.js";
import { applyForbidden, isWithin } from "../exec/read-roots.js";
import { type ReviewReport, reviewScript } from "../review/index.js";
import { CONTRACT_FILE, changedContractFields } from "./contract.js";
import {
  historyDir,
  learningsDir,
  type RunHome,
  type SavedScript,
  savedScript,
  stepCodeDir,
  stepOutputDir,
  workflowHome,
} from "./layout.js";
import { recordScriptRun, recordScriptRunAsync, SCRIPT_METADATA_FILE, type ScriptRun } from "./metadata.js";
import { classifyScriptRun, describeScriptFailure, type FailureReason } from "./outcomes.js";
import { rememberedPython } from "./python-memo.js";
import { ERROR_MAX_ISSUES, ERROR_TAIL_BYTES, STEP_MAX_CAPTURE_BYTES } from "./run-limits.js";
import { StepOutcome, type ValidationResult, type Workflow, type WorkflowStep } from "./types.js";
import { validateOutputs } from "./validation.js";

/** The tool bridge a script may call: its address and token (`MCP_API_URL`, `MCP_API_TOKEN`). */
export interface BridgeEndpoint {
  url: string;
  token: string;
}

/** Starts the run's tool bridge on first use and gives its endpoint; rejects when it cannot start. */
export type BridgeProvider = () => Promise<BridgeEndpoint>;

export interface LearnedStepInput {
  workflow: Workflow;
  step: WorkflowStep;
  runId: string;
  /** Where the run writes: the step's output folder and working copy, the script's run history. */
  home: RunHome;
  /** Output folders of the step's `context_dependencies`, in order (passed as argv). */
  dependencyDirs: readonly string[];
  /** `VAR_*` values. */
  variables: Record<string, string>;
  /** `SECRET_*` values (registered with `redactor` by the caller). */
  secrets: Record<string, string>;
  /**
   * The tool bridge; when given, `MCP_API_URL` / `MCP_API_TOKEN` reach the script. A provider is
   * called only once the script is about to run (after review and the interpreter lookup); when it
   * rejects, the step is a harness failure.
   */
  bridge?: BridgeEndpoint | BridgeProvider;
  /** Where PATH, HOME, LANG… come from. Default `process.env`. */
  baseEnv?: NodeJS.ProcessEnv;
  timeoutSeconds: number;
  groupName: string | null;
  sandbox: SandboxInfo;
  /**
   * The read-root policy of the run (exec/read-roots.ts): `sandbox.read_roots` of the config and
   * the secret folders (the workspace's `.ratchet/`) no root may expose. The workflow folder's own
   * `.ratchet/` is always forbidden.
   */
  readPolicy?: { readRoots: readonly string[]; secretDirs: readonly string[] };
  redactor: Redactor;
  signal?: AbortSignal;
  /** The script's output as it arrives (already redacted), for live progress. Default: none. */
  onOutput?: (text: string, stream: "stdout" | "stderr") => void;
  runner?: ProcessRunner;
  clock?: Clock;
  /** Static review (default: `reviewScript` of `review/`). */
  review?: typeof reviewScript;
  /**
   * The Builder's attempts: run the working copy already in `code/` (`main.py`) instead of the
   * saved script; no contract check, nothing copied from `learnings/`, no metadata recorded.
   */
  workingCopy?: boolean;
  /**
   * Leave the `script_metadata.json` update to the caller: the result carries it as
   * `recordMetadata` instead of it being written before this returns. A run writes it while the
   * next step's script is running (see `whileRunning`), off the critical path.
   */
  deferMetadata?: boolean;
  /**
   * Called once the script's process has been started, while it runs (the run's deferred work),
   * with the folder this script's private TMPDIR was made in (under Landlock): the next step's
   * preparation may make its own there ahead ({@link prepareLearnedStep}'s `tmpParent`).
   */
  whileRunning?: (ahead: { tmpParent: string | undefined }) => void;
  /** The step prepared ahead ({@link prepareLearnedStep}); prepared here when absent. */
  prepared?: Promise<PreparedStep | LearnedStepResult>;
}

export interface LearnedStepResult {
  outcome: StepOutcome;
  /** True when the saved script actually ran (zero model tokens). */
  fastPath: boolean;
  exitCode: number | null;
  durationMs: number | null;
  /** The real error (redacted), null when the step passed. */
  error: string | null;
  /** The log kept in the ledger: command line, write protection, the script's output, validation (redacted). */
  log: string;
  /** Write protection the script ran under. */
  protection: string;
  /** Metadata failure reason when recorded. */
  failureReason: FailureReason | null;
  /** Whether `script_metadata.json` was updated. */
  metadataRecorded: boolean;
  /** A note when metadata could not be written (the step's outcome stands). */
  metadataError?: string;
  validation?: ValidationResult;
  review?: ReviewReport;
  /** The script exited non-zero but its outputs validated. */
  nonZeroAccepted?: boolean;
  /** The script's own output (stdout and stderr as written, redacted), when it ran. */
  output?: string;
  /**
   * With `deferMetadata`: writes `script_metadata.json` (on the thread pool) and sets
   * `metadataRecorded` or `metadataError` once written. Never rejects.
   */
  recordMetadata?: () => Promise<void>;
  /** With `deferMetadata`: the removal of the script's private TMPDIR, done after this returns. Never rejects. */
  tmpRemoved?: Promise<void>;
}

/** The result of a step whose script did not run (`log` defaults to the error). */
export function notRun(outcome: StepOutcome, error: string, log = error): LearnedStepResult {
  return {
    outcome,
    fastPath: false,
    exitCode: null,
    durationMs: null,
    error,
    log,
    protection: "none",
    failureReason: null,
    metadataRecorded: false,
  };
}

/** Removes everything in `outputDir` except `keep` (the code folder). */
async function cleanExcept(outputDir: string, keep: string): Promise<void> {
  for (const name of await readdir(outputDir)) {
    const abs = join(outputDir, name);
    if (abs !== keep) await rm(abs, { recursive: true, force: true });
  }
}

/**
 * Puts the tool bridge's script helper for `language` into `codeDir`, next to the script, so that
 * `from ratchet_tools import call_mcp` (Python runs from `code/`) and
 * `import { callMcp } from "./ratchet-tools.mjs"` work. Only where the helper is not shared (see
 * {@link sharedHelperDir}). Never written under `learnings/`, and not part of the saved script
 * (`script_sha256` is the hash of `main.py` / `main.mjs` alone).
 */
async function copyHelper(language: "python" | "javascript", codeDir: string): Promise<void> {
  const helpers = helperFiles();
  if (language === "python") await copyFile(helpers.python, join(codeDir, PYTHON_HELPER_FILE));
  else await copyFile(helpers.javascript, join(codeDir, JAVASCRIPT_HELPER_FILE));
}

/**
 * The folder of the package's own `ratchet_tools.py` when a Python step imports it from there
 * (on `PYTHONPATH`, one more read root) instead of from a copy in its `code/`: one file less
 * created per step. Only where the script cannot write there: Python under `ratchet-confine`
 * (Landlock checks the file's real place, and the launcher refuses metadata calls outside the write
 * roots), and only when the folder is not a forbidden read and lies outside the runs folder and
 * `/tmp` (the only write roots a step gets). Elsewhere (JavaScript, whose relative import needs the
 * file next to the script; bubblewrap; no write protection) the helper is copied as before.
 */
export function sharedHelperDir(
  language: "python" | "javascript",
  sandbox: SandboxInfo,
  where: { home: RunHome; forbid: { home?: string | undefined; secretDirs: readonly string[] } },
): string | undefined {
  if (language !== "python" || sandbox.python !== "landlock") return undefined;
  if (confineLauncher(sandbox).kind !== "ratchet-confine") return undefined;
  const dir = dirname(helperFiles().python);
  if (isWithin(where.home.runs, dir) || isWithin(dir, where.home.runs) || isWithin(tmpdir(), dir))
    return undefined;
  return applyForbidden([dir], where.forbid).length === 1 ? dir : undefined;
}

/** What no read root of a step may expose: `$HOME`, the workflow's and the workspace's `.ratchet/`. */
function stepForbid(input: Pick<LearnedStepInput, "workflow" | "baseEnv" | "readPolicy">): {
  home: string | undefined;
  secretDirs: string[];
} {
  return {
    home: (input.baseEnv ?? process.env).HOME,
    secretDirs: [join(workflowHome(input.workflow), ".ratchet"), ...(input.readPolicy?.secretDirs ?? [])],
  };
}

/**
 * Copies the saved folder into `codeDir`, leaving out `diffs/`, `script_metadata.json`, the
 * contract and a file named like the helper (the helper must match the bridge). The script itself
 * is written from `script` — the bytes that were reviewed — not read again. `fresh`: `codeDir`'s
 * parent was just created by this preparation (empty), so no old copy is removed first.
 */
async function copySavedFolder(
  from: string,
  codeDir: string,
  script: { name: string; bytes: Buffer; helper: string },
  fresh: boolean,
): Promise<void> {
  // In a folder just created there is no old copy; `mkdir` without `recursive` fails if one appeared.
  if (!fresh) await rm(codeDir, { recursive: true, force: true });
  await mkdir(codeDir, { recursive: !fresh });
  await writeFile(join(codeDir, script.name), script.bytes, { flag: "wx" });
  // Usually just main.py: plain files are copied one by one (cp's per-entry checks cost more
  // than the copy); sub-folders other than diffs/ are copied whole.
  for (const e of await readdir(from, { withFileTypes: true })) {
    if (e.name === "diffs" || e.name === SCRIPT_METADATA_FILE || e.name === CONTRACT_FILE) continue;
    if (e.name === script.name || e.name === script.helper) continue;
    const src = join(from, e.name);
    const dst = join(codeDir, e.name);
    if (e.isFile()) await copyFile(src, dst);
    else if (e.isDirectory()) await cp(src, dst, { recursive: true });
    // Links are never written by save-back: one found here is not copied (nor followed).
  }
}

function formatFindings(r: ReviewReport): string {
  return r.findings
    .filter((f) => f.severity === "blocking")
    .map((f) => `line ${f.line} ${f.rule} ${f.id}: ${f.message} (fix: ${f.fix})`)
    .join("\n");
}

/** The bytes of `path` when it is a regular file (not a link, not a special file); else undefined. */
function readRegularFile(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP") return undefined;
    throw e;
  }
  try {
    return fstatSync(fd).isFile() ? readFileSync(fd) : undefined;
  } finally {
    closeSync(fd);
  }
}

/** A learned step made ready to run: reviewed, copied into `code/`, its output folder clean. */
export interface PreparedStep {
  kind: "prepared";
  saved: SavedScript;
  scriptName: string;
  scriptBytes: Buffer;
  report: ReviewReport;
  outputDir: string;
  codeDir: string;
  /** The package's helper folder the script imports `ratchet_tools` from ({@link sharedHelperDir}), when not copied. */
  helperDir: string | undefined;
  /** A private TMPDIR made ahead in `tmpParent`; used only if the step's own TMPDIR goes there too. */
  tmp?: { parent: string; dir: string };
}

/**
 * Everything before the script starts: find the script, check its contract, review it, then give it
 * a fresh working copy and a clean output folder. Returns the step's result instead when it cannot
 * run (missing script, changed contract, blocked review). A run prepares the next step this way
 * while the current step's script runs.
 */
export async function prepareLearnedStep(
  input: Pick<
    LearnedStepInput,
    "workflow" | "step" | "runId" | "home" | "workingCopy" | "review" | "sandbox" | "baseEnv" | "readPolicy"
  > & {
    /**
     * Where the previous script's private TMPDIR was made: this step's is made there now (on the
     * thread pool, while that script runs) instead of on the critical path. Default: not ahead.
     */
    tmpParent?: string | undefined;
  },
): Promise<PreparedStep | LearnedStepResult> {
  const { workflow: wf, step } = input;
  const savedDir = learningsDir(wf, step.id);
  const working = input.workingCopy === true;
  const saved: SavedScript | undefined = working
    ? { path: join(stepCodeDir(input.home, input.runId, step.id), "main.py"), language: "python" }
    : savedScript(wf, step.id);
  if (!saved || (working && !existsSync(saved.path))) {
    const where = working
      ? (saved?.path ?? "main.py")
      : relative(workflowHome(wf), saved?.path ?? join(savedDir, "main.py"));
    return notRun(
      StepOutcome.MissingScript,
      working ? `no script at ${where}` : `no saved script at ${where}: build it with \`ratchet build\``,
    );
  }
  if (!working) {
    const changed = changedContractFields(savedDir, step);
    if (changed.length > 0)
      return notRun(
        StepOutcome.ContractChanged,
        `contract changed: rebuild with \`ratchet build\` (step ${step.id}: ${changed.join(", ")} changed since the script was saved)`,
      );
  }
  const scriptName = saved.language === "python" ? "main.py" : "main.mjs";
  // Save-back writes regular files only; a link planted in the saved folder is never followed. One
  // open (no link followed, no FIFO waited on) checks and reads the same file: nothing can be
  // swapped in between the check and the read.
  const scriptBytes = readRegularFile(saved.path);
  if (!scriptBytes)
    return notRun(
      StepOutcome.MissingScript,
      `${relative(workflowHome(wf), saved.path)} is not a regular file (a link or a special file)`,
    );

  // 1. Static review: blocking findings refuse the fast path (a run never repairs).
  const declared = [
    ...Object.keys(wf.variables).map((n) => `VAR_${n}`),
    ...wf.secrets.map((n) => `SECRET_${n}`),
  ];
  const report = await (input.review ?? reviewScript)(scriptBytes.toString("utf8"), {
    language: saved.language,
    declared,
    filename: scriptName,
  });
  if (!report.ok) {
    const findings = formatFindings(report);
    const error = `static review blocked the saved script (${report.blocking} blocking finding${report.blocking === 1 ? "" : "s"}):\n${findings}`;
    return { ...notRun(StepOutcome.ReviewBlocked, error), review: report };
  }

  // 2. Fresh working copy and a clean output folder.
  const outputDir = stepOutputDir(input.home, input.runId, step.id);
  const codeDir = stepCodeDir(input.home, input.runId, step.id);
  // On the thread pool: a run prepares the next step while a script runs (the event loop stays free).
  // A folder this call created is empty (no script of the run can write into it: each may write
  // its own output folder only), so there is nothing to clean nor an old `code/` to remove.
  const fresh = (await mkdir(outputDir, { recursive: true })) !== undefined;
  if (!fresh) await cleanExcept(outputDir, codeDir);
  const helperDir = sharedHelperDir(saved.language, input.sandbox, {
    home: input.home,
    forbid: stepForbid(input),
  });
  const helper = saved.language === "python" ? PYTHON_HELPER_FILE : JAVASCRIPT_HELPER_FILE;
  if (!working)
    await copySavedFolder(savedDir, codeDir, { name: scriptName, bytes: scriptBytes, helper }, fresh);
  else if (helperDir) await rm(join(codeDir, helper), { force: true });
  if (!helperDir) await copyHelper(saved.language, codeDir);
  // An empty folder no other script can write (each may write its own TMPDIR and output folder only).
  const tmp = input.tmpParent
    ? { parent: input.tmpParent, dir: await mkdtemp(join(input.tmpParent, stepDirPrefix())) }
    : undefined;
  return {
    kind: "prepared",
    saved,
    scriptName,
    scriptBytes,
    report,
    outputDir,
    codeDir,
    helperDir,
    ...(tmp ? { tmp } : {}),
  };
}

/**
 * The dependency output folders a script may read. They live in the run home, which may itself lie
 * inside the workspace's `.ratchet/` (a secret folder no read root may be inside): the run home's
 * runs folder is not secret, so a dependency folder beneath it is kept — still refused when it is
 * not beneath it, or when it would expose `$HOME` or any other secret folder.
 */
export function dependencyReadRoots(
  home: RunHome,
  dirs: readonly string[],
  forbid: { home?: string | undefined; secretDirs: readonly string[] },
): string[] {
  const inRuns = dirs.filter((d) => isWithin(home.runs, d) && d !== home.runs);
  return applyForbidden(inRuns, {
    home: forbid.home,
    secretDirs: forbid.secretDirs.filter((d) => !isWithin(d, home.runs)),
  });
}

let lastReadRoots: { key: string; roots: string[] } | undefined;

/**
 * {@link readRoots}, computed once per run for the same inputs (every step of a plain workflow
 * has the same ones; each computation checks ~40 paths). Never across runs: a folder added to the
 * workflow's home between two runs is a read root of the next one.
 */
function runReadRoots(runId: string, spec: Parameters<typeof readRoots>[0]): string[] {
  const key = JSON.stringify([runId, spec]);
  if (lastReadRoots?.key !== key) lastReadRoots = { key, roots: readRoots(spec) };
  return [...lastReadRoots.roots];
}

/** Runs one `learn_code` step's saved script. Never throws for a failure of the step itself. */
export async function runLearnedStep(input: LearnedStepInput): Promise<LearnedStepResult> {
  const { workflow: wf, step, redactor } = input;
  const clock = input.clock ?? systemClock;
  const working = input.workingCopy === true;
  const ready = await (input.prepared ?? prepareLearnedStep(input));

  if (!("kind" in ready)) return ready;
  const { saved, scriptName, scriptBytes, report, outputDir, codeDir, helperDir } = ready;
  // A TMPDIR made ahead and not used (a harness failure first, or a different folder): removed.
  let aheadTmp = ready.tmp;
  const dropAheadTmp = (): void => {
    if (aheadTmp) rmSync(aheadTmp.dir, { recursive: true, force: true });
    aheadTmp = undefined;
  };

  // 3. The interpreter, the tool bridge, the command line under write protection.
  const baseEnv = input.baseEnv ?? process.env;
  const interpreterName = saved.language === "python" ? "python3" : "node";
  // The real interpreter, not a version manager's shim: its prefixes become the read roots.
  const resolved =
    saved.language === "python" ? await rememberedPython(baseEnv, input.home.cache) : resolveNode();

  const interpreter = resolved?.executable;
  const shownCmd =
    `$ ${interpreterName}${saved.language === "python" ? " -B" : ""} ${scriptName} ${input.dependencyDirs.join(" ")}`.trimEnd();
  if (!interpreter) {
    dropAheadTmp();
    const error = `harness failure: could not start the script: command not found: python3 (searched PATH=${baseEnv.PATH ?? "<unset>"}); nothing was recorded against the script`;
    return notRun(StepOutcome.HarnessFailed, error, `${shownCmd}\n${error}`);
  }
  // The bridge starts (on a run's first script) while the pre-started interpreter below does;
  // it is awaited before anything of the step is created.
  const bridgeReady: Promise<BridgeEndpoint | undefined> =
    typeof input.bridge === "function" ? input.bridge() : Promise.resolve(input.bridge);
  bridgeReady.catch(() => {});
  // Under Landlock /tmp stays read-only: the script gets a private TMPDIR, removed after it ends
  // (by the launcher even when Ratchet is killed; its name carries our pid for the next run's sweep).
  const underLandlock =
    saved.language === "python"
      ? input.sandbox.python === "landlock"
      : input.sandbox.javascript.startsWith("landlock");
  const forbid = stepForbid(input);
  const ownReadRoots = runReadRoots(input.runId, {
    interpreters: resolved?.roots ?? [],
    own: [workflowHome(wf), ...(helperDir ? [helperDir] : [])],
    extra: input.readPolicy?.readRoots ?? [],
    forbid,
  });
  // The pre-started interpreter (exec/forkserver.ts), or why this step takes a plain start: on by
  // default for Python under ratchet-confine, off with `RATCHET_NO_FORKSERVER=1` (docs/security.md).
  const fork =
    saved.language === "python" && underLandlock
      ? await stepForkserver({
          input,
          interpreter,
          baseEnv,
          ownReadRoots,
          forbid,
          source: scriptBytes,
          helperDir,
        })
      : undefined;
  let bridge: BridgeEndpoint | undefined;
  try {
    bridge = await bridgeReady;
  } catch (e) {
    dropAheadTmp();
    const error = redactor.redact(
      `harness failure: ${e instanceof Error ? e.message : String(e)}; nothing was recorded against the script`,
    );
    return notRun(StepOutcome.HarnessFailed, error, `${shownCmd}\n${error}`);
  }
  const tmpParent = underLandlock
    ? fork instanceof Forkserver && fork.tmpRoot
      ? fork.tmpRoot
      : tmpdir()
    : undefined;
  let tmpDir: string | undefined;
  if (tmpParent && aheadTmp?.parent === tmpParent) {
    tmpDir = aheadTmp.dir;
    aheadTmp = undefined;
  } else {
    dropAheadTmp();
    tmpDir = tmpParent ? mkdtempSync(join(tmpParent, stepDirPrefix())) : undefined;
  }
  const dropTmp = (): void => {
    if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  };
  // Once the script is gone: in a run, off the critical path (the run waits for it before it ends).
  let tmpRemoved: Promise<void> | undefined;
  const dropTmpLater = (): void => {
    if (!input.deferMetadata || !tmpDir) {
      dropTmp();
      return;
    }
    tmpRemoved = rm(tmpDir, { recursive: true, force: true }).catch(() => {});
  };
  const stepEnv = (): Record<string, string> =>
    buildEnv({
      inherit: "minimal",
      base: baseEnv,
      set: {
        ...input.variables,
        ...input.secrets,
        ...(bridge ? { MCP_API_URL: bridge.url, MCP_API_TOKEN: bridge.token } : {}),
        ...(tmpDir ? { TMPDIR: tmpDir } : {}),
        // The shared helper (sys.path[1], before the standard library, as a copy in code/ was sys.path[0]).
        ...(helperDir ? { PYTHONPATH: helperDir } : {}),
        PYTHONDONTWRITEBYTECODE: "1",
        // Keeps stdout and stderr in the order the script wrote them in the captured log.
        PYTHONUNBUFFERED: "1",
        // Last, so nothing a workflow declares (nor the bridge) can override them.
        STEP_OUTPUT_DIR: outputDir,
        STEP_EXECUTION_DIR: codeDir,
      },
    });
  let env = stepEnv();
  const scriptCommand = () => ({
    language: saved.language,
    interpreter,
    script: scriptName,
    args: input.dependencyDirs,
    codeDir,
    outputDir,
    // The interpreter's folder too: a python3 installed under /tmp must stay visible in the sandbox.
    readDirs: [workflowHome(wf), ...input.dependencyDirs, dirname(interpreter)],
    readRoots: [...ownReadRoots, ...dependencyReadRoots(input.home, input.dependencyDirs, forbid)],
    ...(tmpDir ? { tmpDir, cleanup: [tmpDir] } : {}),
    timeoutMs: input.timeoutSeconds * 1000,
  });
  let cmd = scriptCommand();
  const wrapped = wrapCommand(cmd, input.sandbox);
  const protectionNote =
    wrapped.protection === "none"
      ? `[write protection: none — ${input.sandbox.reason}; static review only]`
      : `[write protection: ${wrapped.protection}]`;

  const live = input.onOutput ? liveLines(input.onOutput, (t) => redactor.redact(t)) : undefined;
  const started = clock.now();
  // Our own signal too: when the caller's work during the run fails, the script is stopped before
  // the error goes up (nothing keeps running unrecorded).
  const stop = new AbortController();
  const signal = input.signal ? AbortSignal.any([input.signal, stop.signal]) : stop.signal;
  const plainStart = (w: typeof wrapped): Promise<RunResult> =>
    (input.runner ?? realProcessRunner).run({
      command: w.command,
      args: w.args,
      cwd: codeDir,
      env,
      timeoutMs: w.runnerTimeoutMs,
      maxCaptureBytes: STEP_MAX_CAPTURE_BYTES,
      signal,
      ...(live ? { onOutput: live.push } : {}),
    });
  let startNote = fork === undefined ? "" : fork instanceof Forkserver ? "" : fork.fallback;
  const forkStart = async (server: Forkserver): Promise<RunResult> => {
    const own = scriptConfinement(cmd);
    const r = await server.run({
      argv: [scriptName, ...input.dependencyDirs],
      cwd: codeDir,
      env,
      timeoutMs: own.timeoutMs,
      killGraceMs: own.killGraceMs,
      maxCaptureBytes: STEP_MAX_CAPTURE_BYTES,
      signal,
      ...(live ? { onOutput: live.push } : {}),
      // The step's own roots, applied in the child after the fork, before any script byte runs.
      confine: { reads: own.readRoots, writes: own.writeRoots, files: own.writeFiles },
    });
    // Nothing of the script ran (the server ended, or the child could not be confined): a plain start.
    if (!r.spawnError || signal.aborted) return r;
    startNote = `the pre-started interpreter could not run it (${r.spawnError.message})`;
    dropTmp();
    tmpDir = mkdtempSync(join(tmpdir(), stepDirPrefix()));
    env = stepEnv();
    cmd = scriptCommand();
    return plainStart(wrapCommand(cmd, input.sandbox));
  };
  const running = fork instanceof Forkserver ? forkStart(fork) : plainStart(wrapped);
  // The caller's work while the script runs (the ledger's start, the previous step's metadata, the
  // next step's preparation) waits one turn of the event loop: the request to the pre-started
  // interpreter is written from a queued microtask, and everything synchronous done before it
  // would delay the script's start (a plain start's spawn has already happened by now).
  if (input.whileRunning) {
    // A runner that throws is reported below, where `running` is awaited, not as unhandled meanwhile.
    running.catch(() => {});
    await requestSent();
  }
  try {
    input.whileRunning?.({ tmpParent });
  } catch (e) {
    stop.abort();
    await running;
    dropTmp();
    throw e;
  }
  const raw: RunResult = await running;
  live?.flush();
  dropTmpLater();
  // The launcher's own time limit (v2) ends the script with exit 124 and its one line.
  const r: RunResult = launcherTimedOut(wrapped, raw.exitCode, raw.stderr) ? { ...raw, timedOut: true } : raw;
  const durationMs = r.durationMs;
  const output = redactor.redact(r.combined);
  const startLine =
    fork === undefined
      ? ""
      : startNote === ""
        ? "[started by the pre-started interpreter, confined to the step's own roots in the child]\n"
        : `[plain start: ${startNote}]\n`;
  const header = `${shownCmd}\n${protectionNote}\n${startLine}`;

  // 4. Harness failures and cancellations are not the script's: nothing recorded against it.
  if (r.spawnError || isSandboxSetupFailure(wrapped.protection, r.exitCode, r.stderr) || r.cancelled) {
    const why = r.spawnError
      ? r.spawnError.message
      : r.cancelled
        ? "the run was cancelled"
        : r.stderr.trim().split("\n")[0];
    const error = redactor.redact(
      `harness failure: could not ${r.cancelled ? "finish" : "start"} the script: ${why}; nothing was recorded against the script`,
    );
    return {
      ...notRun(
        StepOutcome.HarnessFailed,
        error,
        `${header}${output}${output && !output.endsWith("\n") ? "\n" : ""}${error}`,
      ),
      durationMs,
      protection: wrapped.protection,
      ...(tmpRemoved ? { tmpRemoved } : {}),
    };
  }

  // 5. Validate the outputs and classify.
  const validation = validateOutputs(outputDir, step.validation);
  const somethingToValidate =
    (step.validation?.files?.length ?? 0) > 0 || (step.validation?.db_checks?.length ?? 0) > 0;
  const facts = { exitCode: r.exitCode, signal: r.signal, timedOut: r.timedOut, cancelled: r.cancelled };
  const c = classifyScriptRun(facts, validation, { somethingToValidate });
  const rawError = describeScriptFailure(
    c,
    facts,
    { stderr: r.stderr, combined: r.combined, issues: validation.issues },
    { timeoutSeconds: input.timeoutSeconds, tailChars: ERROR_TAIL_BYTES, maxIssues: ERROR_MAX_ISSUES },
  );
  const error = rawError === null ? null : redactor.redact(rawError);
  const footer = `${output === "" || output.endsWith("\n") ? "" : "\n"}--- exit_code=${r.exitCode ?? r.signal}, runtime=${(durationMs / 1000).toFixed(2)}s${r.timedOut ? ", timed out" : ""} ---\n`;
  const validationText = validation.ok
    ? `validation: ok${c.nonZeroAccepted ? ` (the script exited with ${r.exitCode}, but its outputs validate: counted as success)` : ""}`
    : `validation: ${validation.issues.length} issue(s)\n${validation.issues.map((i) => `  ${[i.file, i.path].filter(Boolean).join(" ")} ${i.check}: ${i.message}`).join("\n")}`;
  const log = `${header}${output}${footer}${redactor.redact(validationText)}`;

  // 6. script_metadata.json, in the run home (a run writes nothing in the workflow's folder).
  const result: LearnedStepResult = {
    outcome: c.outcome,
    fastPath: true,
    exitCode: r.exitCode,
    durationMs,
    error,
    log,
    protection: wrapped.protection,
    failureReason: c.failureReason,
    metadataRecorded: false,
    validation,
    review: report,
    nonZeroAccepted: c.nonZeroAccepted,
    output,
    ...(tmpRemoved ? { tmpRemoved } : {}),
  };
  if (working) return result;
  const scriptRun: ScriptRun = {
    stepId: step.id,
    scriptBytes,
    success: c.success,
    exitCode: r.exitCode,
    durationMs: Math.round(durationMs),
    groupName: input.groupName,
    runFolder: outputDir,
    failureReason: c.failureReason,
    errorSummary: error,
    locked: step.agent_configs.lock_code === true,
    now: new Date(started + durationMs),
  };
  const history = historyDir(input.home, wf, step.id);
  const noteFailure = (e: unknown): void => {
    result.metadataError = `script_metadata.json not updated: ${e instanceof Error ? e.message : String(e)}`;
    result.log += `\n[${result.metadataError}]`;
  };
  if (input.deferMetadata)
    result.recordMetadata = () =>
      recordScriptRunAsync(history, scriptRun).then(() => {
        result.metadataRecorded = true;
      }, noteFailure);
  else
    try {
      recordScriptRun(history, scriptRun);
      result.metadataRecorded = true;
    } catch (e) {
      noteFailure(e);
    }
  return result;
}

/**
 * Resolves in the check phase of this turn of the event loop, once every microtask queued so far
 * has run (the forkserver's request is written from one). Whatever comes first, the step is still
 * marked started before it is closed (run-loop.ts calls its start again after the script).
 */
function requestSent(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Largest partial line held back for live output before it is passed on anyway. */
const LIVE_MAX_PENDING = 64 * 1024;

/**
 * Live output passed on in whole lines, each redacted (a secret split across two chunks is still
 * caught); `flush` passes on what is left once the process ended.
 */
function liveLines(
  emit: (text: string, stream: "stdout" | "stderr") => void,
  redact: (text: string) => string,
): { push: (chunk: Buffer, stream: "stdout" | "stderr") => void; flush: () => void } {
  const pending = { stdout: "", stderr: "" };
  const pass = (text: string, stream: "stdout" | "stderr") => {
    if (text !== "") emit(redact(text), stream);
  };
  return {
    push(chunk, stream) {
      const text = pending[stream] + chunk.toString("utf8");
      const nl = text.lastIndexOf("\n");
      if (nl === -1 && text.length < LIVE_MAX_PENDING) {
        pending[stream] = text;
        return;
      }
      const cut = nl === -1 ? text.length : nl + 1;
      pending[stream] = text.slice(cut);
      pass(text.slice(0, cut), stream);
    },
    flush() {
      for (const stream of ["stdout", "stderr"] as const) {
        pass(pending[stream], stream);
        pending[stream] = "";
      }
    },
  };
}

/** Whether a saved script folder exists for a step (used to choose which sandboxes to probe). */
export function savedLanguage(wf: Workflow, stepId: string): "python" | "javascript" | undefined {
  const s = savedScript(wf, stepId);
  return s && existsSync(s.path) ? s.language : undefined;
}

/**
 * The pooled pre-started interpreter for a Python step under ratchet-confine, or why the step takes
 * a plain start (docs/security.md "The pre-started interpreter"). One server per workflow, read
 * roots and environment base: it is started THROUGH THE DOOR with the common base of the
 * workflow's steps — the same read roots but the dependency folders, plus the run home's runs
 * folder (where every step's output and working copy live); writes only under the runs folder and
 * its own TMPDIR parent; no `/proc/self`; no secrets, variables or bridge token in its environment.
 * Each run then narrows that in its child to exactly the step's own confinement.
 */
async function stepForkserver(
  o: ForkserverSpec & { source: Buffer },
): Promise<Forkserver | { fallback: string }> {
  const refused = forkserverRefusal(o.input, o.baseEnv);
  if (refused) return { fallback: refused };
  const misfit = fitsForkserver(o.source.toString("utf8"));
  if (misfit) return { fallback: misfit };
  return pooledForkserver(o);
}

/** What the pooled server of a run's Python steps is started from (the script aside). */
interface ForkserverSpec {
  input: Pick<LearnedStepInput, "home" | "sandbox" | "runner">;
  interpreter: string;
  baseEnv: NodeJS.ProcessEnv;
  ownReadRoots: readonly string[];
  forbid: { home?: string | undefined; secretDirs: readonly string[] };
  /** On the server's `PYTHONPATH` too: its children keep the server's `sys.path` after `[0]`. */
  helperDir: string | undefined;
}

/** Why no Python step of this run may use the pre-started interpreter, whatever its script. */
function forkserverRefusal(
  input: Pick<LearnedStepInput, "sandbox" | "runner">,
  baseEnv: NodeJS.ProcessEnv,
): string | undefined {
  if (baseEnv.RATCHET_NO_FORKSERVER === "1") return "RATCHET_NO_FORKSERVER=1";
  if (input.runner) return "a process runner was given by the caller";
  if (input.sandbox.python !== "landlock") return "no confining launcher";
  const launcher = confineLauncher(input.sandbox);
  if (launcher.kind !== "ratchet-confine") return "no confining launcher";
  const f = launcher.features;
  if (!f.v2 || !f.reads || !f.signals || f.abi < 6)
    return "the launcher or kernel cannot scope a forked child (Landlock ABI 6 and a v2 launcher)";
  return undefined;
}

/** The pooled server for the spec's key: the one already started (or starting), else a new one. */
async function pooledForkserver(o: ForkserverSpec): Promise<Forkserver | { fallback: string }> {
  const { input } = o;
  const launcher = confineLauncher(input.sandbox);
  if (launcher.kind !== "ratchet-confine") return { fallback: "no confining launcher" };
  const runs = input.home.runs;
  // The server may read all of the runs folder: nothing secret may lie inside it.
  if ([...o.forbid.secretDirs, ...(o.forbid.home ? [o.forbid.home] : [])].some((d) => isWithin(runs, d)))
    return { fallback: "a secret folder lies inside the runs folder" };
  const env = buildEnv({
    inherit: "minimal",
    base: o.baseEnv,
    set: {
      PYTHONDONTWRITEBYTECODE: "1",
      PYTHONUNBUFFERED: "1",
      ...(o.helperDir ? { PYTHONPATH: o.helperDir } : {}),
    },
  });
  const reads = [...o.ownReadRoots, runs];
  const key = JSON.stringify([launcher.path, o.interpreter, reads, runs, Object.entries(env).sort()]);
  return pooledServer(key, async () => {
    const tmpRoot = mkdtempSync(join(tmpdir(), stepDirPrefix()));
    const door = compileConfinement(
      {
        readRoots: reads,
        writeRoots: [runs, tmpRoot],
        writeFiles: ["/dev/null"],
        env,
        timeoutMs: 0,
        killGraceMs: DEFAULT_KILL_GRACE_MS,
        supervise: Supervise.Confine,
        cleanup: [tmpRoot],
        procSelf: false,
      },
      launcher,
    );
    const s = await Forkserver.start({ door, interpreter: o.interpreter, cwd: runs, key });
    if (s instanceof Forkserver) s.tmpRoot = tmpRoot;
    else rmSync(tmpRoot, { recursive: true, force: true });
    return s;
  });
}

/**
 * Starts the pre-started interpreter a run's first step will ask for, before that step is even
 * prepared: while the run is recorded, the step reviewed and copied, the bridge started. The
 * server is exactly the one {@link stepForkserver} would start for the run's Python steps (the
 * same inputs, so the same pool key and the same confinement); the step then finds it in the pool,
 * still checks its own script ({@link fitsForkserver}) and takes a plain start when it does not fit.
 * Nothing is started when no Python step of the run could use it. Never throws: a server that
 * cannot start is the pool's kept fallback, which the step reports as its own.
 */
export function prestartForkserver(
  input: Pick<LearnedStepInput, "workflow" | "home" | "sandbox" | "baseEnv" | "readPolicy" | "runner">,
): void {
  const baseEnv = input.baseEnv ?? process.env;
  if (forkserverRefusal(input, baseEnv)) return;
  const started = (async () => {
    const resolved = await rememberedPython(baseEnv, input.home.cache);
    if (!resolved) return;
    const forbid = stepForbid(input);
    const helperDir = sharedHelperDir("python", input.sandbox, { home: input.home, forbid });
    const ownReadRoots = readRoots({
      interpreters: resolved.roots,
      own: [workflowHome(input.workflow), ...(helperDir ? [helperDir] : [])],
      extra: input.readPolicy?.readRoots ?? [],
      forbid,
    });
    // The server's working folder; the first step creates its folders inside it anyway. Created
    // here, not on the thread pool: the server's start then begins in the turn the answer came in.
    mkdirSync(input.home.runs, { recursive: true });
    await pooledForkserver({
      input,
      interpreter: resolved.executable,
      baseEnv,
      ownReadRoots,
      forbid,
      helperDir,
    });
  })();
  started.catch(() => {});
}
