// Shared helpers for benchmarks: timing, medians, percentiles, temp workspaces, result output.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const BIN = join(ROOT, "bin", "ratchet.js");

export function percentile(values, p) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const i = Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1));
  return v[i];
}
export const median = (values) => percentile(values, 50);

const temps = [];
let cleanupInstalled = false;

/** A temp folder, removed when the benchmark exits (kept with BENCH_KEEP=1, for a look inside). */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `ratchet-bench-${prefix}-`));
  temps.push(dir);
  if (!cleanupInstalled && process.env.BENCH_KEEP !== "1") {
    cleanupInstalled = true;
    process.on("exit", () => {
      for (const d of temps) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/** Wall time of one whole process, in ms. */
export function timeProcess(args, opts = {}) {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: "utf8", ...opts });
  const ms = performance.now() - t;
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}

export function fmt(n, digits = 2) {
  return Number.isFinite(n) ? n.toFixed(digits) : String(n);
}

/** Prints a result block and stores it in bench/results/<name>.json. */
export function report(name, figures) {
  console.log(`\n## ${name}`);
  for (const [k, v] of Object.entries(figures))
    console.log(`  ${k.padEnd(48)} ${typeof v === "number" ? fmt(v, 3) : v}`);
  const dir = join(ROOT, "bench", "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${name}.json`),
    `${JSON.stringify({ name, at: new Date().toISOString(), node: process.version, figures }, null, 2)}\n`,
  );
}
