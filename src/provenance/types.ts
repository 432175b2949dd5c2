/**
 * The contract between the node source (`nodes/`) and its readers (`reasons/`, `why`): which
 * symbols of a registered project exist at an analysis run, under which rename-stable keys, and
 * which of them a plan changed. Provenance only ever reads the node source.
 */

/** Symbol nodes; data nodes (`sql_table`, `dataframe`, `column`, …) may be added by the source. */
export type NodeType = "function" | "method" | "class" | (string & {});

/** One analysis run of a project's code (the spec's `analysis_run`). */
export interface AnalysisRunRow {
  id: number;
  project: string;
  plan_id: string | null;
  step_id: string | null;
  /** What started it: `review` (the refresh at `<plan>-REVIEW.1`), `register`, `manual`, … */
  trigger: string;
  commit_sha: string | null;
  created_at: string;
}

/** One node as a run saw it (the spec's `node_snapshot`). */
export interface NodeSnapshot {
  run_id: number;
  node_key: string;
  node_type: NodeType;
  qualified_name: string;
  file_path: string;
  line_start: number;
  line_end: number;
  struct_sig: string | null;
  dataflow_sig: string | null;
}

/** One identity event of a run (`node_added`, `node_removed`, `node_changed`, `node_matched`, …). */
export interface NodeEvent {
  run_id: number;
  seq: number;
  event_type: string;
  node_key: string;
  payload: Record<string, unknown>;
}

/** One reason slot: a node the plan added, removed or structurally changed. */
export interface ChangedNode {
  node_key: string;
  qualified_name: string;
  node_type: NodeType;
  event_types: string[];
  /** The highest run of the plan that touched it. */
  run_id: number;
}

/** What a refresh attributes its run to. */
export interface RefreshOptions {
  planId?: string | null;
  stepId?: string | null;
  trigger: string;
}

export interface NodeSource {
  /** True when the project has a usable node source (a repo on disk and at least one run). */
  hasGraph(project: string): boolean;
  /**
   * Analyses the project's code now, matches it against the previous run, records the run.
   * Asynchronous: the parsers (tree-sitter's wasm, the `typescript` compiler) load on first use.
   */
  refresh(project: string, opts: RefreshOptions): Promise<AnalysisRunRow>;
  /** Nodes the plan added, removed or structurally changed (its reason slots' universe). */
  changedNodes(planId: string): ChangedNode[];
  /** Nodes with any event in the plan's runs (what the close-time rules look at). */
  touchedNodes(planId: string): ChangedNode[];
  /** A qualified name, an `nk_…` key or `file:line` → the newest snapshot of that node. */
  resolve(project: string, target: string): NodeSnapshot | undefined;
  /** Every event of one key, oldest first (a node's identity history). */
  history(nodeKey: string): NodeEvent[];
  /**
   * What the node calls at the project's newest run, resolved as the analyser resolves callees for
   * dataflow_sig: a symbol of the same file by local name, else the only symbol of that name in the
   * run. A name that resolves to nothing at the newest run but names exactly one removed node of the
   * project (its latest event `node_removed`) comes back as that node's last snapshot; other
   * unresolved names (builtins, imports from outside the repo, ambiguous names) are ignored.
   * Empty when the node is not in the newest run or nothing is known of its file.
   */
  callees(project: string, nodeKey: string): NodeSnapshot[];
  /** The nodes of the project's newest run that call this one (the inverse of {@link callees}, removed nodes aside). */
  callers(project: string, nodeKey: string): NodeSnapshot[];
}
