/**
 * `ratchet reason …`: the group of the reason flows. `reason slots <plan_id> [--project P]
 * [--draft] [--json]` is written here (a text checklist by default; `--json` prints the flow's
 * result and marker like every flow); `reason fill <input.json|->` is the flow command derived from
 * FLOWS (main.ts skips a flow whose verb a group already has).
 */
import type { Command } from "commander";
import { applyOp } from "../ledger/index.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { INPUT_FILE } from "./flow-args.js";
import { out } from "./io.js";
import { reportError, runWriteFlow } from "./write-flows.js";

interface SlotsOpts {
  project?: string;
  draft?: boolean;
  json?: boolean;
}

interface SlotsView {
  checklist: string;
  auto_filled: { node_key: string | null; rule_id: string; basis: string }[];
  draft?: {
    node_key: string;
    qualified_name: string;
    candidates: {
      utterance_id: number;
      span: [number, number];
      score: number;
      kind: string;
      preview: string;
    }[];
  }[];
}

/** The text form: the checklist, then what rules filled, then the drafts. */
export function renderSlots(r: SlotsView): string {
  const lines = [r.checklist];
  if (r.auto_filled.length > 0) {
    lines.push("", "filled by the close-time rules:");
    for (const a of r.auto_filled) lines.push(`  ${a.rule_id} ${a.node_key ?? "(no node)"}: ${a.basis}`);
  }
  for (const d of r.draft ?? []) {
    lines.push("", `draft for ${d.qualified_name} [${d.node_key}]:`);
    if (d.candidates.length === 0) lines.push("  (no recorded words match)");
    for (const c of d.candidates)
      lines.push(
        `  #${c.utterance_id} [${c.span[0]}, ${c.span[1]}] score ${c.score} ${c.kind}: ${c.preview.replaceAll("\n", " ")}`,
      );
  }
  return lines.join("\n");
}

async function slots(planId: string, o: SlotsOpts, g: GlobalOptions): Promise<number> {
  // The flow's own input shape (`reason-slots.sh input.json`, `-` for stdin): JSON result + marker.
  if (INPUT_FILE.test(planId)) return runWriteFlow("reason-slots", planId, g);
  return withLedgerContext(g, async (ctx) => {
    const raw = {
      plan_id: planId,
      ...(o.project ? { project: o.project } : {}),
      ...(o.draft ? { draft: true } : {}),
    };
    const outcome = await applyOp(ctx.ledger, "reason-slots", raw, { cwd: process.cwd() });
    if (!outcome.ok && outcome.error) return reportError("reason-slots", outcome.error);
    if (o.json) {
      out(JSON.stringify(outcome.result, null, 2));
      out(JSON.stringify(outcome.marker));
    } else out(renderSlots(outcome.result as unknown as SlotsView));
    return 0;
  });
}

/** Adds the `reason` group (with `reason slots`) and returns it for the flow commands. */
export function reasonGroup(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => GlobalOptions,
): Command {
  const reason = program
    .command("reason")
    .description("close-time reasons of a registered project's plan: slots to answer, answers");
  reason
    .command("slots <plan_id>")
    .usage("<plan_id> [--project P] [--draft] [--json]   (or: <input.json|->, the flow's JSON input)")
    .description(
      "the plan's changed nodes still without a reason, the checklist to ask the user once, and (--draft) spans of their recorded words (exit 10 without a state graph)",
    )
    .option("--project <name>", "the plan's project (default: the plan's; refused when it differs)")
    .option("--draft", "propose up to two utterance spans per slot (deterministic scoring)")
    .option("--json", "the flow's JSON result and its marker")
    .action(act(async (planId: string, o: SlotsOpts) => slots(planId, o, globals())));
  return reason;
}
