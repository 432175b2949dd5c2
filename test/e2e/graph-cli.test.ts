/**
 * The node source through the BUILT CLI on a real git repository with Python and TypeScript files:
 * project add (first run) → publish (baseline) → edit (a rename, a body edit, a new function) →
 * start REVIEW.1 (the review run) → `graph show file:line` and the plan's changed nodes.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { nodeSourceFor } from "../../src/provenance/nodes/index.js";
import { SqliteStore } from "../../src/store/index.js";
import { assertBuilt, makeWorkspace, ok, publish, query, type TestWorkspace } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
let repo: string;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", ...args], {
    encoding: "utf8",
  });
const write = (path: string, content: string) => {
  mkdirSync(join(repo, path, ".."), { recursive: true });
  writeFileSync(join(repo, path), content);
};

const PIPELINE = [
  "def load_orders(path):",
  '    """Weekly orders."""',
  "    rows = read_rows(path)",
  "    return [r for r in rows if r]",
  "",
  "def read_rows(path):",
  "    return open(path).read().splitlines()",
  "",
].join("\n");
const ROLLUP = [
  "export class Rollup {",
  "  weekly(rows: number[]): number {",
  "    return rows.reduce((a, b) => a + b, 0);",
  "  }",
  "}",
  "",
].join("\n");

beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-e2e-graph-");
  repo = join(ws.dir, "shop");
  mkdirSync(repo);
  git("init", "-q");
  write("shop/pipeline.py", PIPELINE);
  write("web/rollup.ts", ROLLUP);
  git("add", "-A");
  git("commit", "-qm", "init");
});
afterAll(() => ws?.remove());

const runs = () =>
  query<{ id: number; plan_id: string | null; step_id: string | null; trigger: string }>(
    ws,
    "SELECT id, plan_id, step_id, trigger FROM prov_analysis_runs ORDER BY id",
  );

describe("graph CLI", () => {
  let planId = "";

  test("project add takes the first run; refresh/nodes/show read it", async () => {
    const add = await ws.run(["project", "add", "shop", "--repo", repo]);
    expect(add.status, add.stderr).toBe(0);
    expect(add.marker).toMatchObject({ ok: true, op: "project-add", graph_run_id: 1 });
    expect(runs()).toEqual([{ id: 1, plan_id: null, step_id: null, trigger: "register" }]);
    const nodes = await ws.run(["graph", "nodes", "--project", "shop", "--json"]);
    expect(nodes.status, nodes.stderr).toBe(0);
    expect(JSON.parse(nodes.stdout).nodes.map((n: { qualified_name: string }) => n.qualified_name)).toEqual([
      "shop.pipeline.load_orders",
      "shop.pipeline.read_rows",
      "web.rollup.Rollup",
      "web.rollup.Rollup.weekly",
    ]);
    // The project is found from the current folder too.
    const here = await ws.run(["graph", "nodes", "--file", "web/rollup.ts"], { cwd: join(repo, "web") });
    expect(here.status, here.stderr).toBe(0);
    expect(here.stdout).toContain("web.rollup.Rollup.weekly  web/rollup.ts:2-4");
  });

  test("publish takes the baseline; edits; REVIEW.1's start takes the review run", async () => {
    const p = await publish(ws, {
      goal: "fiscal weeks",
      project: "shop",
      steps: [{ title: "edit", type: "CODE" }],
    });
    planId = p.plan_id;
    expect(runs().at(-1)).toMatchObject({ plan_id: planId, step_id: null, trigger: "publish" });
    // The plan's work: rename read_rows (body kept), edit weekly's body, add a function.
    write(
      "shop/pipeline.py",
      `${PIPELINE.replaceAll("read_rows", "fetch_rows")}\ndef fiscal_week(d):\n    return d.isocalendar()[1]\n`,
    );
    write("web/rollup.ts", ROLLUP.replace("a + b, 0", "a + b, 1"));
    await ok(ws, ["step", "start"], { step_id: `${planId}-A` });
    await ok(ws, ["step", "complete"], { step_id: `${planId}-A` });
    await ok(ws, ["step", "start"], { step_id: `${planId}-REVIEW.1` });
    expect(runs().at(-1)).toMatchObject({
      plan_id: planId,
      step_id: `${planId}-REVIEW.1`,
      trigger: "review",
    });
  });

  test("graph show file:line resolves through the newest run, with the node's history", async () => {
    const show = await ws.run(["graph", "show", "shop/pipeline.py:7", "--project", "shop", "--json"]);
    expect(show.status, show.stderr).toBe(0);
    const j = JSON.parse(show.stdout);
    expect(j.resolved).toMatchObject({
      qualified_name: "shop.pipeline.fetch_rows",
      line_start: 6,
      line_end: 7,
    });
    expect(j.history.map((e: { event_type: string }) => e.event_type)).toEqual([
      "node_added",
      "node_matched",
      "node_renamed",
    ]);
    const text = await ws.run(["graph", "show", j.resolved.node_key, "--project", "shop"]);
    expect(text.stdout).toContain("node_renamed  shop.pipeline.read_rows → shop.pipeline.fetch_rows");
  });

  test("the plan's changed nodes: the edit and the addition, not the rename's unchanged body", () => {
    const store = SqliteStore.open(ws.dbPath);
    try {
      const changed = nodeSourceFor(store).changedNodes(planId);
      expect(changed.map((c) => [c.qualified_name, c.event_types])).toEqual(
        expect.arrayContaining([
          ["shop.pipeline.load_orders", ["node_changed"]],
          ["web.rollup.Rollup.weekly", ["node_changed"]],
          ["shop.pipeline.fiscal_week", ["node_added"]],
        ]),
      );
      expect(changed.map((c) => c.qualified_name)).not.toContain("shop.pipeline.fetch_rows");
      expect(changed.map((c) => c.qualified_name)).not.toContain("web.rollup.Rollup");
    } finally {
      store.close();
    }
  });

  test("refresh honours PROVLEDGER_* env, prints counts", async () => {
    const r = await ws.run(["graph", "refresh", "--project", "shop"], {
      env: {
        PROVLEDGER_PLAN_ID: planId,
        PROVLEDGER_STEP_ID: `${planId}-REVIEW.1`,
        PROVLEDGER_TRIGGER: "review",
      },
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/run \d+ · project shop · trigger review · plan /);
    expect(r.stdout).toMatch(/nodes 5 \(function 3, class 1, method 1\)/);
    expect(r.marker).toMatchObject({ ok: true, op: "graph-refresh", project: "shop", nodes: 5 });
    expect(runs().at(-1)).toMatchObject({ plan_id: planId, trigger: "review" });
  });

  test("bad input: clear errors, documented statuses, nothing written", async () => {
    const before = runs().length;
    const cases: [string[], number, RegExp][] = [
      [["graph", "refresh", "--project", "nope"], 3, /nope/],
      [["graph", "show", "m.f", "--project", "nope"], 3, /nope/],
      [["graph", "show", "two words", "--project", "shop"], 2, /target/],
      [["graph", "show", "nk_zz", "--project", "shop"], 2, /nk_/],
      [["graph", "show", "shop.pipeline.nothing_here", "--project", "shop"], 3, /no node/],
      [["graph", "refresh", "--project", "shop", "--plan", "no-such-plan"], 3, /no-such-plan/],
      [["graph", "refresh", "--project", "shop", "--step", "x-A"], 2, /plan id/],
      [["graph", "refresh", "--project", "shop", "--trigger", "Bad Word"], 2, /trigger/],
      [["graph", "refresh", "--project", "shop", "--plan", planId, "--trigger", "publish"], 2, /reserved/],
    ];
    for (const [args, status, message] of cases) {
      const r = await ws.run(args);
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(status);
      expect(r.stderr).toMatch(message);
    }
    expect((await ws.run(["project", "add", "bare"])).status).toBe(0);
    const bare = await ws.run(["graph", "refresh", "--project", "bare"]);
    expect(bare.status).toBe(10);
    expect(bare.stderr).toMatch(/no state graph: project bare has no repository/);
    const nowhere = await ws.run(["graph", "nodes"]);
    expect(nowhere.status).toBe(2);
    expect(nowhere.stderr).toMatch(/--project is required/);
    expect(runs().length).toBe(before);
  });
});
