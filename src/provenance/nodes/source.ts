/**
 * `StoreNodeSource`: the node source of registered projects (spec §2.1–2.2). A refresh analyses
 * the project's repository (outside any transaction: parsing takes time), then matches the result
 * against the project's newest run and writes the run, its snapshots, its identity events and the
 * new parse-cache entries in one `store.tx` — the previous run is read inside that transaction, so
 * two refreshes never match against the same run.
 */
import { existsSync, realpathSync } from "node:fs";
import { isAbsolute, relative, resolve as resolvePath } from "node:path";
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { ProjectRow, Store } from "../../store/index.js";
import type {
  AnalysisRunRow,
  ChangedNode,
  NodeEvent,
  NodeSnapshot,
  NodeSource,
  RefreshOptions,
} from "../types.js";
import { analyse, cacheKey } from "./analyze.js";
import { type CallGraph, callGraph, localName } from "./calls.js";
import type { FileFacts } from "./facts.js";
import { repoState } from "./files.js";
import { matchRun, NodeEventType } from "./match.js";
import type { NodeStore } from "./store.js";

/** The trigger of the baseline run taken at publish: attributed to the plan, never in its changed set. */
export const BASELINE_TRIGGER = "publish";

/** `file:line` targets (spec §7). */
export const FILE_LINE = /^[^\s:]+\.[A-Za-z0-9]+:\d+$/;
const NODE_KEY = /^nk_[0-9a-f]{12}$/;
const SYMBOL_TYPES = new Set(["function", "method", "class"]);

/** What one refresh did, for the CLI and the bench. */
export interface RefreshReport {
  run: AnalysisRunRow;
  nodes: number;
  nodes_by_type: Record<string, number>;
  events_by_type: Record<string, number>;
  files: number;
  parsed: number;
  cached: number;
  skipped: { path: string; why: string }[];
  duration_ms: number;
}

export interface NodeSourceOptions {
  /** ISO timestamps of new runs (default: the wall clock). */
  now?: () => string;
}

/** The node source on either store. Construct through `nodeSourceFor(store)`. */
export class StoreNodeSource implements NodeSource {
  readonly #nodes: NodeStore;
  readonly #store: Store;
  readonly #now: () => string;
  /** The call graph of the newest run read, by run id (a run never changes). */
  #graph: { runId: number; graph: CallGraph; byKey: Map<string, NodeSnapshot> } | undefined;

  constructor(nodes: NodeStore, store: Store, opts: NodeSourceOptions = {}) {
    this.#nodes = nodes;
    this.#store = store;
    this.#now = opts.now ?? (() => new Date().toISOString());
  }

  /**
   * The project's repository on disk.
   * @throws RatchetError `project_not_found` (3); `no_state_graph` (10) without a repo or when it is missing.
   */
  repoOf(project: string): { project: ProjectRow; repo: string } {
    const row = this.#store.getProject(project);
    if (!row)
      throw new RatchetError(
        ErrorCode.ProjectNotFound,
        `project ${project} is not registered (run \`ratchet project add ${project} --repo <path>\`)`,
        {
          field: "project",
        },
      );
    if (!row.repo_path)
      throw new RatchetError(
        ErrorCode.NoStateGraph,
        `no state graph: project ${project} has no repository (it was registered without --repo)`,
        {
          field: "project",
        },
      );
    if (!existsSync(row.repo_path))
      throw new RatchetError(
        ErrorCode.NoStateGraph,
        `no state graph: the repository of project ${project} (${row.repo_path}) is not on disk`,
        {
          field: "project",
        },
      );
    return { project: row, repo: row.repo_path };
  }

  hasGraph(project: string): boolean {
    const row = this.#store.getProject(project);
    if (!row?.repo_path || !existsSync(row.repo_path)) return false;
    return this.#nodes.latestRun(project) !== undefined;
  }

  async refresh(project: string, opts: RefreshOptions): Promise<AnalysisRunRow> {
    return (await this.refreshReport(project, opts)).run;
  }

  /**
   * Analyses the project now and records the run (see the class comment).
   * @throws RatchetError `project_not_found`/`plan_not_found`/`step_not_found` (3), `invalid_value`
   *   (2: a trigger that is not a word, a step of another plan, a plan of another project),
   *   `no_state_graph` (10: no repo, repo gone, git cannot read it).
   */
  async refreshReport(project: string, opts: RefreshOptions): Promise<RefreshReport> {
    const started = performance.now();
    const { repo } = this.repoOf(project);
    const planId = opts.planId ?? null;
    const stepId = opts.stepId ?? null;
    this.#checkAttribution(project, planId, stepId, opts.trigger);
    const analysis = await analyse(repo, { get: (keys) => this.#nodes.cacheGet(keys) });
    const now = this.#now();
    const { run, events, byType } = this.#nodes.tx(() => {
      const prev = this.#nodes.latestRun(project);
      const prevNodes = prev ? this.#nodes.snapshotsOf(prev.id) : [];
      const run = this.#nodes.insertRun({
        project,
        plan_id: planId,
        step_id: stepId,
        trigger: opts.trigger,
        commit_sha: analysis.commit,
        created_at: now,
      });
      const matched = matchRun(prevNodes, analysis.nodes, run.id);
      this.#nodes.insertSnapshots(
        matched.nodes.map((n) => ({
          run_id: run.id,
          node_key: n.node_key,
          node_type: n.node_type,
          qualified_name: n.qualified_name,
          file_path: n.file_path,
          line_start: n.line_start,
          line_end: n.line_end,
          struct_sig: n.struct_sig,
          dataflow_sig: n.dataflow_sig,
        })),
      );
      const events: Record<string, number> = {};
      this.#nodes.insertEvents(
        matched.events.map((e, i) => {
          events[e.event_type] = (events[e.event_type] ?? 0) + 1;
          return { run_id: run.id, seq: i + 1, ...e };
        }),
      );
      this.#nodes.cachePut(analysis.fresh, now);
      const byType: Record<string, number> = {};
      for (const n of matched.nodes) byType[n.node_type] = (byType[n.node_type] ?? 0) + 1;
      return { run, events, byType };
    });
    return {
      run,
      nodes: analysis.nodes.length,
      nodes_by_type: byType,
      events_by_type: events,
      files: analysis.files,
      parsed: analysis.parsed,
      cached: analysis.cached,
      skipped: analysis.skipped,
      duration_ms: Math.round(performance.now() - started),
    };
  }

  #checkAttribution(project: string, planId: string | null, stepId: string | null, trigger: string): void {
    if (!/^[a-z][a-z0-9_-]{0,39}$/.test(trigger))
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `trigger ${JSON.stringify(trigger)} must be a lower-case word (review, register, manual, …)`,
        {
          field: "trigger",
        },
      );
    if (stepId !== null && planId === null)
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `step ${stepId}: a run attributed to a step needs its plan id too`,
        { field: "plan" },
      );
    if (planId === null) return;
    const plan = this.#store.getPlan(planId);
    if (!plan)
      throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId, field: "plan" });
    if (plan.status !== "IN_PROGRESS")
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `plan ${planId} is ${plan.status}: runs are attributed to open plans only (a closed plan's changed nodes are settled)`,
        { planId, field: "plan" },
      );
    if (plan.project !== project)
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `plan ${planId} belongs to ${plan.project === null ? "no project" : `project ${plan.project}`}, not ${project}`,
        {
          planId,
          field: "plan",
        },
      );
    if (stepId === null) return;
    const step = this.#store.getStep(stepId);
    if (!step)
      throw new RatchetError(ErrorCode.StepNotFound, `step ${stepId} not found`, { stepId, field: "step" });
    if (step.plan_id !== planId)
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `step ${stepId} belongs to plan ${step.plan_id}, not ${planId}`,
        {
          stepId,
          field: "step",
        },
      );
  }

  changedNodes(planId: string): ChangedNode[] {
    return this.#planNodes(planId, (e) => {
      if (e.event_type === NodeEventType.Added || e.event_type === NodeEventType.Removed) return true;
      if (e.event_type !== NodeEventType.Changed) return false;
      const changed = e.payload.changed;
      return Array.isArray(changed) && changed.includes("struct_sig");
    });
  }

  touchedNodes(planId: string): ChangedNode[] {
    return this.#planNodes(planId, () => true);
  }

  /** One entry per key over the plan's runs (the publish baseline excluded), in first-event order. */
  #planNodes(planId: string, keep: (e: NodeEvent) => boolean): ChangedNode[] {
    const runs = this.#nodes.runsOfPlan(planId).filter((r) => r.trigger !== BASELINE_TRIGGER);
    const byKey = new Map<string, { types: string[]; run: number }>();
    for (const e of this.#nodes.eventsOfRuns(runs.map((r) => r.id))) {
      if (!keep(e)) continue;
      const entry = byKey.get(e.node_key) ?? { types: [], run: e.run_id };
      if (!entry.types.includes(e.event_type)) entry.types.push(e.event_type);
      entry.run = Math.max(entry.run, e.run_id);
      byKey.set(e.node_key, entry);
    }
    const out: ChangedNode[] = [];
    for (const [key, { types, run }] of byKey) {
      const snap = this.#nodes.newestOfKey(key);
      if (!snap) continue;
      out.push({
        node_key: key,
        qualified_name: snap.qualified_name,
        node_type: snap.node_type,
        event_types: types,
        run_id: run,
      });
    }
    return out;
  }

  /**
   * A qualified name, an `nk_…` key or `file:line` → the newest snapshot of that node. For
   * `file:line`, the innermost node of the project's newest run whose range covers the line (a
   * method before its class). The file may be repo-relative, `./`-prefixed or absolute inside the repo.
   * @throws RatchetError `invalid_value` (2) for a target that is none of the three forms.
   */
  resolve(project: string, target: string): NodeSnapshot | undefined {
    const t = target.trim();
    if (t === "" || /\s/.test(t) || t.length > 1000)
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `target ${JSON.stringify(target)}: expected a qualified name, nk_… or file:line`,
        {
          field: "target",
        },
      );
    if (t.startsWith("nk_")) {
      if (!NODE_KEY.test(t))
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `target ${t}: a node key is nk_ followed by 12 lower-case hex digits`,
          {
            field: "target",
          },
        );
      const snap = this.#nodes.newestOfKey(t);
      if (!snap) return undefined;
      const run = this.#nodes.getRun(snap.run_id);
      return run?.project === project ? snap : undefined;
    }
    if (FILE_LINE.test(t)) {
      const colon = t.lastIndexOf(":");
      const line = Number(t.slice(colon + 1));
      if (!Number.isSafeInteger(line) || line < 1)
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `target ${t}: the line must be a whole number from 1`,
          { field: "target" },
        );
      const run = this.#nodes.latestRun(project);
      if (!run) return undefined;
      const here = this.#nodes.atLine(run.id, this.#repoRelative(project, t.slice(0, colon)), line);
      // The innermost symbol; a data node only when no symbol covers the line (a module-level query).
      return here.find((n) => SYMBOL_TYPES.has(n.node_type)) ?? here[0];
    }
    return this.#nodes.newestOfName(project, t);
  }

  #repoRelative(project: string, file: string): string {
    let f = file.replace(/\\/g, "/");
    if (isAbsolute(f)) {
      const repo = this.#store.getProject(project)?.repo_path;
      if (repo) {
        let abs = resolvePath(f);
        try {
          abs = realpathSync(abs);
        } catch {
          // not on disk (any more): compare as given
        }
        const rel = relative(repo, abs);
        if (!rel.startsWith("..") && !isAbsolute(rel)) f = rel.split("\\").join("/");
      }
    }
    while (f.startsWith("./")) f = f.slice(2);
    return f;
  }

  history(nodeKey: string): NodeEvent[] {
    return this.#nodes.eventsOfKey(nodeKey);
  }

  /** The nodes of the project's newest run (optionally one file's), in file and line order. */
  nodes(
    project: string,
    opts: { file?: string } = {},
  ): { run: AnalysisRunRow | undefined; nodes: NodeSnapshot[] } {
    this.repoOf(project);
    const run = this.#nodes.latestRun(project);
    if (!run) return { run, nodes: [] };
    const all = this.#nodes.snapshotsOf(run.id);
    const file = opts.file === undefined ? undefined : this.#repoRelative(project, opts.file);
    return { run, nodes: file === undefined ? all : all.filter((n) => n.file_path === file) };
  }

  callees(project: string, nodeKey: string): NodeSnapshot[] {
    const at = this.#graphOf(project);
    if (!at) return [];
    const out = (at.graph.callees.get(nodeKey) ?? []).flatMap((k) => at.byKey.get(k) ?? []);
    for (const name of at.graph.unresolved.get(nodeKey) ?? []) {
      const gone = this.#nodes
        .newestOfLocalName(project, name)
        .filter(
          (s) =>
            localName(s.qualified_name) === name &&
            !at.byKey.has(s.node_key) &&
            this.#nodes.eventsOfKey(s.node_key).at(-1)?.event_type === NodeEventType.Removed,
        );
      if (gone.length === 1) out.push(gone[0] as NodeSnapshot);
    }
    return out;
  }

  callers(project: string, nodeKey: string): NodeSnapshot[] {
    const at = this.#graphOf(project);
    if (!at) return [];
    return (at.graph.callers.get(nodeKey) ?? []).flatMap((k) => at.byKey.get(k) ?? []);
  }

  /**
   * The newest run's call graph: its snapshots plus the parse-cache facts of the files it read.
   * The files' blobs are the worktree's now; a file edited since the run does not match the run's
   * snapshots and gives no edges (until the next refresh). Undefined without a repo or a run.
   */
  #graphOf(project: string): { graph: CallGraph; byKey: Map<string, NodeSnapshot> } | undefined {
    const repo = this.#store.getProject(project)?.repo_path;
    if (!repo || !existsSync(repo)) return undefined;
    const run = this.#nodes.latestRun(project);
    if (!run) return undefined;
    if (this.#graph?.runId === run.id) return this.#graph;
    const snaps = this.#nodes.snapshotsOf(run.id);
    const byKey = new Map(snaps.map((s) => [s.node_key, s]));
    let files: ReturnType<typeof repoState>["files"];
    try {
      files = repoState(repo).files;
    } catch {
      return undefined;
    }
    const seen = new Set(snaps.map((s) => s.file_path));
    const wanted = files.filter((f) => seen.has(f.path));
    const hits = this.#nodes.cacheGet(wanted.map((f) => cacheKey(f.language, f.blob)));
    const facts = new Map<string, FileFacts>();
    for (const f of wanted) {
      const hit = hits.get(cacheKey(f.language, f.blob));
      if (hit) facts.set(f.path, hit);
    }
    const graph = callGraph(snaps, facts);
    this.#graph = { runId: run.id, graph, byKey };
    return this.#graph;
  }
}
