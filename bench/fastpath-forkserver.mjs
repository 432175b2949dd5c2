// bench/fastpath-forkserver — what the pre-started interpreter (src/exec/forkserver.ts) saves.
//  The fast path's trivial learned script (writes one small JSON output), 50 times, three ways in
//  the same run, interleaved: bare `python3 -B main.py`; a plain start through the door
//  (ratchet-confine with the step's confinement, what a learned step pays for the process); a run
//  in a forkserver started through the door with the same confinement (warm: its one start-up is
//  reported on its own). Target for a learned step ÷ bare: ≤ 0.5 (issue 19).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fmt, median, ROOT, report } from "./lib.mjs";

const { forkKit } = await import(join(ROOT, "dist", "exec", "forkserver-kit.js"));
const quick = process.env.BENCH_QUICK === "1";
const STEPS = 50;
const ROUNDS = quick ? 2 : 5;
const kit = await forkKit();
if (typeof kit === "string") {
  report("fastpath-forkserver", { skipped: kit });
  process.exit(0);
}
const script = [
  "import json",
  "import os",
  "",
  'with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "out.json"), "w") as f:',
  '    json.dump({"step": "s", "ok": True}, f)',
  "",
].join("\n");
writeFileSync(join(kit.codeDir, "main.py"), script);
const env = kit.confinement.env;

function bare() {
  const t = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const r = spawnSync(kit.python, ["-B", "main.py"], { cwd: kit.codeDir, env });
    if (r.status !== 0) throw new Error(`bare python3 failed: ${r.stderr}`);
  }
  return performance.now() - t;
}
async function plain() {
  const t = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const r = await kit.plain(script);
    if (r.exitCode !== 0) throw new Error(`plain start failed: ${r.stderr}`);
  }
  return performance.now() - t;
}
async function forked() {
  const t = performance.now();
  for (let i = 0; i < STEPS; i++) {
    const r = await kit.fork(script);
    if (r.exitCode !== 0) throw new Error(`forkserver run failed: ${r.stderr}`);
  }
  return performance.now() - t;
}

const t0 = performance.now();
await kit.server();
const startMs = performance.now() - t0;
bare();
await plain();
await forked();
const bareMs = [];
const plainMs = [];
const forkMs = [];
for (let i = 0; i < ROUNDS; i++) {
  bareMs.push(bare());
  plainMs.push(await plain());
  forkMs.push(await forked());
}
await kit.close();
const base = median(bareMs);
const ratio = median(forkMs) / base;
report("fastpath-forkserver", {
  steps: STEPS,
  rounds: ROUNDS,
  python: kit.python,
  "bare python3 -B x50 (ms, median)": base,
  "plain start through the door x50 (ms, median)": median(plainMs),
  "forkserver run x50, warm (ms, median)": median(forkMs),
  "forkserver start-up, once (ms)": startMs,
  "per run: bare / door / forkserver (ms)": `${fmt(base / STEPS)} / ${fmt(median(plainMs) / STEPS)} / ${fmt(median(forkMs) / STEPS)}`,
  "ratio plain door start / bare": median(plainMs) / base,
  "ratio forkserver run / bare": ratio,
  "target ratio <= 0.5 (process part of a step)": ratio <= 0.5 ? "met" : "MISSED",
});
