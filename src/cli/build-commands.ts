/**
 * `ratchet build <workflow> --step ID [--group G]`: the Builder. Thin: parse, call `builder/`,
 * print, return the exit status (0 the step's script passes, 8 it does not). Also the model
 * wiring of `ratchet run` for workflows with model-driven steps.
 */
import {
  type BuildReport,
  buildStep,
  createModelStepRunner,
  modelClientFor,
  resolveModelOptions,
} from "../builder/index.js";
import { killAllRunning } from "../exec/index.js";
import type { ModelStepRunner } from "../workflow/index.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { err, out } from "./io.js";
import { buildProgressPrinter, liveMode } from "./progress.js";
import { openWorkflow, parseVars } from "./run-commands.js";

/** The model-step runner of a run: the configured model, or the reason there is none. */
export function modelStepsFor(workspaceDir: string, flagModel: string | undefined): ModelStepRunner {
  try {
    const options = resolveModelOptions({
      ...(flagModel ? { flags: { model: flagModel } } : {}),
      workspaceDir,
    });
    return createModelStepRunner({ client: () => modelClientFor(options) });
  } catch (e) {
    return createModelStepRunner({ unavailable: (e as Error).message });
  }
}

function print(r: BuildReport): void {
  out(`build of step ${r.step_id} of workflow ${r.workflow_id} (plan ${r.plan_id}, run folder ${r.run_id})`);
  for (const a of r.attempts)
    out(
      `  ${a.outcome === "passed" ? "✓" : "✗"} attempt ${a.n} ${a.kind}  outcome=${a.outcome}  exit=${a.exit_code ?? "-"}  tokens=${a.tokens}${a.diff ? `  diff=${a.diff}` : ""}${a.error && a.outcome !== "passed" ? `\n      ${a.error.split("\n")[0]}` : ""}`,
    );
  if (r.saved)
    out(
      `  saved: script_version ${r.saved.script_version}, relearn_count ${r.saved.relearn_count}${r.saved.changed ? `, diff ${r.saved.diff}` : " (unchanged)"}`,
    );
  else out(`  not saved: ${r.not_saved_reason}`);
  out(
    `build ${r.verdict}: ${r.attempts.length} attempt(s), ${r.tokens} tokens${r.model ? ` (${r.model})` : ""}`,
  );
}

export async function cmdBuild(
  workflowArg: string,
  opts: GlobalOptions & {
    step: string;
    group?: string;
    var?: string[];
    model?: string;
    json?: boolean;
    quiet?: boolean;
  },
): Promise<number> {
  const wf = openWorkflow(workflowArg);
  const vars = parseVars(opts.var);
  const mode = liveMode(opts);
  const live = mode ? buildProgressPrinter(mode, out) : undefined;
  return withLedgerContext(opts, async (ctx) => {
    const controller = new AbortController();
    const onSignal = (sig: NodeJS.Signals) => {
      err(`ratchet: ${sig} received: cancelling the build`);
      controller.abort();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const report = await buildStep(ctx, wf, opts.step, {
        vars,
        ...(opts.group !== undefined ? { group: opts.group } : {}),
        signal: controller.signal,
        ...(live ? { onAttempt: live.attempt, onAgentEvent: live.agent } : {}),
        model: () =>
          modelClientFor(
            resolveModelOptions({
              ...(opts.model ? { flags: { model: opts.model } } : {}),
              workspaceDir: ctx.workspace.dir,
            }),
          ),
      });
      if (opts.json) out(JSON.stringify(report, null, 2));
      else if (opts.quiet) {
        if (report.verdict !== "passed")
          err(`build of step ${report.step_id} failed after ${report.attempts.length} attempt(s)`);
      } else print(report);
      return report.verdict === "passed" ? 0 : 8;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await killAllRunning();
    }
  });
}
