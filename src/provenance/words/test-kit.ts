/**
 * Test helpers of the words area (imported by its tests only): a real ledger on a temp SQLite
 * file with a registered project whose repo is a real `git init` folder, and a small
 * `NodeSource` over real `prov_node_snapshots` rows.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../core/index.js";
import { Ledger } from "../../ledger/index.js";
import { BlobStore, SqliteStore } from "../../store/index.js";
import type { NodeSnapshot, NodeSource } from "../types.js";

export interface Kit {
  dir: string;
  repo: string;
  dbPath: string;
  store: SqliteStore;
  ledger: Ledger;
  clock: ManualClock;
  count(table: string): number;
  close(): void;
}

export function makeKit(opts: { project?: string } = {}): Kit {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-words-")));
  const repo = join(dir, "shop");
  mkdirSync(repo);
  execFileSync("git", ["init", "-q", repo]);
  const dbPath = join(dir, ".ratchet", "ratchet.db");
  const store = SqliteStore.open(dbPath, { create: true });
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 10, 0, 0));
  const ledger = new Ledger({ store, blobs: new BlobStore(join(dir, ".ratchet", "blobs")), clock });
  const project = opts.project ?? "shop";
  store.tx(() => store.addProject({ name: project, repo_path: repo, created_at: ledger.now() }));
  return {
    dir,
    repo,
    dbPath,
    store,
    ledger,
    clock,
    count: (table) => (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
    close: () => store.close(),
  };
}

/** Publishes a plan from the kit's repo (so it joins the project). */
export function publishIn(kit: Kit, goal = "Keep fiscal weeks"): string {
  return kit.ledger.publish({ goal, steps: [{ title: "do it" }] }, { cwd: kit.repo }).plan_id;
}

/** A node source over real snapshot rows: one run with the given nodes. */
export function snapshotNodeSource(
  kit: Kit,
  project: string,
  nodes: { key: string; qn: string }[],
): NodeSource {
  const db = kit.store.db;
  const runId = Number(
    db
      .prepare("INSERT INTO prov_analysis_runs (project, trigger, created_at) VALUES (?, 'manual', ?)")
      .run(project, kit.ledger.now()).lastInsertRowid,
  );
  for (const n of nodes)
    db.prepare(
      "INSERT INTO prov_node_snapshots (run_id, node_key, node_type, qualified_name, file_path, line_start, line_end) VALUES (?, ?, 'function', ?, 'src/x.py', 1, 2)",
    ).run(runId, n.key, n.qn);
  const resolve = (p: string, target: string): NodeSnapshot | undefined =>
    db
      .prepare(
        "SELECT s.* FROM prov_node_snapshots s JOIN prov_analysis_runs r ON r.id = s.run_id WHERE r.project = ? AND (s.node_key = ? OR s.qualified_name = ?) ORDER BY s.run_id DESC LIMIT 1",
      )
      .get(p, target, target) as NodeSnapshot | undefined;
  return {
    hasGraph: (p) => db.prepare("SELECT 1 FROM prov_analysis_runs WHERE project = ?").get(p) !== undefined,
    refresh: () => {
      throw new Error("not used by these tests");
    },
    changedNodes: () => [],
    touchedNodes: () => [],
    resolve,
    history: () => [],
  };
}
