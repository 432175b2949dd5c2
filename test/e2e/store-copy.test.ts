/**
 * `ratchet store copy` / `store verify` through the BUILT CLI and a real PostgreSQL server
 * (test/harness/pg.ts). A SQLite workspace made by the CLI (plans, steps, a `step run` whose cut log
 * makes a blob, a learned workflow run, events) is copied into PostgreSQL; the copy answers
 * `plan show`, `plan show --full` (from a folder that shares nothing with the workspace), `runs
 * show` and `events --since` exactly like the original, and new events continue after the copied
 * ids. Copied back into a fresh SQLite file it has the same hashes. A non-empty target and a corrupt
 * blob are refused with nothing written; `kill -9` in the middle of a copy leaves an empty target
 * the next copy fills.
 */
import { cpSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import {
  assertBuilt,
  type CliResult,
  makeTempDir,
  makeWorkspace,
  ROOT,
  ratchet,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 240_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const cleanup: (() => void)[] = [];
const SECRET_ENV = { SECRET_API_TOKEN: "tok-store-copy-not-for-logs" };

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(() => {
  cluster?.stop();
  for (const c of cleanup) c();
});

async function workspace(): Promise<TestWorkspace> {
  const ws = await makeWorkspace("ratchet-store-copy-");
  cleanup.push(ws.remove);
  return ws;
}

function tempDir(): string {
  const d = makeTempDir("ratchet-store-copy-");
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

function json<T>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

function pg<R>(url: string, sql: string): R[] {
  const s = PgStore.open(url);
  try {
    return s.pg.query<R>(sql).rows;
  } finally {
    s.close();
  }
}

interface Report {
  ok: boolean;
  committed: boolean;
  tables: { table: string; rows: number; targetRows: number; hash: string; ok: boolean }[];
  blobs: { count: number; ok: boolean };
}

const th = (title: string, type = "THINKING") => ({ title, type });

/** A workspace with two plans, a cut log (a blob), a learned workflow run and their events. */
async function filledWorkspace() {
  const ws = await workspace();
  cpSync(join(ROOT, "test", "fixtures", "workflows", "pipeline"), join(ws.dir, "workflows", "pipeline"), {
    recursive: true,
  });
  const pub = await ws.run(["plan", "publish", "-"], {
    input: JSON.stringify({ goal: "move up", steps: [th("noisy", "COMMAND"), th("think")] }),
  });
  expect(pub.status, pub.stderr).toBe(0);
  const planId = String(pub.marker?.plan_id);
  const [noisy, think] = (pub.marker?.step_ids ?? []) as string[];
  const run = await ws.run(["step", "run", "-"], {
    input: JSON.stringify({
      step_id: noisy,
      type: "COMMAND",
      command:
        'i=0; while [ $i -lt 2000 ]; do echo "line $i of a long output that gets cut"; i=$((i+1)); done',
    }),
  });
  expect(run.status, run.stderr).toBe(0);
  const start = await ws.run(["step", "start", "-"], { input: JSON.stringify({ step_id: think }) });
  expect(start.status, start.stderr).toBe(0);
  const wf = await ws.run(
    ["run", join(ws.dir, "workflows", "pipeline", "workflow.yaml"), "--group", "small", "--json"],
    {
      env: SECRET_ENV,
      timeoutMs: 120_000,
    },
  );
  expect(wf.status, wf.stderr + wf.stdout).toBe(0);
  const runId = json<{ run_id: string }>(wf).run_id;
  return { ws, planId, runId };
}

describe.runIf(pgAvailable())("ratchet store copy", () => {
  test("SQLite workspace → PostgreSQL → SQLite: the copy reads the same, events continue, hashes match", async () => {
    const { ws, planId, runId } = await filledWorkspace();
    const url = cluster.createDatabase();

    const copy = await ws.run(["store", "copy", ".", url, "--json"]);
    expect(copy.status, copy.stderr).toBe(0);
    const report = json<Report>(copy);
    expect(report.ok).toBe(true);
    expect(report.committed).toBe(true);
    const rows = Object.fromEntries(report.tables.map((t) => [t.table, t.rows]));
    expect(rows.plans).toBe(2); // the move-up plan and the workflow run's plan
    expect(rows.workflow_runs).toBe(1);
    expect(rows.workflow_step_runs).toBe(2);
    expect(rows.events).toBeGreaterThan(5);
    expect(report.blobs.count).toBeGreaterThanOrEqual(1);
    expect(copy.stderr).toContain("store copy: copying events");

    // The copy, read from a folder that shares no file with the workspace.
    const elsewhere = tempDir();
    const onPg = (args: string[]) => ratchet(["--db", url, ...args], { cwd: elsewhere });
    for (const args of [
      ["plan", "show", planId, "--json"],
      ["plan", "show", planId, "--full"],
      ["events", "--since", "3", "--json"],
      ["plan", "list", "--json"],
      ["runs", "show", runId, "--json"],
    ]) {
      const [a, b] = [await ws.run(args), await onPg(args)];
      expect(b.status, `${args.join(" ")}: ${b.stderr}`).toBe(0);
      expect(b.stdout, args.join(" ")).toBe(a.stdout);
    }
    const full = await onPg(["plan", "show", planId, "--full"]);
    expect(full.stdout).toContain("line 1999 of a long output");
    expect(existsSync(join(elsewhere, ".ratchet", "ratchet.db"))).toBe(false);

    // Back into a fresh SQLite file: the same hashes, and verify agrees with the original.
    const backDir = tempDir();
    const back = await ratchet(["store", "copy", url, join(backDir, "back.db"), "--json", "--quiet"], {
      cwd: backDir,
    });
    expect(back.status, back.stderr).toBe(0);
    const backReport = json<Report>(back);
    expect(backReport.tables.map((t) => [t.table, t.rows, t.hash])).toEqual(
      report.tables.map((t) => [t.table, t.rows, t.hash]),
    );
    expect(back.stderr).toBe("");
    const verify = await ws.run(["store", "verify", ".", join(backDir, "back.db")]);
    expect(verify.status, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^table\s+rows\s+hash-ok$/m);
    expect(verify.stdout).toMatch(/^events\s+\d+\s+ok$/m);
    const showBack = await ratchet(["--db", join(backDir, "back.db"), "plan", "show", planId, "--full"], {
      cwd: backDir,
    });
    expect(showBack.stdout).toBe(full.stdout);

    // A second copy into the (now non-empty) database: refused naming it and a table, nothing written.
    const lastId = (await ws.run(["events", "--json"])).lines.length;
    const again = await ws.run(["store", "copy", ".", url]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain("already holds Ratchet data (table plans has rows)");
    expect(again.stderr).toContain(String(url.split("/").pop()));
    expect(pg<{ n: number }>(url, "SELECT COUNT(*) AS n FROM events")).toEqual([{ n: lastId }]);

    // New work on the copy continues the event ids: `events --since <last>` picks up exactly it.
    const pub = await ratchet(["--db", url, "plan", "publish", "-"], {
      cwd: elsewhere,
      input: JSON.stringify({ goal: "after the move", steps: [th("x")] }),
    });
    expect(pub.status, pub.stderr).toBe(0);
    const since = await onPg(["events", "--since", String(lastId), "--json"]);
    const ids = since.lines.map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids[0]).toBe(lastId + 1);
    expect(ids).toEqual(ids.map((_, i) => lastId + 1 + i));

    // verify now sees the difference and names the first table that differs (exit 8).
    const diff = await ws.run(["store", "verify", ".", url]);
    expect(diff.status).toBe(8);
    expect(diff.stderr).toContain("plans differs");
    expect(diff.stdout).toMatch(/^plans\s+2→3\s+MISMATCH/m);
  });

  test("a corrupt blob in the workspace is refused naming its hash; the database stays empty", async () => {
    const { ws } = await filledWorkspace();
    const url = cluster.createDatabase();
    const db = new Database(ws.dbPath, { readonly: true });
    const { blob: hash } = db.prepare("SELECT blob FROM step_logs WHERE blob IS NOT NULL LIMIT 1").get() as {
      blob: string;
    };
    db.close();
    writeFileSync(join(ws.blobsDir, hash.slice(0, 2), hash.slice(2)), "not what was stored");
    const r = await ws.run(["store", "copy", ".", url]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`blob ${hash}`);
    expect(r.stderr).toContain("does not match its hash");
    expect(
      pg(url, "SELECT (SELECT COUNT(*) FROM plans) AS plans, (SELECT COUNT(*) FROM blobs) AS blobs"),
    ).toEqual([{ plans: 0, blobs: 0 }]);
    // Bad arguments: a missing source (3), a bad --batch (2); neither creates anything.
    const nowhere = join(tempDir(), "nothing-here.db");
    const missing = await ws.run(["store", "copy", nowhere, join(tempDir(), "t.db")]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toContain("nothing-here.db");
    expect(existsSync(nowhere)).toBe(false);
    expect((await ws.run(["store", "copy", ".", url, "--batch", "0"])).status).toBe(2);
  });

  test("skills (documents) and notes (provenance): copied to a SQLite file and read back the same; PostgreSQL without those tables refuses naming one", async () => {
    const ws = await workspace();
    expect(
      (
        await ws.run([
          "skills",
          "add",
          "triage",
          "--content",
          "look at issues",
          "--keywords",
          "triage,issues",
        ])
      ).status,
    ).toBe(0);
    const note = await ws.run([
      "note",
      "Finance reconciles by fiscal week",
      "--at",
      "2026-11-30 14:00",
      "--ref",
      "kind=meeting,label=finance sync",
    ]);
    expect(note.status, note.stderr).toBe(0);
    const dir = tempDir();
    const file = join(dir, "copy.db");
    const r = await ws.run(["store", "copy", ".", file, "--json", "--quiet"]);
    expect(r.status, r.stderr).toBe(0);
    const rows = Object.fromEntries(json<Report>(r).tables.map((t) => [t.table, t.rows]));
    expect(rows).toMatchObject({
      documents: 1,
      prov_utterances: 1,
      prov_references: 1,
      prov_reference_links: 1,
    });
    const list = ["skills", "list", "--json"];
    expect((await ratchet(["--db", file, ...list], { cwd: dir })).stdout).toBe((await ws.run(list)).stdout);

    const url = cluster.createDatabase();
    const hasDocs = pg<{ t: string | null }>(url, "SELECT to_regclass('documents')::text AS t")[0]?.t;
    const toPg = await ws.run(["store", "copy", ".", url]);
    if (hasDocs) {
      expect(toPg.status, toPg.stderr).toBe(0);
    } else {
      expect(toPg.status).toBe(2);
      expect(toPg.stderr).toMatch(/has no table (documents|prov_utterances)/);
      expect(pg(url, "SELECT COUNT(*) AS n FROM events")).toEqual([{ n: 0 }]);
    }
  });

  test("kill -9 mid-copy leaves an empty target (PostgreSQL: rolled back; SQLite: migrated, no rows); the next copy fills it", async () => {
    const ws = await workspace();
    const N = 250;
    const apply = await ws.run(["step", "apply", "-"], {
      input: Array.from({ length: N }, (_, i) =>
        JSON.stringify({ op: "publish-plan", goal: `bulk ${i}`, steps: [th("a"), th("b"), th("c")] }),
      ).join("\n"),
      timeoutMs: 120_000,
    });
    expect(apply.status, apply.stderr).toBe(0);
    const url = cluster.createDatabase();

    const victim = startRatchet(["store", "copy", ".", url, "--batch", "1"], {
      cwd: ws.dir,
      timeoutMs: 180_000,
    });
    await waitFor(
      () => victim.stderrSoFar().includes("copying steps"),
      "the copy to reach the steps",
      120_000,
      5,
    );
    victim.child.kill("SIGKILL");
    const dead = await victim.done;
    expect(dead.signal).toBe("SIGKILL");
    // The server rolls the dead session back; nothing of it remains, not even its lock.
    await waitFor(
      () =>
        pg<{ n: number }>(url, "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory'")[0]?.n === 0,
      "the dead session's lock to go",
      30_000,
    );
    expect(
      pg(
        url,
        "SELECT (SELECT COUNT(*) FROM projects) + (SELECT COUNT(*) FROM plans) + (SELECT COUNT(*) FROM steps) + (SELECT COUNT(*) FROM events) AS n",
      ),
    ).toEqual([{ n: 0 }]);
    const redo = await ws.run(["store", "copy", ".", url, "--json", "--quiet"]);
    expect(redo.status, redo.stderr).toBe(0);
    expect(json<Report>(redo).tables.find((t) => t.table === "plans")).toMatchObject({ rows: N, ok: true });

    // The other way: PostgreSQL → a new SQLite file, killed mid-copy.
    const dir = tempDir();
    const target = join(dir, "moved.db");
    const victim2 = startRatchet(["store", "copy", url, target, "--batch", "1"], {
      cwd: dir,
      timeoutMs: 180_000,
    });
    await waitFor(
      () => victim2.stderrSoFar().includes("copying steps"),
      "the copy back to reach the steps",
      120_000,
      5,
    );
    victim2.child.kill("SIGKILL");
    expect((await victim2.done).signal).toBe("SIGKILL");
    const count = await ratchet(["--db", target, "plan", "list", "--json"], { cwd: dir });
    expect(count.status, count.stderr).toBe(0);
    expect(JSON.parse(count.stdout)).toEqual([]);
    const redo2 = await ratchet(["store", "copy", url, target, "--quiet"], { cwd: dir });
    expect(redo2.status, redo2.stderr).toBe(0);
    const verify = await ratchet(["store", "verify", join(ws.dir), target], { cwd: dir });
    expect(verify.status, verify.stderr).toBe(0);
  });
});
