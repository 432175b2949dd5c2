/** The node source on real git repositories and a real SQLite store. */
import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { makeLedgerFixture } from "../../testing/ledger-fixtures.js";
import { nodeSourceFor } from "./index.js";

function setup(files: Record<string, string>) {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  const repo = join(fx.dir, "repo");
  mkdirSync(repo);
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", ...args], {
      encoding: "utf8",
    });
  git("init", "-q");
  const write = (path: string, content: string) => {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), content);
  };
  for (const [p, c] of Object.entries(files)) write(p, c);
  git("add", "-A");
  git("commit", "-qm", "init");
  fx.addProject("shop", repo);
  const src = nodeSourceFor(fx.store);
  const plan = () => fx.publish("change shop", ["CODE"], { project: "shop" }).plan_id;
  const count = (table: string) =>
    (fx.store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  return { fx, repo, git, write, src, plan, count };
}

const PIPELINE = [
  "def load_orders(path):",
  '    """Read the orders."""',
  "    rows = read_csv(path)",
  "    return [r for r in rows if r]",
  "",
  "def read_csv(path):",
  "    return open(path).read().splitlines()",
  "",
  "class Report:",
  "    def render(self, rows):",
  "        return len(rows)",
  "",
].join("\n");

const UTIL_TS = [
  "export function total(xs: number[]): number {",
  "  return xs.reduce((a, b) => a + b, 0);",
  "}",
  "",
].join("\n");

describe("refresh and identity", () => {
  it("names nodes, mints nk_ keys from run id, type and name, and records the first run as node_added", async () => {
    const t = setup({ "shop/pipeline.py": PIPELINE, "web/util.ts": UTIL_TS, "README.md": "# shop\n" });
    const rep = await t.src.refreshReport("shop", { trigger: "register" });
    expect(rep.run).toMatchObject({ project: "shop", trigger: "register", plan_id: null });
    expect(rep.run.commit_sha).toMatch(/^[0-9a-f]{40}$/);
    const { nodes } = t.src.nodes("shop");
    expect(nodes.map((n) => [n.node_type, n.qualified_name, n.file_path, n.line_start, n.line_end])).toEqual([
      ["function", "shop.pipeline.load_orders", "shop/pipeline.py", 1, 4],
      ["function", "shop.pipeline.read_csv", "shop/pipeline.py", 6, 7],
      ["class", "shop.pipeline.Report", "shop/pipeline.py", 9, 11],
      ["method", "shop.pipeline.Report.render", "shop/pipeline.py", 10, 11],
      ["function", "web.util.total", "web/util.ts", 1, 3],
    ]);
    const { createHash } = await import("node:crypto");
    const expected = `nk_${createHash("sha1").update(`${rep.run.id}:function:shop.pipeline.load_orders`).digest("hex").slice(0, 12)}`;
    expect(t.src.resolve("shop", "shop.pipeline.load_orders")?.node_key).toBe(expected);
    expect(rep.events_by_type).toEqual({ node_added: 5 });
    expect(rep).toMatchObject({ files: 2, parsed: 2, cached: 0 });
  });

  it("a second refresh of an unchanged tree re-parses nothing and records no events", async () => {
    const t = setup({ "shop/pipeline.py": PIPELINE, "web/util.ts": UTIL_TS });
    await t.src.refresh("shop", { trigger: "register" });
    const rep = await t.src.refreshReport("shop", { trigger: "manual" });
    expect(rep).toMatchObject({ files: 2, parsed: 0, cached: 2, events_by_type: {} });
    t.write("web/util.ts", `${UTIL_TS}// trailing comment\n`);
    const again = await t.src.refreshReport("shop", { trigger: "manual" });
    expect(again).toMatchObject({ parsed: 1, cached: 1, events_by_type: {} });
    expect(again.run.commit_sha).toMatch(/\+dirty$/);
  });

  it("a rename keeps the key and records node_matched (via struct_sig) + node_renamed", async () => {
    const t = setup({ "shop/pipeline.py": PIPELINE });
    await t.src.refresh("shop", { trigger: "register" });
    const key = t.src.resolve("shop", "shop.pipeline.read_csv")?.node_key;
    t.write("shop/pipeline.py", PIPELINE.replaceAll("read_csv", "read_lines"));
    const rep = await t.src.refreshReport("shop", { trigger: "manual" });
    expect(t.src.resolve("shop", "shop.pipeline.read_lines")?.node_key).toBe(key);
    const h = t.src.history(key as string);
    expect(h.map((e) => e.event_type)).toEqual(["node_added", "node_matched", "node_renamed"]);
    expect(h[1]?.payload).toEqual({ via: "struct_sig" });
    expect(h[2]?.payload).toMatchObject({
      from: { qualified_name: "shop.pipeline.read_csv" },
      to: { qualified_name: "shop.pipeline.read_lines" },
    });
    // The caller's text changed (it calls the new name): a structural change of load_orders.
    expect(rep.events_by_type.node_changed).toBe(1);
    expect(rep.events_by_type.node_added).toBeUndefined();
  });

  it("moving a file keeps the keys and records node_moved", async () => {
    const t = setup({ "web/util.ts": UTIL_TS });
    await t.src.refresh("shop", { trigger: "register" });
    const key = t.src.resolve("shop", "web.util.total")?.node_key as string;
    renameSync(join(t.repo, "web/util.ts"), join(t.repo, "web/math.ts"));
    await t.src.refresh("shop", { trigger: "manual" });
    expect(t.src.resolve("shop", "web.math.total")?.node_key).toBe(key);
    const moved = t.src.history(key).find((e) => e.event_type === "node_moved");
    expect(moved?.payload).toEqual({
      from: { qualified_name: "web.util.total", file_path: "web/util.ts" },
      to: { qualified_name: "web.math.total", file_path: "web/math.ts" },
    });
    expect(t.src.history(key).some((e) => e.event_type === "node_renamed")).toBe(false);
  });

  it("two identical functions both renamed: identity_ambiguous, fresh keys, never linked by guess", async () => {
    const twin = (name: string) => `def ${name}(x):\n    return x * 2\n\n`;
    const t = setup({ "m.py": twin("a") + twin("b") });
    await t.src.refresh("shop", { trigger: "register" });
    const oldA = t.src.resolve("shop", "m.a")?.node_key as string;
    const oldB = t.src.resolve("shop", "m.b")?.node_key as string;
    t.write("m.py", twin("c") + twin("d"));
    const rep = await t.src.refreshReport("shop", { trigger: "manual" });
    const c = t.src.resolve("shop", "m.c")?.node_key as string;
    const d = t.src.resolve("shop", "m.d")?.node_key as string;
    expect([c, d]).not.toContain(oldA);
    expect([c, d]).not.toContain(oldB);
    expect(c).not.toBe(d);
    expect(rep.events_by_type).toEqual({ identity_ambiguous: 2, node_added: 2, node_removed: 2 });
    const amb = t.src.history(c).find((e) => e.event_type === "identity_ambiguous");
    expect(amb?.payload).toMatchObject({ via: "struct_sig", group: ["m.c", "m.d"] });
    expect([...((amb?.payload.candidates as string[] | undefined) ?? [])].sort()).toEqual(
      [oldA, oldB].sort(),
    );
    expect(t.src.history(oldA).map((e) => e.event_type)).toEqual(["node_added", "node_removed"]);
  });

  it("renamed and edited at once: matched through the dataflow signature when it is unique", async () => {
    const t = setup({ "m.py": "def f(a, b):\n    return helper(a) + b\n\ndef helper(x):\n    return x\n" });
    await t.src.refresh("shop", { trigger: "register" });
    const key = t.src.resolve("shop", "m.f")?.node_key as string;
    t.write("m.py", "def g(a, b):\n    return helper(b) - a\n\ndef helper(x):\n    return x\n");
    await t.src.refresh("shop", { trigger: "manual" });
    expect(t.src.resolve("shop", "m.g")?.node_key).toBe(key);
    expect(
      t.src
        .history(key)
        .slice(1)
        .map((e) => [e.event_type, e.payload]),
    ).toEqual([
      ["node_matched", { via: "dataflow_sig" }],
      ["node_renamed", expect.anything()],
      ["node_changed", { changed: ["struct_sig"] }],
    ]);
  });

  it("renamed and edited with the same dataflow: ambiguous through dataflow_sig, not linked", async () => {
    const t = setup({
      "m.py":
        "def a(x):\n    return helper(x) + 1\n\ndef b(x):\n    return helper(x) + 2\n\ndef helper(x):\n    return x\n",
    });
    await t.src.refresh("shop", { trigger: "register" });
    const old = ["m.a", "m.b"].map((q) => t.src.resolve("shop", q)?.node_key as string);
    t.write(
      "m.py",
      "def c(x):\n    return helper(x) * 3\n\ndef d(x):\n    return helper(x) * 4\n\ndef helper(x):\n    return x\n",
    );
    const rep = await t.src.refreshReport("shop", { trigger: "manual" });
    expect(rep.events_by_type).toEqual({ identity_ambiguous: 2, node_added: 2, node_removed: 2 });
    const c = t.src.resolve("shop", "m.c")?.node_key as string;
    expect(old).not.toContain(c);
    expect(t.src.history(c)[0]?.payload).toMatchObject({ via: "dataflow_sig" });
  });

  it("records added and removed nodes", async () => {
    const t = setup({ "m.py": "def old():\n    pass\n" });
    await t.src.refresh("shop", { trigger: "register" });
    const oldKey = t.src.resolve("shop", "m.old")?.node_key as string;
    t.write("m.py", "def fresh_one(x, y):\n    return x + y + 1\n");
    const rep = await t.src.refreshReport("shop", { trigger: "manual" });
    expect(rep.events_by_type).toEqual({ node_added: 1, node_removed: 1 });
    expect(t.src.history(oldKey).at(-1)?.event_type).toBe("node_removed");
    // A removed node still resolves by name to its newest snapshot.
    expect(t.src.resolve("shop", "m.old")?.node_key).toBe(oldKey);
  });

  it("duplicate qualified names in one run get #2, #3", async () => {
    const t = setup({
      "m.py": "def f():\n    return 1\n\ndef f():\n    return 2\n\ndef f():\n    return 3\n",
    });
    await t.src.refresh("shop", { trigger: "register" });
    expect(t.src.nodes("shop").nodes.map((n) => n.qualified_name)).toEqual(["m.f", "m.f#2", "m.f#3"]);
  });
});

describe("data nodes", () => {
  const ORDERS = [
    "import pandas as pd",
    "",
    "def load_orders(path):",
    "    df = pd.read_csv(path)",
    '    df["fiscal_week"] = df["date"].dt.isocalendar().week',
    '    weekly = df.groupby("fiscal_week")',
    "    return weekly",
    "",
    "def export(con):",
    '    con.execute("INSERT INTO analytics.weekly_orders SELECT * FROM raw_orders")',
    "",
  ].join("\n");

  it("dataframes and columns are owned by their function; SQL tables are name-only", async () => {
    const t = setup({
      "shop/pipeline.py": ORDERS,
      "web/q.ts": "export const q = `SELECT id FROM raw_orders JOIN customers ON 1`;\n",
    });
    await t.src.refresh("shop", { trigger: "register" });
    const data = t.src
      .nodes("shop")
      .nodes.filter((n) => !["function", "method", "class"].includes(n.node_type))
      .map((n) => [n.node_type, n.qualified_name, n.line_start]);
    expect(data).toEqual(
      expect.arrayContaining([
        ["dataframe", "shop.pipeline.load_orders:df", 4],
        ["dataframe", "shop.pipeline.load_orders:weekly", 6],
        ["column", "shop.pipeline.load_orders:df.fiscal_week", 5],
        ["column", "shop.pipeline.load_orders:df.date", 5],
        ["sql_table", "analytics.weekly_orders", 10],
        ["sql_table", "raw_orders", 10],
        ["sql_table", "customers", 1],
      ]),
    );
    expect(data).toHaveLength(7);
    // file:line prefers the innermost symbol; a data node only where no symbol covers the line.
    expect(t.src.resolve("shop", "shop/pipeline.py:4")?.qualified_name).toBe("shop.pipeline.load_orders");
    expect(t.src.resolve("shop", "web/q.ts:1")?.qualified_name).toBe("customers");
  });

  it("owned nodes follow their owner through a rename; a new column is a changed node", async () => {
    const t = setup({ "shop/pipeline.py": ORDERS });
    await t.src.refresh("shop", { trigger: "register" });
    const df = t.src.resolve("shop", "shop.pipeline.load_orders:df")?.node_key as string;
    const col = t.src.resolve("shop", "shop.pipeline.load_orders:df.fiscal_week")?.node_key as string;
    const planId = t.plan();
    t.write("shop/pipeline.py", ORDERS.replaceAll("load_orders", "read_orders"));
    await t.src.refresh("shop", { planId, trigger: "review" });
    expect(t.src.resolve("shop", "shop.pipeline.read_orders:df")?.node_key).toBe(df);
    expect(t.src.resolve("shop", "shop.pipeline.read_orders:df.fiscal_week")?.node_key).toBe(col);
    expect(
      t.src
        .history(col)
        .slice(1)
        .map((e) => [e.event_type, e.payload.via ?? null]),
    ).toEqual([
      ["node_matched", "owner"],
      ["node_renamed", null],
    ]);
    expect(t.src.changedNodes(planId)).toEqual([]);
    t.write(
      "shop/pipeline.py",
      ORDERS.replace("    return weekly", '    df["region"] = 1\n    return weekly'),
    );
    const p2 = t.plan();
    await t.src.refresh("shop", { planId: p2, trigger: "review" });
    expect(t.src.changedNodes(p2).map((c) => [c.node_type, c.qualified_name, c.event_types])).toEqual(
      expect.arrayContaining([["column", "shop.pipeline.load_orders:df.region", ["node_added"]]]),
    );
  });
});

describe("a plan's changed and touched nodes", () => {
  it("structural edits, additions and removals count; dataflow-only changes and the publish baseline do not", async () => {
    const t = setup({ "shop/pipeline.py": PIPELINE, "web/util.ts": UTIL_TS });
    await t.src.refresh("shop", { trigger: "register" });
    // Another plan's change before this plan's baseline is not this plan's.
    t.write("web/util.ts", UTIL_TS.replace("0)", "1)"));
    const other = t.plan();
    await t.src.refresh("shop", { planId: other, trigger: "manual" });
    const planId = t.plan();
    await t.src.refresh("shop", { planId, trigger: "publish" });
    // This plan: edit read_csv's body (load_orders calls it: a dataflow-only change there), add a function.
    t.write(
      "shop/pipeline.py",
      `${PIPELINE.replace("splitlines()", "splitlines()[1:]")}\ndef audit(rows):\n    return rows\n`,
    );
    await t.src.refresh("shop", { planId, stepId: `${planId}-A`, trigger: "review" });
    const changed = t.src.changedNodes(planId);
    expect(changed.map((c) => [c.qualified_name, c.node_type, c.event_types])).toEqual([
      ["shop.pipeline.read_csv", "function", ["node_changed"]],
      ["shop.pipeline.audit", "function", ["node_added"]],
    ]);
    const touched = t.src.touchedNodes(planId).map((c) => c.qualified_name);
    expect(touched).toContain("shop.pipeline.load_orders");
    const loadKey = t.src.resolve("shop", "shop.pipeline.load_orders")?.node_key as string;
    expect(t.src.history(loadKey).at(-1)?.payload).toEqual({ changed: ["dataflow_sig"] });
    expect(t.src.changedNodes(other).map((c) => c.qualified_name)).toEqual(["web.util.total"]);
    const runId = changed[0]?.run_id as number;
    expect(changed.every((c) => c.run_id === runId)).toBe(true);
  });

  it("a removed node is a changed node with its last name and type", async () => {
    const t = setup({ "m.py": "def gone(x):\n    return x\n" });
    await t.src.refresh("shop", { trigger: "register" });
    const planId = t.plan();
    rmSync(join(t.repo, "m.py"));
    await t.src.refresh("shop", { planId, trigger: "review" });
    expect(t.src.changedNodes(planId)).toEqual([
      expect.objectContaining({
        qualified_name: "m.gone",
        node_type: "function",
        event_types: ["node_removed"],
      }),
    ]);
  });
});

describe("resolve", () => {
  it("file:line gives the innermost node covering the line; outside any node gives nothing", async () => {
    const t = setup({ "shop/pipeline.py": PIPELINE });
    await t.src.refresh("shop", { trigger: "register" });
    expect(t.src.resolve("shop", "shop/pipeline.py:11")?.qualified_name).toBe("shop.pipeline.Report.render");
    expect(t.src.resolve("shop", "shop/pipeline.py:9")?.qualified_name).toBe("shop.pipeline.Report");
    expect(t.src.resolve("shop", "./shop/pipeline.py:3")?.qualified_name).toBe("shop.pipeline.load_orders");
    expect(t.src.resolve("shop", `${t.repo}/shop/pipeline.py:3`)?.qualified_name).toBe(
      "shop.pipeline.load_orders",
    );
    expect(t.src.resolve("shop", "shop/pipeline.py:5")).toBeUndefined();
    expect(t.src.resolve("shop", "shop/other.py:1")).toBeUndefined();
    const key = t.src.resolve("shop", "shop.pipeline.read_csv")?.node_key as string;
    expect(t.src.resolve("shop", key)?.qualified_name).toBe("shop.pipeline.read_csv");
    expect(t.src.resolve("shop", "nk_000000000000")).toBeUndefined();
  });

  it("refuses targets of none of the three forms (exit 2)", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    await t.src.refresh("shop", { trigger: "register" });
    for (const bad of ["", "   ", "two words", "nk_XYZ", "nk_12345", "m.py:0"])
      expect(() => t.src.resolve("shop", bad), bad).toThrow(expect.objectContaining({ exitStatus: 2 }));
  });

  it("a key of another project does not resolve in this one", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    await t.src.refresh("shop", { trigger: "register" });
    const key = t.src.resolve("shop", "m.f")?.node_key as string;
    t.fx.addProject("other", null);
    expect(t.src.resolve("other", key)).toBeUndefined();
  });
});

describe("bad input writes nothing", () => {
  it("unknown project (3), no repo (10), repo gone (10), bad attribution (2/3)", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    t.fx.addProject("bare", null);
    const runs = () => t.count("prov_analysis_runs");
    await expect(t.src.refresh("nope", { trigger: "manual" })).rejects.toMatchObject({
      code: "project_not_found",
      exitStatus: 3,
    });
    await expect(t.src.refresh("bare", { trigger: "manual" })).rejects.toMatchObject({
      code: "no_state_graph",
      exitStatus: 10,
    });
    await expect(t.src.refresh("shop", { trigger: "Not A Word" })).rejects.toMatchObject({ exitStatus: 2 });
    await expect(t.src.refresh("shop", { planId: "no-such-plan", trigger: "review" })).rejects.toMatchObject({
      exitStatus: 3,
    });
    await expect(t.src.refresh("shop", { stepId: "x-A", trigger: "review" })).rejects.toMatchObject({
      exitStatus: 2,
    });
    const foreign = t.fx.publish("no project", ["CODE"]).plan_id;
    await expect(t.src.refresh("shop", { planId: foreign, trigger: "review" })).rejects.toMatchObject({
      exitStatus: 2,
    });
    const mine = t.plan();
    await expect(
      t.src.refresh("shop", { planId: mine, stepId: `${foreign}-A`, trigger: "review" }),
    ).rejects.toMatchObject({ exitStatus: 2 });
    expect(runs()).toBe(0);
    rmSync(t.repo, { recursive: true, force: true });
    await expect(t.src.refresh("shop", { trigger: "manual" })).rejects.toMatchObject({
      code: "no_state_graph",
    });
    expect(t.src.hasGraph("shop")).toBe(false);
    expect(runs()).toBe(0);
  });

  it("a closed plan takes no more runs (its changed nodes are settled)", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    const planId = t.plan();
    t.fx.ledger.abandon({ plan_id: planId, reason: "test" });
    await expect(t.src.refresh("shop", { planId, trigger: "review" })).rejects.toMatchObject({
      exitStatus: 2,
      message: expect.stringContaining("open plans only"),
    });
    expect(t.count("prov_analysis_runs")).toBe(0);
  });

  it("two refreshes at once: the second matches against the first, never both against the same run", async () => {
    const t = setup({ "m.py": "def f(x):\n    return x\n" });
    await t.src.refresh("shop", { trigger: "register" });
    t.write("m.py", "def f(x):\n    return x + 1\n");
    const [a, b] = await Promise.all([
      t.src.refreshReport("shop", { trigger: "manual" }),
      t.src.refreshReport("shop", { trigger: "manual" }),
    ]);
    const events = [a, b].sort((x, y) => x.run.id - y.run.id).map((r) => r.events_by_type);
    expect(events).toEqual([{ node_changed: 1 }, {}]);
  });

  it("a folder that is not a git repository: no_state_graph, nothing written", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    rmSync(join(t.repo, ".git"), { recursive: true, force: true });
    // git walks up to the fixture folder (not a repo either) and fails.
    await expect(t.src.refresh("shop", { trigger: "manual" })).rejects.toMatchObject({
      code: "no_state_graph",
    });
    expect(t.count("prov_analysis_runs")).toBe(0);
  });

  it("snapshots and events stay append-only", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n" });
    await t.src.refresh("shop", { trigger: "register" });
    expect(() => t.fx.store.db.prepare("UPDATE prov_node_snapshots SET qualified_name = 'x'").run()).toThrow(
      /append-only/,
    );
    expect(() => t.fx.store.db.prepare("DELETE FROM prov_node_events").run()).toThrow(/append-only/);
  });
});

describe("files", () => {
  it("reads untracked files .gitignore allows, skips ignored, vendored, huge and binary files", async () => {
    const t = setup({ "m.py": "def f():\n    pass\n", ".gitignore": "ignored.py\n" });
    t.write("new.py", "def g():\n    pass\n");
    t.write("ignored.py", "def h():\n    pass\n");
    t.write("node_modules/lib/index.js", "function vendored() {}\n");
    t.write("vendor/x.py", "def v():\n    pass\n");
    t.write("big.py", `def big():\n    pass\n${"# pad\n".repeat(200_000)}`);
    t.write("bin.js", "function b() {}\n\0\0");
    t.write("types.d.ts", "export declare function d(): void;\n");
    const rep = await t.src.refreshReport("shop", { trigger: "register" });
    expect(t.src.nodes("shop").nodes.map((n) => n.qualified_name)).toEqual(["m.f", "new.g"]);
    expect(rep.skipped).toEqual(
      expect.arrayContaining([
        { path: "big.py", why: "too_large" },
        { path: "bin.js", why: "binary" },
      ]),
    );
  });
});
