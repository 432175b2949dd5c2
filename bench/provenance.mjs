// bench/provenance — the provenance half's costs, one function per part; main runs them all.
//
// nodeAnalysis: `refresh` of a generated 10,000-line repository (Python + TypeScript) ÷ a bare
// parse of the same files in the same run (tree-sitter for Python, the `typescript` parser for
// TypeScript: the parses the analysis cannot avoid). Cold = empty parse cache (a fresh database),
// warm = a second refresh of the unchanged tree (every file from the cache), one-edit = one file
// changed since the previous run. Medians of interleaved runs after a warm-up.
//
// whyLatency: `why` on one node of a project holding 10,000 change reasons (2,000 of them on the
// target: constraints, rejected paths, reasons, unstated rows; the rest on 500 other nodes),
// in-process (the bounded read + its read_hit writes, one transaction) and as a whole
// `ratchet why` process, next to `node -e 0` for the process start it cannot avoid.
//
// benchHookLatency: the prompt hook (`ratchet hook user-prompt`) per prompt ÷ `node -e 0`, with a
// workspace already holding 5,000 utterances: a recorded prompt and a skipped one.

import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { BIN, median, percentile, ROOT, report, tempDir, timeProcess } from "./lib.mjs";

const quick = process.env.BENCH_QUICK === "1";

/** A repository of `lines` lines, half Python and half TypeScript, in files of about 200 lines. */
function generateRepo(dir, lines) {
  const files = {};
  let total = 0;
  for (let f = 0; total < lines; f++) {
    const py = [`"""Module ${f}."""`, "import json", ""];
    for (let i = 0; py.length < 200; i++)
      py.push(
        `def transform_${f}_${i}(rows, limit=${i}):`,
        `    """Transform batch ${i}."""`,
        `    kept = [r for r in rows if r.get("score", 0) > limit]`,
        `    total = sum(r["n"] for r in kept)`,
        `    return helper_${f}(kept, total)`,
        "",
        `class Store${f}_${i}:`,
        "    def save(self, rows):",
        "        with open(self.path, 'w') as f:",
        "            json.dump(rows, f)",
        "",
      );
    py.push(`def helper_${f}(rows, total):`, "    return {'rows': rows, 'total': total}", "");
    files[`pkg/mod_${f}.py`] = `${py.join("\n")}\n`;
    const ts = [`import { readFileSync } from "node:fs";`, ""];
    for (let i = 0; ts.length < 200; i++)
      ts.push(
        `export function step${f}_${i}(rows: { score?: number }[], limit = ${i}): number {`,
        `  const kept = rows.filter((r) => (r.score ?? 0) > limit);`,
        `  return combine${f}(kept.length, limit);`,
        "}",
        "",
        `export class Loader${f}_${i} {`,
        "  constructor(private path: string) {}",
        "  load(): string {",
        "    return readFileSync(this.path, 'utf8');",
        "  }",
        "}",
        "",
      );
    ts.push(`function combine${f}(a: number, b: number): number {`, "  return a + b;", "}", "");
    files[`web/step_${f}.ts`] = `${ts.join("\n")}\n`;
    total += py.length + ts.length;
  }
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(join(dir, p, ".."), { recursive: true });
    writeFileSync(join(dir, p), c);
  }
  const git = (...a) => execFileSync("git", ["-C", dir, "-c", "user.email=b@b", "-c", "user.name=b", ...a]);
  git("init", "-q");
  git("add", "-A");
  git("commit", "-qm", "bench");
  return { files, lines: total };
}

export async function nodeAnalysis() {
  const RUNS = quick ? 3 : 7;
  const { nodeSourceFor } = await import(join(ROOT, "dist", "provenance", "nodes", "index.js"));
  const { SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const require = createRequire(join(ROOT, "package.json"));
  const { Parser, Language } = await import("web-tree-sitter");
  const ts = require("typescript");
  await Parser.init({ locateFile: () => require.resolve("web-tree-sitter/web-tree-sitter.wasm") });
  const parser = new Parser();
  parser.setLanguage(await Language.load(require.resolve("tree-sitter-python/tree-sitter-python.wasm")));

  const base = tempDir("provenance");
  const repo = join(base, "repo");
  mkdirSync(repo);
  const { files, lines } = generateRepo(repo, 10_000);
  const sources = Object.entries(files);
  const bareParse = () => {
    for (const [p, c] of sources) {
      if (p.endsWith(".py")) parser.parse(c)?.delete();
      else ts.createSourceFile(p, c, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    }
  };
  const bareParsePython = () => {
    for (const [p, c] of sources) if (p.endsWith(".py")) parser.parse(c)?.delete();
  };
  let dbs = 0;
  const freshSource = () => {
    const store = SqliteStore.open(join(base, `bench-${dbs++}.db`), { create: true });
    store.tx(() =>
      store.addProject({ name: "bench", repo_path: repo, created_at: new Date().toISOString() }),
    );
    return { store, src: nodeSourceFor(store) };
  };
  const time = async (fn) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };

  // First refresh in this process: includes loading the parsers (tree-sitter wasm, typescript).
  const first = freshSource();
  const firstMs = await time(() => first.src.refreshReport("bench", { trigger: "register" }));
  first.store.close();
  bareParse();

  const parseMs = [];
  const parsePyMs = [];
  const coldMs = [];
  const warmMs = [];
  const editMs = [];
  let nodes = 0;
  let edits = 0;
  for (let i = 0; i < RUNS; i++) {
    parseMs.push(await time(bareParse));
    parsePyMs.push(await time(bareParsePython));
    const { store, src } = freshSource();
    coldMs.push(
      await time(async () => {
        nodes = (await src.refreshReport("bench", { trigger: "register" })).nodes;
      }),
    );
    warmMs.push(await time(() => src.refreshReport("bench", { trigger: "manual" })));
    const target = join(repo, "pkg", "mod_0.py");
    writeFileSync(target, `${files["pkg/mod_0.py"]}\ndef added_${i}(x):\n    return x + ${i}\n`);
    editMs.push(
      await time(async () => {
        const r = await src.refreshReport("bench", { trigger: "manual" });
        edits = r.parsed;
      }),
    );
    writeFileSync(target, files["pkg/mod_0.py"]);
    store.close();
  }
  const parse = median(parseMs);
  report("provenance-nodes", {
    "repository lines (Python + TypeScript)": lines,
    files: sources.length,
    nodes,
    "runs (median of)": RUNS,
    "bare parse of every file, ms": parse,
    "bare tree-sitter parse of the Python files, ms": median(parsePyMs),
    "cold refresh (empty parse cache), ms": median(coldMs),
    "cold refresh / bare parse (x)": median(coldMs) / parse,
    "warm refresh (unchanged tree, all cached), ms": median(warmMs),
    "warm refresh / bare parse (x)": median(warmMs) / parse,
    "one-file edit refresh, ms": median(editMs),
    "one-file edit refresh: files re-parsed": edits,
    "first refresh of the process (loads the parsers), ms": firstMs,
  });
}

export async function whyLatency() {
  const { SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const { insertChained } = await import(join(ROOT, "dist", "provenance", "rows.js"));
  const { seedProject, NODES } = await import(join(ROOT, "dist", "provenance", "reasons", "why-fixture.js"));
  const { why, nodeSourceFor, SqlWhyStore } = await import(
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
  const ws2 = new SqlWhyStore(store.sql);
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

export async function benchHookLatency() {
  const ROUNDS = quick ? 10 : 40;
  const PREFILL = 5000;
  const TARGET = 2;
  const ws = tempDir("prov-hook");
  const repo = join(ws, "shop");
  mkdirSync(repo);
  execFileSync("git", ["init", "-q", repo]);
  const run = (args, input) =>
    execFileSync(process.execPath, [BIN, ...args], { cwd: ws, input, encoding: "utf8" });
  run(["init"]);
  run(["project", "add", "shop", "--repo", repo]);
  execFileSync(process.execPath, [BIN, "plan", "publish", "-"], {
    cwd: repo,
    input: JSON.stringify({ goal: "bench plan", steps: ["a"] }),
    encoding: "utf8",
  });
  const dbPath = join(ws, ".ratchet", "ratchet.db");
  {
    const { default: Database } = await import("better-sqlite3");
    const { sqliteHookStore } = await import(join(ROOT, "dist", "provenance", "words", "hook.js"));
    const db = new Database(dbPath);
    const { words } = sqliteHookStore(db);
    words.write(() => {
      for (let i = 0; i < PREFILL; i++)
        words.recordUtterance({
          text: `earlier prompt ${i}: keep the weekly grain in load_orders`,
          occurred_at: new Date(Date.UTC(2026, 10, 1) + i * 60_000).toISOString(),
          origin: "hook",
          project: "shop",
          session_id: `s${i % 7}`,
        });
    });
    db.close();
  }
  const payload = (prompt) =>
    JSON.stringify({
      session_id: "bench-s",
      transcript_path: "/tmp/t.jsonl",
      cwd: repo,
      hook_event_name: "UserPromptSubmit",
      prompt,
    });
  const env = { ...process.env, RATCHET_HOOK_ERRORS: join(ws, "hook-errors.log") };
  delete env.RATCHET_DB;
  delete env.RATCHET_HEADLESS;
  delete env.PROVLEDGER_HEADLESS;
  const hook = [];
  const skipped = [];
  const bare = [];
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(timeProcess(["-e", "0"]));
    hook.push(
      timeProcess([BIN, "hook", "user-prompt"], {
        cwd: repo,
        env,
        input: payload(`Keep fiscal weeks, round ${i}.`),
      }),
    );
    skipped.push(timeProcess([BIN, "hook", "user-prompt"], { cwd: repo, env, input: payload("/compact") }));
  }
  const h = median(hook);
  const b = median(bare);
  report("provenance-hook", {
    rounds: ROUNDS,
    "utterances already stored": PREFILL,
    "node -e 0, median ms": b,
    "hook (prompt recorded), median ms": h,
    "hook (slash command skipped), median ms": median(skipped),
    "hook overhead over node -e 0, ms": h - b,
    "ratio hook ÷ node -e 0": h / b,
    "target ratio": `≤ ${TARGET}`,
  });
  return h / b;
}

const isMain =
  process.argv[1] && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href;
if (isMain) {
  await nodeAnalysis();
  await whyLatency();
  await benchHookLatency();
}
