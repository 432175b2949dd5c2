// bench/review — static review throughput on a generated ~10,000-line Python script.
//  Figure: lines reviewed per second by reviewScript() (parse + plain tree + facts + rules).
//  Baseline (same run, same script, same parser): parsing it with web-tree-sitter alone, so the
//  ratio says what the analysis costs on top of the parse it cannot avoid.
//  Also: a findings-dense script (about one finding every 11 lines) and the JavaScript front end
//  (acorn). Medians of interleaved runs after a warm-up; the ratio is also given in CPU time, which
//  a busy machine disturbs less than wall time.
import { createRequire } from "node:module";
import { join } from "node:path";
import { median, ROOT, report } from "./lib.mjs";

const { reviewScript } = await import(join(ROOT, "dist", "review", "index.js"));
const require = createRequire(join(ROOT, "package.json"));
const { Parser, Language } = await import("web-tree-sitter");

const quick = process.env.BENCH_QUICK === "1";
const RUNS = quick ? 3 : 9;
const LINES = 10_000;

/** A realistic learned-step script: helpers, loops, f-strings, joins, env reads, writes. */
function pythonScript(lines, { bad = false } = {}) {
  const out = [
    '"""Generated benchmark script."""',
    "import json",
    "import os",
    "import sys",
    "from pathlib import Path",
    "",
    'OUT = os.environ["STEP_OUTPUT_DIR"]',
    'API = os.environ["MCP_API_URL"]',
    "",
  ];
  for (let i = 1; out.length < lines; i++) {
    out.push(
      `def step_${i}(rows, limit=${i}):`,
      `    """Transform batch ${i}."""`,
      bad && i % 2 === 0
        ? `    path = os.path.join("results", f"part-{i}-{len(rows)}.json")`
        : `    path = os.path.join(OUT, f"part-{i}-{len(rows)}.json")`,
      `    kept = [r for r in rows if r.get("score", 0) > limit and r["name"] != "x${i}"]`,
      `    label = "batch" + "-" + str(${i}) + (sys.argv[1] if len(sys.argv) > 1 else "")`,
      `    with open(path, "w") as f:`,
      `        json.dump({"label": label, "rows": kept, "n": len(kept)}, f)`,
      bad && i % 3 === 0
        ? `    region = os.environ.get("VAR_REGION_${i}", "us")`
        : `    Path(OUT, "done-${i}").touch()`,
      "",
    );
  }
  return `${out.slice(0, lines).join("\n")}\n`;
}

function javascriptScript(lines) {
  const out = [
    'import fs from "node:fs";',
    'import path from "node:path";',
    "const out = process.env.STEP_OUTPUT_DIR;",
    "",
  ];
  for (let i = 1; out.length < lines; i++) {
    out.push(
      `export function step${i}(rows, limit = ${i}) {`,
      `  const kept = rows.filter((r) => (r.score ?? 0) > limit && r.name !== "x${i}");`,
      `  const label = "batch" + "-" + String(${i});`,
      `  fs.writeFileSync(path.join(out, \`part-${i}-\${rows.length}.json\`), JSON.stringify({ label, kept }));`,
      "  return kept;",
      "}",
      "",
    );
  }
  return `${out.slice(0, lines).join("\n")}\n`;
}

/** Wall time in ms of `fn`; its CPU time (user + system, this process) goes to `cpu`. */
async function time(fn, cpu) {
  const c = process.cpuUsage();
  const t = performance.now();
  await fn();
  const ms = performance.now() - t;
  const used = process.cpuUsage(c);
  cpu.push((used.user + used.system) / 1000);
  return ms;
}

// The baseline parser: the same wasm runtime and grammar review loads.
await Parser.init({ locateFile: () => require.resolve("web-tree-sitter/web-tree-sitter.wasm") });
const parser = new Parser();
parser.setLanguage(await Language.load(require.resolve("tree-sitter-python/tree-sitter-python.wasm")));

const clean = pythonScript(LINES);
const dense = pythonScript(LINES, { bad: true });
const js = javascriptScript(LINES);

// Warm up both (wasm tiers up and the JIT settles), then interleave the measured runs.
for (let i = 0; i < 2; i++) {
  parser.parse(clean)?.delete();
  await reviewScript(clean, { language: "python" });
  await reviewScript(js, { language: "javascript" });
}
const parseMs = [];
const reviewMs = [];
const denseMs = [];
const jsMs = [];
const parseCpu = [];
const reviewCpu = [];
const ignored = [];
let findings = 0;
let lines = 0;
for (let i = 0; i < RUNS; i++) {
  parseMs.push(await time(() => parser.parse(clean)?.delete(), parseCpu));
  reviewMs.push(
    await time(async () => {
      lines = (await reviewScript(clean, { language: "python" })).lines;
    }, reviewCpu),
  );
  denseMs.push(
    await time(async () => {
      findings = (await reviewScript(dense, { language: "python" })).findings.length;
    }, ignored),
  );
  jsMs.push(await time(() => reviewScript(js, { language: "javascript" }), ignored));
}

const perSec = (ms) => lines / (median(ms) / 1000);
report("review", {
  "script lines": lines,
  "runs (median of)": RUNS,
  "python review, lines/s": Math.round(perSec(reviewMs)),
  "baseline: tree-sitter parse only, lines/s": Math.round(perSec(parseMs)),
  "review time / parse-only time (x)": median(reviewMs) / median(parseMs),
  "python review ms (median)": median(reviewMs),
  "review CPU time / parse-only CPU time (x)": median(reviewCpu) / median(parseCpu),
  "findings-dense script: findings": findings,
  "findings-dense script: lines/s": Math.round(perSec(denseMs)),
  "javascript review (acorn), lines/s": Math.round(perSec(jsMs)),
});
