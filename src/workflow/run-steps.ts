/**
 * The pieces of a run around one step: what a step that did not run reports, how a step is closed
 * in the ledger and the run tables, where its dependencies' outputs are.
 */
import { existsSync } from "node:fs";
import { headTail, LOG_HEAD_BYTES, LOG_TAIL_BYTES } from "../core/index.js";
import { type LearnedStepInput, type LearnedStepResult, notRun, runLearnedStep } from "./fast-path.js";

import { type RunHome, stepOutputDir } from "./layout.js";
import type { RunStepOutcome, RunStore } from "./run-store.js";
import type { RunContext, StepReport } from "./runs.js";
import { ExecutionMode, StepOutcome, type Workflow, type WorkflowStep } from "./types.js";

/** The ledger step type of a workflow step's mode. */
export function ledgerType(mode: ExecutionMode): "CODE" | "SUB_AGENT" {
  return mode === ExecutionMode.Direct ? "SUB_AGENT" : "CODE";
}

/** The step's ledger log: whole when short, else 8 KiB head + marker + 8 KiB tail with the full text kept. */
export function ledgerLog(text: string): { kind: string; text: string; full?: string } {
  const cut = headTail(text, LOG_HEAD_BYTES, LOG_TAIL_BYTES);
  return { kind: "run", text: cut.text, ...(cut.truncated ? { full: text } : {}) };
}

/** Closes the step in the ledger (with its log) and in the run tables, in one transaction. */
export function recordStep(
  ctx: RunContext,
  runs: RunStore,
  runId: string,
  report: StepReport,
  log: string,
  leaseSeconds: number,
): void {
  const stepId = report.ledger_step_id;
  ctx.store.tx(() => {
    if (ctx.store.getStep(stepId)?.status === "PENDING")
      ctx.ledger.start({ step_id: stepId, lease_seconds: leaseSeconds });
    const ledgerOpts = {
      log: ledgerLog(log),
      ...(report.exit_code !== null ? { exitCode: report.exit_code } : {}),
    };
    if (report.outcome === StepOutcome.Passed)
      ctx.ledger.complete(
        {
          step_id: stepId,
          summary: report.fast_path
            ? `${report.step_id}: passed on the fast path (${report.tokens} tokens)`
            : `${report.step_id}: passed in ${report.mode} mode (${report.tokens} tokens)`,
        },
        ledgerOpts,
      );
    else ctx.ledger.fail({ step_id: stepId, reason: `${report.outcome}: ${report.error ?? ""}` }, ledgerOpts);
    if (report.tokens > 0)
      ctx.ledger.recordMetricInTx({ name: "tokens", value: report.tokens, unit: "tokens", step_id: stepId });
    runs.finishStep(runId, report.step_id, {
      outcome: report.outcome,
      fast_path: report.fast_path,
      exit_code: report.exit_code,
      duration_ms: report.duration_ms,
      tokens: report.tokens,
      error: report.error,
    });
  });
}

/**
 * {@link runLearnedStep}, with an unexpected exception (a file system error copying the script, a
 * review that cannot run) turned into a harness failure: nothing is recorded against the script.
 */
export async function runLearnedStepSafely(input: LearnedStepInput): Promise<LearnedStepResult> {
  try {
    return await runLearnedStep(input);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return notRun(
      StepOutcome.HarnessFailed,
      input.redactor.redact(`harness failure: ${why}; nothing was recorded against the script`),
    );
  }
}

/**
 * The output folders passed to a step as argv: a dependency run in this run must have passed; a
 * dependency not selected (`--only`, `run-saved`) uses its newest passing run's outputs.
 */
export function dependencyDirs(
  wf: Workflow,
  home: RunHome,
  runId: string,
  step: WorkflowStep,
  selected: readonly string[],
  outcomeOf: ReadonlyMap<string, RunStepOutcome>,
  runs: RunStore,
): { dirs: string[] } | { blocked: string } {
  const dirs: string[] = [];
  for (const dep of step.context_dependencies) {
    if (selected.includes(dep)) {
      const o = outcomeOf.get(dep);
      if (o !== StepOutcome.Passed) return { blocked: `dependency ${dep} did not pass (${o ?? "not run"})` };
      dirs.push(stepOutputDir(home, runId, dep));
      continue;
    }
    const last = runs.lastPassed(wf.id, dep);
    const dir = last ? stepOutputDir(home, last.run_id, dep) : undefined;
    if (!dir || !existsSync(dir))
      return {
        blocked: `dependency ${dep} is not part of this run and has no passing run whose outputs could be used`,
      };
    dirs.push(dir);
  }
  return { dirs };
}
