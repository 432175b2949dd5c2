// bench/provenance — provenance figures. Each area adds its own function; main runs them all.
//  whyLatency (prov-headlines): `why` on one node of a project holding 10,000 change reasons
//  (2,000 of them on the target: constraints, rejected paths, reasons, unstated rows; the rest on
//  500 other nodes), in-process (the bounded read + its read_hit writes, one transaction) and as
//  a whole `ratchet why` process, next to `node -e 0` for the process start it cannot avoid.
//  Medians of interleaved runs after a warm-up.
import { join } from "node:path";
import { BIN, median, percentile, ROOT, report, tempDir, timeProcess } from "./lib.mjs";

const quick = process.env.BENCH_QUICK === "1";

export async function whyLatency() {
  const { SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const { insertChained } = await import(join(ROOT, "dist", "provenance", "rows.js"));
  const { seedProject, NODES } = await import(join(ROOT, "dist", "provenance", "reasons", "why-fixture.js"));
  const { why, nodeSourceFor, SqliteWhyStore } = await import(
    join(ROOT, "dist", "provenance", "reasons", "why-api.js")
  );
  const REASONS = 10_000;
  const dir = tempDir("why");
  const ws = join(dir, ".ratchet");
  const { mkdirSync } = await import("node:fs");
  mkdirSync(ws, { recursive: true });
  const dbPath = join(ws, "ratchet.db");
  const store = SqliteStore.open(dbPath, { create: true });
  const others = Array.from({ length: 500 }, (_, i) => ({
    node_key: `nk_${String(i).padStart(12, "0")}`,
    qualified_name: `shop.mod${i % 50}.fn_${i}`,
    file_path: `shop/mod${i % 50}.py`,
    line_start: 1 + (i % 10) * 20,
    line_end: 19 + (i % 10) * 20,
  }));
  seedProject(store, "shop", dir, [...NODES, ...others]);
  const target = NODES[0];
  const t = "2026-11-20T09:12:00.000Z";
  store.tx(() => {
    for (let i = 0; i < REASONS; i++) {
      const onTarget = i % 5 === 0;
      const role = onTarget ? ["constraint", "rejected_path", "reason", "reason"][i % 4] : "reason";
      const unstated = onTarget && i % 7 === 0 && role === "reason";
      insertChained(store.db, "prov_change_reasons", {
        project: "shop",
        node_key: onTarget ? target.node_key : others[i % others.length].node_key,
        plan_id: `plan-${i % 300}`,
        role,
        occurred_at: t,
        recorded_at: t,
        recorded_by: role === "constraint" ? "human" : "agent",
        tier: unstated ? "unstated" : "asserted",
        ...(unstated
          ? {}
          : {
              interpretation: `reason ${i}: finance reconciles by fiscal week, not by calendar week (${"x".repeat(i % 80)})`,
            }),
      });
    }
  });
  const ws2 = new SqliteWhyStore(store.db);
  const nodes = nodeSourceFor(store);
  const runs = quick ? 20 : 200;
  const once = (q) => {
    const s = performance.now();
    store.tx(() => why(ws2, nodes, q, new Date().toISOString()));
    return performance.now() - s;
  };
  for (let i = 0; i < 5; i++) once({ project: "shop", target: target.qualified_name });
  const byName = [];
  const byLine = [];
  const all = [];
  const pending = [];
  for (let i = 0; i < runs; i++) {
    byName.push(once({ project: "shop", target: target.qualified_name }));
    byLine.push(once({ project: "shop", target: "shop/pipeline.py:12" }));
    all.push(once({ project: "shop", target: target.node_key, all: true, budgetTokens: 1_000_000 }));
    pending.push(once({ project: "shop", pending: true }));
  }
  store.close();
  const procRuns = quick ? 3 : 9;
  const cli = [];
  const bare = [];
  timeProcess([BIN, "--db", dbPath, "why", target.qualified_name, "--project", "shop"], { cwd: dir });
  for (let i = 0; i < procRuns; i++) {
    bare.push(timeProcess(["-e", "0"]));
    cli.push(
      timeProcess([BIN, "--db", dbPath, "why", target.qualified_name, "--project", "shop"], { cwd: dir }),
    );
  }
  report("provenance-why", {
    reasons_in_project: REASONS,
    reasons_on_target: REASONS / 5,
    "why by name, in-process median ms": median(byName),
    "why by name, in-process p95 ms": percentile(byName, 95),
    "why by file:line, in-process median ms": median(byLine),
    "why --all (no caps, no budget) median ms": median(all),
    "why --pending (project) median ms": median(pending),
    "ratchet why process median ms": median(cli),
    "node -e 0 median ms": median(bare),
    "ratchet why ÷ node -e 0": median(cli) / median(bare),
  });
}

const isMain =
  process.argv[1] && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href;
if (isMain) {
  await whyLatency();
}
