/**
 * Test fixture for headlines and `why`: a real SQLite workspace with a registered project whose
 * repository is a real git repo holding the nodes' code (each function at its recorded lines), one
 * recorded analysis run of it (the rows the analyser writes for that tree, under fixed keys), and
 * reason rows inserted through the hash chain. The real node
 * source reads it; a publish's baseline re-analyses the repo and keeps every key (same names).
 * Used by the tests and the bench only.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Ledger } from "../../ledger/index.js";
import { BlobStore, SqliteStore } from "../../store/index.js";
import { insertChained, insertRow } from "../rows.js";

export interface FixtureNode {
  node_key: string;
  qualified_name: string;
  file_path: string;
  line_start: number;
  line_end: number;
  node_type?: string;
}

export interface Fixture {
  dir: string;
  repo: string;
  dbPath: string;
  store: SqliteStore;
  ledger: Ledger;
  runId: number;
  reason(cols: Record<string, string | number | null>): number;
  utterance(text: string): number;
  reference(cols: { kind: string; label: string; uri?: string }): number;
  link(reasonId: number, referenceId: number): void;
  count(table: string, where?: string): number;
}

export const NODES: FixtureNode[] = [
  {
    node_key: "nk_34676ea5f1d4",
    qualified_name: "shop.pipeline.load_orders",
    file_path: "shop/pipeline.py",
    line_start: 10,
    line_end: 30,
  },
  {
    node_key: "nk_a72a091c8cc2",
    qualified_name: "shop.pipeline.rollup",
    file_path: "shop/pipeline.py",
    line_start: 32,
    line_end: 50,
  },
];

/**
 * Writes `nodes` as Python functions into a fresh git repo at `repo` (one commit): each function's
 * `def` on its `line_start`, its body up to `line_end`, so the analyser finds it where the run says.
 */
export function writeRepo(repo: string, nodes: FixtureNode[] = NODES): void {
  const files = new Map<string, string[]>();
  for (const n of nodes) {
    const lines = files.get(n.file_path) ?? [];
    while (lines.length < n.line_start - 1) lines.push("");
    const name = n.qualified_name.split(".").pop() as string;
    lines.push(`def ${name}(rows):`);
    for (let l = n.line_start + 1; l < n.line_end; l++)
      lines.push(`    rows = [r for r in rows if r]  # ${l}`);
    lines.push("    return rows");
    files.set(n.file_path, lines);
  }
  mkdirSync(repo, { recursive: true });
  for (const [path, lines] of files) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), `${lines.join("\n")}\n`);
  }
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", ...args], {
      stdio: "ignore",
    });
  git("init", "-q");
  git("add", "-A");
  git("commit", "-qm", "fixture");
}

/** Registers `project` and records one analysis run of `nodes` in `store` (what a node source writes). */
export function seedProject(
  store: SqliteStore,
  project: string,
  repo: string,
  nodes: FixtureNode[] = NODES,
): number {
  const db = store.db;
  const t = "2026-11-20T09:12:00.000Z";
  return store.tx(() => {
    store.addProject({ name: project, repo_path: repo, created_at: t });
    const run = insertRow(db, "prov_analysis_runs", {
      project,
      trigger: "register",
      commit_sha: "abc",
      created_at: t,
    });
    let seq = 0;
    for (const n of nodes) {
      insertRow(db, "prov_node_snapshots", {
        run_id: run,
        node_key: n.node_key,
        node_type: n.node_type ?? "function",
        qualified_name: n.qualified_name,
        file_path: n.file_path,
        line_start: n.line_start,
        line_end: n.line_end,
        struct_sig: "0123456789abcdef",
        dataflow_sig: "trivial",
      });
      insertRow(db, "prov_node_events", {
        run_id: run,
        seq: ++seq,
        event_type: "node_added",
        node_key: n.node_key,
        payload: "{}",
      });
    }
    return run;
  });
}

/** Inserts one change reason through the hash chain (defaults: asserted, agent, on the first node). */
export function insertReason(
  store: SqliteStore,
  project: string,
  cols: Record<string, string | number | null>,
): number {
  const t = "2026-11-20T09:12:00.000Z";
  return store.tx(() =>
    insertChained(store.db, "prov_change_reasons", {
      project,
      node_key: NODES[0]?.node_key ?? null,
      plan_id: "old-plan",
      occurred_at: t,
      recorded_at: t,
      recorded_by: "agent",
      tier: "asserted",
      ...cols,
    }),
  );
}

export function fixture(opts: { project?: string; nodes?: FixtureNode[]; dir?: string } = {}): Fixture {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "ratchet-why-"));
  const dbPath = join(dir, "ratchet.db");
  const store = SqliteStore.open(dbPath, { create: true });
  const project = opts.project ?? "shop";
  const repo = join(dir, "repo");
  const db = store.db;
  const t = "2026-11-20T09:12:00.000Z";
  writeRepo(repo, opts.nodes);
  const runId = seedProject(store, project, repo, opts.nodes);
  const ledger = new Ledger({ store, blobs: new BlobStore(join(dir, "blobs")) });
  return {
    dir,
    repo,
    dbPath,
    store,
    ledger,
    runId,
    reason: (cols) => insertReason(store, project, cols),
    utterance: (text) =>
      store.tx(() =>
        insertChained(db, "prov_utterances", {
          project,
          text,
          occurred_at: t,
          recorded_at: t,
          origin: "hook",
        }),
      ),
    reference: (c) =>
      store.tx(() =>
        insertChained(db, "prov_references", {
          project,
          kind: c.kind,
          label: c.label,
          uri: c.uri ?? null,
          occurred_at: t,
          registered_at: t,
          verifiability: c.kind === "verbal" ? "verbal" : c.uri ? "linked" : "unreachable",
        }),
      ),
    link: (reasonId, referenceId) => {
      store.tx(() =>
        insertRow(db, "prov_reference_links", { reason_id: reasonId, reference_id: referenceId }),
      );
    },
    count: (table, where = "1") =>
      (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n,
  };
}
