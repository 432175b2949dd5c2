/**
 * `ratchet graph refresh | nodes | show`: the node source of registered projects (docs/provenance.md,
 * "The node source"). Thin: parse, call `provenance/nodes/` (loaded on first use), print.
 */
import type { Command } from "commander";
import { ErrorCode, RatchetError } from "../core/index.js";
import { projectHolding } from "../provenance/project-of.js";
import type { NodeEvent, NodeSnapshot } from "../provenance/types.js";
import type { Store } from "../store/index.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { out } from "./io.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;

const nodes = () => import("../provenance/nodes/index.js");

/** `--project`, else the registered project whose repo holds the current folder. @throws usage (2) / project_not_found (3). */
function projectOf(store: Store, flag: string | undefined): string {
  if (flag !== undefined) {
    if (!store.getProject(flag))
      throw new RatchetError(ErrorCode.ProjectNotFound, `--project ${flag}: no such registered project`, {
        field: "project",
      });
    return flag;
  }
  const here = projectHolding(store.listProjects(), process.cwd());
  if (!here)
    throw new RatchetError(
      ErrorCode.Usage,
      "--project is required: the current folder is in no registered project's repository",
      {
        field: "project",
      },
    );
  return here;
}

const span = (n: NodeSnapshot) => `${n.file_path}:${n.line_start}-${n.line_end}`;
const counts = (m: Record<string, number>) =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "none";

export interface RefreshFlags extends GlobalOptions {
  project?: string;
  plan?: string;
  step?: string;
  trigger?: string;
  json?: boolean;
}

/** `graph refresh`: flags first, then PROVLEDGER_PLAN_ID / PROVLEDGER_STEP_ID / PROVLEDGER_TRIGGER. */
export async function graphRefresh(o: RefreshFlags): Promise<number> {
  const env = process.env;
  const planId = o.plan ?? (env.PROVLEDGER_PLAN_ID || undefined);
  const stepId = o.step ?? (env.PROVLEDGER_STEP_ID || undefined);
  const trigger = o.trigger ?? (env.PROVLEDGER_TRIGGER || (planId ? "review" : "manual"));
  if (trigger === "publish")
    throw new RatchetError(
      ErrorCode.InvalidValue,
      "trigger publish is reserved for the baseline run publish takes (a run with it is left out of a plan's changed nodes)",
      { field: "trigger" },
    );
  return withLedgerContext(o, async (ctx) => {
    const project = projectOf(ctx.store, o.project);
    const { nodeSourceFor } = await nodes();
    const r = await nodeSourceFor(ctx.store).refreshReport(project, {
      ...(planId ? { planId } : {}),
      ...(stepId ? { stepId } : {}),
      trigger,
    });
    if (o.json) out(JSON.stringify({ project, ...r }, null, 2));
    else {
      out(
        `run ${r.run.id} · project ${project} · trigger ${r.run.trigger}${r.run.plan_id ? ` · plan ${r.run.plan_id}` : ""}${r.run.step_id ? ` · step ${r.run.step_id}` : ""} · commit ${r.run.commit_sha ?? "none"} · ${r.duration_ms} ms`,
      );
      out(
        `nodes ${r.nodes} (${counts(r.nodes_by_type)}) · files ${r.files} (parsed ${r.parsed}, cached ${r.cached}${r.skipped.length ? `, skipped ${r.skipped.length}` : ""})`,
      );
      out(`events: ${counts(r.events_by_type)}`);
    }
    out(
      JSON.stringify({
        ok: true,
        op: "graph-refresh",
        project,
        run_id: r.run.id,
        nodes: r.nodes,
        duration_ms: r.duration_ms,
      }),
    );
    return 0;
  });
}

export async function graphNodes(
  o: GlobalOptions & { project?: string; file?: string; json?: boolean },
): Promise<number> {
  return withLedgerContext(o, async (ctx) => {
    const project = projectOf(ctx.store, o.project);
    const { nodeSourceFor } = await nodes();
    const src = nodeSourceFor(ctx.store);
    const { run, nodes: list } = src.nodes(project, o.file !== undefined ? { file: o.file } : {});
    if (!run)
      throw new RatchetError(
        ErrorCode.NoStateGraph,
        `no state graph: project ${project} has never been analysed (run \`ratchet graph refresh --project ${project}\`)`,
        {
          field: "project",
        },
      );
    if (o.json) out(JSON.stringify({ project, run_id: run.id, nodes: list }, null, 2));
    else if (list.length === 0) out(`no nodes${o.file !== undefined ? ` in ${o.file}` : ""} (run ${run.id})`);
    else
      for (const n of list) out(`${n.node_key}  ${n.node_type.padEnd(8)}  ${n.qualified_name}  ${span(n)}`);
    return 0;
  });
}

function renderEvent(e: NodeEvent): string {
  const p = e.payload;
  const from = (p.from as { qualified_name?: string } | undefined)?.qualified_name;
  const to = (p.to as { qualified_name?: string } | undefined)?.qualified_name;
  const detail =
    from !== undefined
      ? `${from} → ${to}`
      : Array.isArray(p.changed)
        ? (p.changed as string[]).join(", ")
        : typeof p.via === "string"
          ? `via ${p.via}`
          : Array.isArray(p.candidates)
            ? `candidates ${(p.candidates as string[]).join(", ")}`
            : "";
  return `  run ${e.run_id} #${e.seq}  ${e.event_type}${detail ? `  ${detail}` : ""}`;
}

export async function graphShow(
  target: string,
  o: GlobalOptions & { project?: string; json?: boolean },
): Promise<number> {
  return withLedgerContext(o, async (ctx) => {
    const project = projectOf(ctx.store, o.project);
    const { nodeSourceFor } = await nodes();
    const src = nodeSourceFor(ctx.store);
    src.repoOf(project);
    if (!src.hasGraph(project))
      throw new RatchetError(
        ErrorCode.NoStateGraph,
        `no state graph: project ${project} has never been analysed (run \`ratchet graph refresh --project ${project}\`)`,
        {
          field: "project",
        },
      );
    const node = src.resolve(project, target);
    if (!node)
      throw new RatchetError(
        ErrorCode.NotFound,
        `target ${target}: no node of project ${project} on record`,
        { field: "target" },
      );
    const history = src.history(node.node_key);
    if (o.json) out(JSON.stringify({ project, target, resolved: node, history }, null, 2));
    else {
      out(
        `${node.qualified_name} · ${node.node_type} · ${span(node)} · ${node.node_key} · run ${node.run_id}`,
      );
      out(`struct_sig ${node.struct_sig ?? "-"} · dataflow_sig ${node.dataflow_sig ?? "trivial"}`);
      out(`history · ${history.length}`);
      for (const e of history) out(renderEvent(e));
    }
    return 0;
  });
}

/** Registers `ratchet graph …` (one line in main.ts). */
export function addGraphCommands(program: Command, act: Act, globals: () => GlobalOptions): void {
  const graph = program
    .command("graph")
    .description("the state graph of registered projects: symbols, rename-stable node keys, analysis runs");
  graph
    .command("refresh")
    .description("analyse the project's code now and record a run (matched against the previous one)")
    .option("--project <name>", "the project (default: the one whose repo holds the current folder)")
    .option("--plan <plan_id>", "attribute the run to this plan (env PROVLEDGER_PLAN_ID)")
    .option("--step <step_id>", "and to this step of it (env PROVLEDGER_STEP_ID)")
    .option(
      "--trigger <word>",
      "what started it (env PROVLEDGER_TRIGGER; default review with a plan, else manual)",
    )
    .option("--json", "machine-readable output")
    .action(act(async (o: RefreshFlags) => graphRefresh({ ...globals(), ...o })));
  graph
    .command("nodes")
    .description("the nodes of the project's newest run")
    .option("--project <name>", "the project (default: the one whose repo holds the current folder)")
    .option("--file <path>", "only this repo-relative file")
    .option("--json", "machine-readable output")
    .action(
      act(async (o: { project?: string; file?: string; json?: boolean }) =>
        graphNodes({ ...globals(), ...o }),
      ),
    );
  graph
    .command("show <target>")
    .description("a node (qualified name, nk_… key or file:line) and its identity history")
    .option("--project <name>", "the project (default: the one whose repo holds the current folder)")
    .option("--json", "machine-readable output")
    .action(
      act(async (t: string, o: { project?: string; json?: boolean }) => graphShow(t, { ...globals(), ...o })),
    );
}
