/**
 * `ratchet completion bash|zsh|fish` and `ratchet metric list`. Thin: parse, call, print.
 */
import { Argument, type Command } from "commander";
import { ErrorCode, RatchetError } from "../core/index.js";
import { completionScript, SHELLS, type Shell } from "./completion.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { out } from "./io.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;

/** Largest `--limit` of `metric list`. */
const MAX_METRICS = 10_000;

export interface MetricListOptions extends GlobalOptions {
  plan?: string;
  project?: string;
  name?: string;
  limit?: string;
  json?: boolean;
}

/** `ratchet metric list`: metrics newest first, optionally of one plan, project or name. */
export async function metricList(opts: MetricListOptions): Promise<number> {
  const n = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!Number.isInteger(n) || n < 1 || n > MAX_METRICS)
    throw new RatchetError(
      ErrorCode.Usage,
      `--limit must be an integer from 1 to ${MAX_METRICS} (got ${opts.limit})`,
      { field: "limit" },
    );
  const { ServerQueries } = await import("../server/index.js");
  return withLedgerContext(opts, (ctx) => {
    const rows = new ServerQueries(ctx.store).metrics({
      limit: n,
      ...(opts.plan ? { planId: opts.plan } : {}),
      ...(opts.project ? { project: opts.project } : {}),
      ...(opts.name ? { name: opts.name } : {}),
    });
    if (opts.json) {
      out(JSON.stringify(rows, null, 2));
      return 0;
    }
    if (rows.length === 0) out("no metrics");
    for (const m of rows)
      out(
        `${m.id}  ${m.name}=${m.value}${m.unit ? ` ${m.unit}` : ""}  project=${m.project ?? "-"}  plan=${m.plan_id ?? "-"}${m.step_id ? `  step=${m.step_id}` : ""}  ${m.created_at}`,
      );
    return 0;
  });
}

/** Registers `completion` and `metric list` (one line in main.ts). */
export function addCompletionCommands(program: Command, act: Act, globals: () => GlobalOptions): void {
  program
    .command("completion")
    .addArgument(new Argument("<shell>", "bash, zsh or fish").choices(SHELLS))
    .description("print a shell completion script (bash, zsh or fish) for every command and flag")
    .addHelpText(
      "after",
      '\nExamples:\n  eval "$(ratchet completion bash)"      # in ~/.bashrc\n  eval "$(ratchet completion zsh)"       # in ~/.zshrc\n  ratchet completion fish | source       # in ~/.config/fish/config.fish',
    )
    .action(
      act(async (shell: string) => {
        if (!(SHELLS as readonly string[]).includes(shell))
          throw new RatchetError(
            ErrorCode.Usage,
            `shell must be one of ${SHELLS.join(", ")} (got ${JSON.stringify(shell)})`,
            { field: "shell" },
          );
        process.stdout.write(completionScript(program, shell as Shell));
        return 0;
      }),
    );
  const metric = program.commands.find((c) => c.name() === "metric") ?? program.command("metric");
  metric
    .command("list")
    .description("metrics, newest first")
    .option("--plan <plan_id>", "only metrics of this plan")
    .option("--project <name>", "only metrics of this project")
    .option("--name <name>", "only metrics with this name")
    .option("--limit <n>", `at most n metrics (default 50, at most ${MAX_METRICS})`)
    .option("--json", "machine-readable output")
    .action(act(async (o: MetricListOptions) => metricList({ ...globals(), ...o })));
}
