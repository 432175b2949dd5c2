/**
 * Test helpers of the words area (imported by its tests only): a real ledger on a temp SQLite
 * file with a registered project whose repo is a real `git init` folder, and a real analysis of
 * files committed into it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../core/index.js";
import { Ledger } from "../../ledger/index.js";
import { BlobStore, SqliteStore } from "../../store/index.js";
import { commitFiles } from "../../testing/prov-repo.js";
import { nodeSourceFor } from "../nodes/index.js";

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

/**
 * Commits `files` into the kit's repo and lets the analyser take a run of it (trigger `register`);
 * returns the key it gave each qualified name.
 */
export async function analysed(kit: Kit, files: Record<string, string>): Promise<Record<string, string>> {
  commitFiles(kit.repo, files);
  const src = nodeSourceFor(kit.store);
  await src.refresh("shop", { trigger: "register" });
  return Object.fromEntries(src.nodes("shop").nodes.map((n) => [n.qualified_name, n.node_key]));
}
