/** The server's keyset queries over a real store. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeLedgerFixture } from "../testing/ledger-fixtures.js";
import { ServerQueries } from "./queries.js";

let fx: ReturnType<typeof makeLedgerFixture>;
beforeEach(() => {
  fx = makeLedgerFixture();
});
afterEach(() => fx.dispose());

function run(id: string, workflow: string, path: string, at: string, status = "passed") {
  fx.store.db
    .prepare(
      "INSERT INTO workflow_runs (run_id, workflow_id, workflow_path, trigger, status, owner, started_at) VALUES (?, ?, ?, 'manual', ?, '1@h', ?)",
    )
    .run(id, workflow, path, status, at);
}

describe("ServerQueries", () => {
  it("lists each workflow once with its newest path, skipping from id to id", () => {
    run("r1", "b", "/old/b.yaml", "2026-01-01T00:00:01Z");
    run("r2", "a", "/a.yaml", "2026-01-01T00:00:02Z");
    run("r3", "b", "/new/b.yaml", "2026-01-01T00:00:03Z");
    run("r4", "c", "/c.yaml", "2026-01-01T00:00:04Z");
    const q = new ServerQueries(fx.store);
    expect(q.workflows(10)).toEqual([
      { workflow_id: "a", workflow_path: "/a.yaml", last_run_at: "2026-01-01T00:00:02Z" },
      { workflow_id: "b", workflow_path: "/new/b.yaml", last_run_at: "2026-01-01T00:00:03Z" },
      { workflow_id: "c", workflow_path: "/c.yaml", last_run_at: "2026-01-01T00:00:04Z" },
    ]);
    expect(q.workflows(2).map((w) => w.workflow_id)).toEqual(["a", "b"]);
    expect(q.workflowPath("b")).toBe("/new/b.yaml");
    expect(new ServerQueries(fx.store).workflows(5).length).toBe(3);
  });

  it("pages runs newest first by (started_at, run_id) with ties split by id", () => {
    for (const id of ["r1", "r2", "r3"]) run(id, "w", "/w.yaml", "2026-01-01T00:00:00Z");
    run("r4", "w", "/w.yaml", "2026-01-01T00:00:09Z", "failed");
    const q = new ServerQueries(fx.store);
    const first = q.runs({ limit: 2 });
    expect(first.map((r) => r.run_id)).toEqual(["r4", "r3"]);
    const last = first[1]!;
    const next = q.runs({ limit: 5, before: { started_at: last.started_at, run_id: last.run_id } });
    expect(next.map((r) => r.run_id)).toEqual(["r2", "r1"]);
    expect(q.runs({ limit: 5, status: "failed" }).map((r) => r.run_id)).toEqual(["r4"]);
  });

  it("uses an index for every list (no sort, no full scan)", () => {
    const plan = (sql: string) =>
      (fx.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
        .map((r) => r.detail)
        .join(" | ");
    expect(plan("SELECT * FROM workflow_runs ORDER BY started_at DESC, run_id DESC LIMIT 5")).toContain(
      "workflow_runs_started",
    );
    expect(plan("SELECT * FROM plans ORDER BY created_at DESC, plan_id DESC LIMIT 5")).not.toContain(
      "TEMP B-TREE",
    );
  });
});
