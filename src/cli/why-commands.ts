/**
 * `ratchet why …` and `ratchet headline show|respond|ack` (provenance, spec §5.2 and §7).
 * `headline respond` takes the spec's form `<plan> <finding> --action … [--rationale …] [--by …]
 * [--cite ID]…` or, like every write flow, a JSON/YAML input file or `-`; both run the
 * `headline-respond` flow. `headline ack <plan> <finding>` is `proceed` by `human`.
 * `headline show` on a plan without a headline exits 3 (Ratchet's not-found; the original exits 1).
 */
import type { Command } from "commander";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import { projectHolding } from "../provenance/project-of.js";
import { withLedgerContext } from "./context.js";
import { INPUT_FILE } from "./flow-args.js";
import { err, out } from "./io.js";
import { reportError, runFlowCommand, runWriteFlow } from "./write-flows.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;
type Globals = () => { db?: string };

export interface WhyCliOptions {
  project?: string;
  all?: boolean;
  budget?: string;
  pending?: boolean;
  neverRead?: boolean;
  search?: string;
  json?: boolean;
}

const fail = (e: unknown, what: string) => {
  const r = toRatchetError(e);
  err(`ratchet: ${what}: ${r.message}`);
  return r.exitStatus;
};

/** `ratchet why`: prints the answer (text or `--json`); 0, 2 (usage, no project), 3 (unknown project). */
export async function whyCommand(
  target: string | undefined,
  o: WhyCliOptions & { db?: string },
): Promise<number> {
  try {
    const budget = o.budget === undefined ? undefined : Number(o.budget);
    if (budget !== undefined && (!Number.isInteger(budget) || budget < 1))
      throw new RatchetError(
        ErrorCode.Usage,
        `--budget: a positive whole number of tokens (got ${o.budget})`,
        { field: "budget" },
      );
    const { why, renderWhy, whyStoreOf, nodeSourceFor } = await import("../provenance/reasons/why-api.js");
    return await withLedgerContext(o, (ctx) => {
      let project = o.project;
      if (project === undefined) {
        project = projectHolding(ctx.store.listProjects(), process.cwd());
      } else if (!ctx.store.getProject(project))
        throw new RatchetError(ErrorCode.ProjectNotFound, `--project: project ${project} is not registered`, {
          field: "project",
        });
      if (project === undefined)
        throw new RatchetError(
          ErrorCode.Usage,
          "why: no project (give --project P, or run inside a registered project's repo)",
          {
            field: "project",
          },
        );
      const { why: store } = whyStoreOf(ctx.store);
      const nodes = nodeSourceFor(ctx.store);
      const p = project;
      const result = ctx.store.tx(() =>
        why(
          store,
          nodes,
          {
            project: p,
            ...(target !== undefined ? { target } : {}),
            ...(o.all ? { all: true } : {}),
            ...(budget !== undefined ? { budgetTokens: budget } : {}),
            ...(o.pending ? { pending: true } : {}),
            ...(o.neverRead ? { neverRead: true } : {}),
            ...(o.search !== undefined ? { search: o.search } : {}),
          },
          ctx.ledger.now(),
        ),
      );
      if (o.json) {
        const { mode, project: pr, target: t, resolved, summary, records } = result;
        out(
          JSON.stringify(
            {
              mode,
              project: pr,
              target: t,
              resolved,
              summary,
              records,
              ...(result.mode === "target" && result.read ? { read: result.read } : {}),
            },
            null,
            2,
          ),
        );
      } else out(renderWhy(result));
      return 0;
    });
  } catch (e) {
    return fail(e, "why");
  }
}

/** `ratchet headline show <plan>`: the latest headline; exit 3 when the plan or its headline is missing. */
export async function headlineShow(planId: string, o: { db?: string; json?: boolean }): Promise<number> {
  try {
    const { latestHeadline, renderHeadline, whyStoreOf } = await import("../provenance/reasons/why-api.js");
    return await withLedgerContext(o, (ctx) => {
      if (!ctx.store.getPlan(planId))
        throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId });
      const doc = latestHeadline(whyStoreOf(ctx.store).why, planId);
      if (!doc)
        throw new RatchetError(
          ErrorCode.NotFound,
          `plan ${planId} has no headline (publish computes one for a plan with a project and declared_targets)`,
          {
            planId,
          },
        );
      out(o.json ? JSON.stringify(doc, null, 2) : renderHeadline(doc));
      return 0;
    });
  } catch (e) {
    return fail(e, "headline show");
  }
}

/** Parses `<plan> <finding> --action A [--rationale R] [--by B] [--cite ID]…` into the flow's input. */
export function parseRespondArgs(args: readonly string[]): Record<string, unknown> {
  const pos: string[] = [];
  const raw: Record<string, unknown> = {};
  const cites: unknown[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (!a.startsWith("--")) {
      pos.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const flag = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (value === undefined)
      throw new RatchetError(ErrorCode.Usage, `--${flag} needs a value`, { field: flag });
    if (flag === "cite") {
      const n = Number(value);
      cites.push(Number.isInteger(n) ? n : value);
    } else if (flag === "action" || flag === "rationale" || flag === "by") raw[flag] = value;
    else
      throw new RatchetError(
        ErrorCode.Usage,
        `unknown flag --${flag} for \`ratchet headline respond\`; flags: --action, --rationale, --by, --cite`,
        {
          field: flag,
        },
      );
  }
  if (pos.length !== 2)
    throw new RatchetError(
      ErrorCode.Usage,
      "usage: ratchet headline respond <plan> <finding> --action revise|proceed [--rationale …] [--by agent|human] [--cite ID]…",
      {
        field: "input",
      },
    );
  return { plan_id: pos[0], finding_id: pos[1], ...raw, ...(cites.length ? { cites } : {}) };
}

/** Registers `why` and the `headline` group; returns the group (the FLOWS loop adds nothing to it twice). */
export function addWhyCommands(program: Command, act: Act, globals: Globals): Command {
  program
    .command("why [target]")
    .description(
      "why a node is the way it is: history, constraints, rejected paths, reasons, prior claims (target: qualified name, nk_… or file:line)",
    )
    .option(
      "--project <name>",
      "project (default: the registered project whose repo holds the current folder)",
    )
    .option("--all", "lift the record caps")
    .option("--budget <tokens>", "token budget of the read (chars ÷ 4; default 1500)")
    .option("--pending", "unstated reasons (of the target, or of the whole project)")
    .option("--never-read", "active constraints never shown")
    .option("--search <words>", "reasons whose words contain every word (LIKE)")
    .option("--json", "machine-readable output")
    .action(
      act(async (target: string | undefined, o: WhyCliOptions) => whyCommand(target, { ...globals(), ...o })),
    );
  const headline = program.command("headline").description("a plan's headline findings and their answers");
  headline
    .command("show <plan_id>")
    .description("the plan's latest headline (exit 3 when it has none)")
    .option("--json", "machine-readable output")
    .action(
      act(async (planId: string, o: { json?: boolean }) => headlineShow(planId, { ...globals(), ...o })),
    );
  headline
    .command("respond")
    .argument(
      "[args...]",
      "<plan> <finding> --action revise|proceed [--rationale …] [--by agent|human] [--cite ID]…, or a JSON/YAML input file or -",
    )
    .description("answer one finding of the plan's latest headline (op headline-respond)")
    .allowUnknownOption()
    .helpOption("-h, --help", "show usage")
    .action(
      act(async (args: string[]) => {
        if (args.length === 1 && INPUT_FILE.test(args[0] as string))
          return runFlowCommand("headline-respond", args, globals());
        let raw: Record<string, unknown>;
        try {
          raw = parseRespondArgs(args);
        } catch (e) {
          return reportError("headline-respond", toRatchetError(e));
        }
        return runWriteFlow("headline-respond", undefined, globals(), { raw });
      }),
    );
  headline
    .command("ack <plan_id> <finding_id>")
    .description("proceed past a finding, as a human (headline-respond with action proceed, by human)")
    .option("--rationale <text>", "why")
    .option("--cite <id...>", "reason ids the answer leans on")
    .action(
      act(async (planId: string, findingId: string, o: { rationale?: string; cite?: string[] }) =>
        runWriteFlow("headline-respond", undefined, globals(), {
          raw: {
            plan_id: planId,
            finding_id: findingId,
            action: "proceed",
            by: "human",
            ...(o.rationale !== undefined ? { rationale: o.rationale } : {}),
            ...(o.cite ? { cites: o.cite.map((c) => (Number.isInteger(Number(c)) ? Number(c) : c)) } : {}),
          },
        }),
      ),
    );
  return headline;
}
