/**
 * Workflow and run commands: `run`, `runs list|show`, `workflow run-saved|evidence|config`,
 * `doctor`. Thin: parse, call `workflow/`, print, return the exit status.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { formatGuarantees, killAllRunning } from "../exec/index.js";
import {
  cancelRun,
  doctor,
  ExecutionMode,
  isOrchestrator,
  loadWorkflow,
  MAX_STEP_TIMEOUT_SECONDS,
  type ModelStepRunner,
  PROMOTION_MIN_SUCCESSES,
  parseOnly,
  type RunReport,
  RunStatus,
  RunTrigger,
  recoverInterruptedRuns,
  resolveMode,
  runStoreOf,
  runWorkflow,
  type StepReport,
  type Workflow,
  type WorkflowStepRunRow,
  writeStepMode,
} from "../workflow/index.js";
import { type GlobalOptions, type LedgerContext, withLedgerContext } from "./context.js";
import { err, out } from "./io.js";
import { progressMode, progressPrinter } from "./run-progress.js";

/** Names a workflow folder may hold its file under, in order of preference. */
const WORKFLOW_FILES = ["workflow.yaml", "workflow.yml", "workflow.json"];

/**
 * Loads a workflow from a file, or from a folder holding `workflow.yaml|yml|json`.
 * @throws RatchetError `not_found` (exit 3) when there is no such file; schema errors as `loadWorkflow`.
 */
export function openWorkflow(arg: string): Workflow {
  if (!existsSync(arg))
    throw new RatchetError(ErrorCode.NotFound, `workflow ${arg} not found: no such file or folder`, {
      file: arg,
    });
  if (statSync(arg).isDirectory()) {
    const found = WORKFLOW_FILES.map((f) => join(arg, f)).find((p) => existsSync(p));
    if (!found)
      throw new RatchetError(
        ErrorCode.NotFound,
        `workflow folder ${arg} holds no ${WORKFLOW_FILES.join(", ")}`,
        { file: arg },
      );
    return loadWorkflow(found);
  }
  return loadWorkflow(arg);
}

function requireStep(wf: Workflow, stepId: string) {
  const step = wf.steps.find((s) => s.id === stepId);
  if (!step)
    throw new RatchetError(
      ErrorCode.StepNotFound,
      `workflow ${wf.id} has no step ${stepId} (steps: ${wf.steps.map((s) => s.id).join(", ")})`,
      { stepId, field: "step" },
    );
  return step;
}

/** `--var K=V` (repeatable) into a map. */
export function parseVars(values: readonly string[] | undefined): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const v of values ?? []) {
    const eq = v.indexOf("=");
    if (eq <= 0) throw new RatchetError(ErrorCode.Usage, `--var ${v}: expected NAME=value`, { field: "var" });
    vars[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return vars;
}

function parseTimeout(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_STEP_TIMEOUT_SECONDS)
    throw new RatchetError(
      ErrorCode.Usage,
      `--step-timeout must be a whole number of seconds from 1 to ${MAX_STEP_TIMEOUT_SECONDS} (got ${v})`,
      { field: "step-timeout" },
    );
  return n;
}

function parseTrigger(v: string | undefined): RunTrigger {
  if (v === undefined) return RunTrigger.Manual;
  const allowed = [RunTrigger.Manual, RunTrigger.Schedule, RunTrigger.Webhook] as string[];
  if (!allowed.includes(v))
    throw new RatchetError(ErrorCode.Usage, `--trigger must be one of ${allowed.join(", ")} (got ${v})`, {
      field: "trigger",
    });
  return v as RunTrigger;
}

const seconds = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(2)} s`);

function stepLine(s: {
  step_id: string;
  mode: string;
  fast_path: boolean | number;
  outcome: string | null;
  exit_code: number | null;
  duration_ms: number | null;
  tokens: number;
  error: string | null;
}): string {
  const mark = s.outcome === "passed" ? "✓" : s.outcome === null ? "…" : "✗";
  const head = `  ${mark} ${s.step_id}  mode=${s.mode}  fast_path=${s.fast_path ? "yes" : "no"}  outcome=${s.outcome ?? "running"}  exit=${s.exit_code ?? "-"}  duration=${seconds(s.duration_ms)}  tokens=${s.tokens}`;
  if (!s.error) return head;
  return `${head}\n${s.error
    .split("\n")
    .map((l) => `      ${l}`)
    .join("\n")}`;
}

/** Runs a workflow (or one step of it, for run-saved) with the CLI's signal handling. */
async function execute(
  ctx: LedgerContext,
  wf: Workflow,
  opts: Parameters<typeof runWorkflow>[2] & { json?: boolean; quiet?: boolean },
): Promise<RunReport> {
  const mode = progressMode(process.stdout.isTTY === true, process.env);
  const live = !opts.json && !opts.quiet && mode.live ? progressPrinter(mode, out) : undefined;
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    err(`ratchet: ${sig} received: cancelling the run`);
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await runWorkflow(ctx, wf, {
      ...opts,
      signal: controller.signal,
      onStarted: (r) => {
        if (opts.json || opts.quiet) return;
        out(`run ${r.run_id} of workflow ${wf.id} (plan ${r.plan_id})`);
        out(`write protection: ${r.write_protection.reason}`);
      },
      onProgress: (p) => {
        if (live) live(p);
        else if (!opts.json && !opts.quiet && p.kind === "step_finished") out(stepLine(p.step));
      },
    });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await killAllRunning();
  }
}

/**
 * The model wiring, loaded only when a selected step needs a model (a direct/code_exec step or an
 * orchestrator): a run of learned steps loads no model code.
 */
async function modelStepsIfNeeded(
  wf: Workflow,
  only: readonly string[] | undefined,
  workspaceDir: string,
  flagModel: string | undefined,
): Promise<ModelStepRunner | undefined> {
  const needs = wf.steps.some(
    (s) =>
      (only === undefined || only.includes(s.id)) &&
      (resolveMode(s, wf.defaults).mode !== ExecutionMode.LearnCode || isOrchestrator(s)),
  );
  if (!needs) return undefined;
  const { modelStepsFor } = await import("./build-commands.js");
  return modelStepsFor(workspaceDir, flagModel);
}

function finish(report: RunReport, json: boolean | undefined, quiet?: boolean): number {
  if (json) out(JSON.stringify(report, null, 2));
  if (quiet && !json) {
    // --quiet: nothing on stdout; a failure still names its steps on stderr.
    if (report.status !== "passed")
      for (const s of report.steps.filter((x) => x.outcome !== "passed"))
        err(`ratchet: step ${s.step_id} (${s.outcome}): ${s.error ?? "(no error text)"}`);
    return report.status === "passed" ? 0 : 8;
  }
  for (const r of report.recovered)
    err(`ratchet: run ${r} was interrupted (its owner process is gone): marked interrupted`);
  const failed: StepReport[] = report.steps.filter((s) => s.outcome !== "passed");
  if (report.status === "passed") {
    const tokens = report.steps.reduce((n, s) => n + s.tokens, 0);
    if (!json) out(`run ${report.run_id} passed: ${report.steps.length} step(s), ${tokens} tokens`);
    return 0;
  }
  if (!json) out(`run ${report.run_id} ${report.status}: ${report.error}`);
  for (const s of failed) err(`ratchet: step ${s.step_id} (${s.outcome}): ${s.error ?? "(no error text)"}`);
  return 8;
}

export async function cmdRun(
  workflowArg: string,
  opts: GlobalOptions & {
    var?: string[];
    group?: string;
    only?: string[];
    json?: boolean;
    quiet?: boolean;
    trigger?: string;
    stepTimeout?: string;
    model?: string;
    queue?: boolean;
    queueName?: string;
    wait?: boolean;
  },
): Promise<number> {
  const wf = openWorkflow(workflowArg);
  const vars = parseVars(opts.var);
  const only = parseOnly(opts.only);
  const timeout = parseTimeout(opts.stepTimeout);
  const trigger = parseTrigger(opts.trigger);
  if ((opts.queueName !== undefined || opts.wait) && !opts.queue)
    throw new RatchetError(ErrorCode.Usage, "--queue-name and --wait need --queue", { field: "queue" });
  if (opts.queue)
    return (await import("./worker-commands.js")).cmdEnqueue(wf, vars, only, {
      ...opts,
      trigger,
      ...(timeout !== undefined ? { stepTimeoutSeconds: timeout } : {}),
    });
  return withLedgerContext(opts, async (ctx) => {
    const modelSteps = await modelStepsIfNeeded(wf, only, ctx.workspace.dir, opts.model);
    const report = await execute(ctx, wf, {
      vars,
      ...(opts.group !== undefined ? { group: opts.group } : {}),
      ...(only ? { only } : {}),
      ...(modelSteps ? { modelSteps } : {}),
      trigger,
      ...(timeout !== undefined ? { stepTimeoutSeconds: timeout } : {}),
      json: Boolean(opts.json),
      quiet: Boolean(opts.quiet),
    });
    return finish(report, opts.json, opts.quiet);
  });
}

export async function cmdRunSaved(
  workflowArg: string,
  stepId: string,
  opts: GlobalOptions & { var?: string[]; group?: string; json?: boolean; stepTimeout?: string },
): Promise<number> {
  const wf = openWorkflow(workflowArg);
  const step = requireStep(wf, stepId);
  const mode = resolveMode(step, wf.defaults);
  if (mode.mode !== ExecutionMode.LearnCode)
    throw new RatchetError(
      ErrorCode.Usage,
      `step ${stepId} runs in ${mode.mode} mode (${mode.reason}): only learn_code steps have a saved script to run`,
      { stepId, field: "step" },
    );
  const vars = parseVars(opts.var);
  const timeout = parseTimeout(opts.stepTimeout);
  return withLedgerContext(opts, async (ctx) => {
    const report = await execute(ctx, wf, {
      vars,
      ...(opts.group !== undefined ? { group: opts.group } : {}),
      only: [stepId],
      trigger: RunTrigger.RunSaved,
      ...(timeout !== undefined ? { stepTimeoutSeconds: timeout } : {}),
      json: Boolean(opts.json),
    });
    return finish(report, opts.json);
  });
}

function parseLimit(v: string | undefined): number {
  const n = v === undefined ? 50 : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 10_000)
    throw new RatchetError(ErrorCode.Usage, `--limit must be an integer from 1 to 10000 (got ${v})`, {
      field: "limit",
    });
  return n;
}

export async function cmdRunsList(
  opts: GlobalOptions & { workflow?: string; json?: boolean; limit?: string; status?: string },
): Promise<number> {
  const limit = parseLimit(opts.limit);
  const statuses = Object.values(RunStatus) as string[];
  if (opts.status !== undefined && !statuses.includes(opts.status))
    throw new RatchetError(
      ErrorCode.Usage,
      `--status must be one of ${statuses.join(", ")} (got ${JSON.stringify(opts.status)})`,
      { field: "status" },
    );
  return withLedgerContext(opts, (ctx) => {
    const recovered = recoverInterruptedRuns(ctx);
    const runs = runStoreOf(ctx.store);
    const rows = runs.listRuns({
      ...(opts.workflow ? { workflowId: opts.workflow } : {}),
      ...(opts.status ? { status: opts.status } : {}),
      limit,
    });
    for (const r of recovered) err(`ratchet: run ${r.run_id} marked interrupted: ${r.reason}`);
    if (opts.json) {
      out(JSON.stringify(rows, null, 2));
      return 0;
    }
    if (rows.length === 0) out("no runs");
    for (const r of rows) {
      const steps = runs.stepRuns(r.run_id);
      const passed = steps.filter((s) => s.outcome === "passed").length;
      out(
        `${r.run_id}  ${r.status}  ${r.workflow_id}  trigger=${r.trigger}${r.group_name ? `  group=${r.group_name}` : ""}  steps=${passed}/${steps.length} passed  ${r.started_at}`,
      );
    }
    return 0;
  });
}

/** `ratchet runs cancel <run_id>`: exit 0 once the run is cancelled; 3 unknown run; 4 not running. */
export async function cmdRunsCancel(
  runId: string,
  opts: GlobalOptions & { json?: boolean },
): Promise<number> {
  return withLedgerContext(opts, async (ctx) => {
    const r = await cancelRun(ctx, runId, { by: "cli" });
    if (opts.json) out(JSON.stringify({ ok: true, op: "run-cancel", ...r }));
    else
      out(
        r.status === RunStatus.Cancelled
          ? `run ${runId} cancelled${r.how === "direct" ? " (its owner process was gone)" : ""}`
          : `run ${runId}: cancel requested; its process has not closed it yet (status ${r.status})`,
      );
    return 0;
  });
}

export async function cmdRunsShow(runId: string, opts: GlobalOptions & { json?: boolean }): Promise<number> {
  return withLedgerContext(opts, (ctx) => {
    const recovered = recoverInterruptedRuns(ctx);
    for (const r of recovered) err(`ratchet: run ${r.run_id} marked interrupted: ${r.reason}`);
    const runs = runStoreOf(ctx.store);
    const run = runs.getRun(runId);
    if (!run) throw new RatchetError(ErrorCode.NotFound, `run ${runId} not found`, { runId });
    const steps: WorkflowStepRunRow[] = runs.stepRuns(runId);
    const tokens = steps.reduce((n, s) => n + s.tokens, 0);
    if (opts.json) {
      out(
        JSON.stringify(
          { ...run, tokens, steps: steps.map((s) => ({ ...s, fast_path: s.fast_path === 1 })) },
          null,
          2,
        ),
      );
      return 0;
    }
    out(`run ${run.run_id}  ${run.status}`);
    out(`  workflow ${run.workflow_id} (${run.workflow_path})`);
    out(
      `  plan ${run.plan_id ?? "-"}  trigger=${run.trigger}  group=${run.group_name ?? "-"}  owner=${run.owner}`,
    );
    out(`  started ${run.started_at}  finished ${run.finished_at ?? "-"}  tokens=${tokens}`);
    if (run.error) out(`  error: ${run.error}`);
    out("steps:");
    for (const s of steps) out(stepLine(s));
    return 0;
  });
}

export async function cmdEvidence(
  workflowArg: string,
  opts: GlobalOptions & { step: string; json?: boolean },
): Promise<number> {
  const wf = openWorkflow(workflowArg);
  requireStep(wf, opts.step);
  return withLedgerContext(opts, (ctx) => {
    const ev = runStoreOf(ctx.store).evidence(wf.id, opts.step);
    const groups = Object.keys(wf.groups);
    const view = {
      ...ev,
      groups_declared: groups,
      promotion_threshold: PROMOTION_MIN_SUCCESSES,
      promotable: ev.successes >= PROMOTION_MIN_SUCCESSES,
    };
    if (opts.json) {
      out(JSON.stringify(view, null, 2));
      return 0;
    }
    out(`step ${opts.step} of workflow ${wf.id}`);
    out(`  runs ${ev.runs}  successes ${ev.successes}  failures ${ev.failures}`);
    out(
      `  groups covered: ${ev.groups_covered.length ? ev.groups_covered.join(", ") : "none"}${groups.length ? ` (declared: ${groups.join(", ")})` : ""}`,
    );
    out(
      `  last run: ${ev.last_run ? `${ev.last_run.run_id} ${ev.last_run.outcome} at ${ev.last_run.at}` : "never"}`,
    );
    out(
      `  promotion to learn_code: ${view.promotable ? "evidence met" : `needs ${PROMOTION_MIN_SUCCESSES} successful runs (has ${ev.successes})`}`,
    );
    return 0;
  });
}

const MODES = [ExecutionMode.LearnCode, ExecutionMode.CodeExec, ExecutionMode.Direct] as string[];

export async function cmdConfig(
  workflowArg: string,
  opts: GlobalOptions & { step: string; mode: string; reason: string; force?: boolean; json?: boolean },
): Promise<number> {
  if (!MODES.includes(opts.mode))
    throw new RatchetError(ErrorCode.Usage, `--mode must be one of ${MODES.join(", ")} (got ${opts.mode})`, {
      field: "mode",
    });
  if (opts.reason.trim() === "")
    throw new RatchetError(ErrorCode.Usage, "--reason must say why the mode changes", { field: "reason" });
  const mode = opts.mode as ExecutionMode;
  const wf = openWorkflow(workflowArg);
  const step = requireStep(wf, opts.step);
  const before = resolveMode(step, wf.defaults).mode;
  return withLedgerContext(opts, (ctx) => {
    const ev = runStoreOf(ctx.store).evidence(wf.id, opts.step);
    const promoting = mode === ExecutionMode.LearnCode && before !== ExecutionMode.LearnCode;
    const short = ev.successes < PROMOTION_MIN_SUCCESSES;
    if (promoting && short && !opts.force) {
      throw new RatchetError(
        ErrorCode.SoftBreaker,
        `promotion of step ${opts.step} to learn_code refused: it has ${ev.successes} successful run(s) of ${ev.runs} (groups covered: ${ev.groups_covered.join(", ") || "none"}); promotion needs ${PROMOTION_MIN_SUCCESSES}. Run it more, or pass --force to promote anyway (recorded)`,
        {
          stepId: opts.step,
          breaker: "soft",
          successes: ev.successes,
          runs: ev.runs,
          needed: PROMOTION_MIN_SUCCESSES,
        },
      );
    }
    writeStepMode(wf, opts.step, { mode, reason: opts.reason });
    const forced = promoting && short && Boolean(opts.force);
    const payload = {
      workflow_path: wf.source,
      step_id: opts.step,
      from: before,
      to: mode,
      reason: opts.reason,
      forced,
      runs: ev.runs,
      successes: ev.successes,
      groups_covered: ev.groups_covered,
    };
    ctx.store.tx(() => {
      ctx.store.appendEvent({
        entityKind: "workflow",
        entityId: wf.id,
        type: promoting ? "workflow.promoted" : "workflow.config_changed",
        payload,
      });
    });
    if (opts.json) out(JSON.stringify(payload, null, 2));
    else {
      out(`step ${opts.step} of workflow ${wf.id}: ${before} → ${mode} (${opts.reason})`);
      if (forced)
        out(
          `  forced: ${ev.successes} successful run(s), below the ${PROMOTION_MIN_SUCCESSES} promotion needs (recorded as workflow.promoted forced:true)`,
        );
    }
    return 0;
  });
}

export async function cmdDoctor(opts: { json?: boolean }): Promise<number> {
  const report = await doctor();
  // Threads (issue 15): the orchestrator version new threads run, and why.
  const threads = (await import("./thread-admin-commands.js")).threadsDoctorLine();
  if (opts.json) out(JSON.stringify({ ...report, threads }, null, 2));
  else {
    if (threads) out(`threads: orchestrator v${threads.version} runs (${threads.why})`);
    for (const t of report.tools) {
      const state = t.found ? "ok     " : t.required ? "MISSING" : "absent ";
      out(`${state} ${t.name.padEnd(8)} ${t.version ?? "-"}${t.path ? `  (${t.path})` : ""}  ${t.note}`);
    }
    out(
      `write protection: python=${report.write_protection.python} javascript=${report.write_protection.javascript}`,
    );
    out(`  ${report.write_protection.reason}`);
    out("guarantees on this machine:");
    for (const line of formatGuarantees(report.guarantees)) out(`  ${line}`);
    out(report.ok ? "doctor: ok" : "doctor: required tools are missing (python3 and git are required)");
  }
  return report.ok ? 0 : 8;
}
