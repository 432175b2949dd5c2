// bench/fastpath — the cost of running learned scripts through Ratchet.
//  A generated 50-step workflow of trivial learned scripts (each writes one small JSON output):
//  the whole `ratchet run` (one CLI process: review, copy, sandbox, validation, metadata, ledger,
//  run tables) divided by 50 bare `python3 -B main.py` runs measured in this process.
//  Learned Python steps start in the pre-started interpreter (src/exec/forkserver.ts) by default;
//  the same run with RATCHET_NO_FORKSERVER=1 (a plain start through the launcher per step) is
//  measured in the same rounds. Target (issue 19): ≤ 0.5 with the forkserver. Also reported: per-step overhead in ms, with and without the sandbox, and the
//  ratio when scripts run under bubblewrap instead of ratchet-confine (Landlock).
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { BIN, fmt, median, report, tempDir, timeProcess } from "./lib.mjs";

const quick = process.env.BENCH_QUICK === "1";
const STEPS = 50;
const ROUNDS = quick ? 2 : 5;
const TARGET = 0.5;

// The real interpreter, first on PATH for both sides: a version-manager shim (pyenv) costs more
// than the script and would hide the overhead being measured.
const exe = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
if (exe.status !== 0) throw new Error(`python3 is needed: ${exe.stderr}`);
const python = exe.stdout.trim();
const PATH = `${dirname(python)}:${process.env.PATH}`;

const ws = tempDir("fastpath");
const init = spawnSync(process.execPath, [BIN, "init"], { cwd: ws, encoding: "utf8" });
if (init.status !== 0) throw new Error(`ratchet init failed: ${init.stderr}`);

const home = join(ws, "fast");
const ids = Array.from({ length: STEPS }, (_, i) => `s${String(i + 1).padStart(2, "0")}`);
const yaml = [
  "id: fast",
  "defaults:",
  "  declared_execution_mode: learn_code",
  "steps:",
  ...ids.flatMap((id) => [`  - id: ${id}`, `    description: trivial step ${id}`]),
  "",
].join("\n");
mkdirSync(home, { recursive: true });
writeFileSync(join(home, "workflow.yaml"), yaml);
const script = (id) =>
  [
    "import json",
    "import os",
    "",
    'with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "out.json"), "w") as f:',
    `    json.dump({"step": "${id}", "ok": True}, f)`,
    "",
  ].join("\n");
for (const id of ids) {
  mkdirSync(join(home, "learnings", id), { recursive: true });
  writeFileSync(join(home, "learnings", id, "main.py"), script(id));
}

// Baseline: the same 50 scripts, bare, one process each, from this process.
const bareDir = join(ws, "bare");
for (const id of ids) {
  mkdirSync(join(bareDir, id, "code"), { recursive: true });
  writeFileSync(join(bareDir, id, "code", "main.py"), script(id));
}
function bare() {
  const t = performance.now();
  for (const id of ids) {
    const r = spawnSync("python3", ["-B", "main.py"], {
      cwd: join(bareDir, id, "code"),
      env: { PATH, HOME: process.env.HOME, STEP_OUTPUT_DIR: join(bareDir, id) },
    });
    if (r.status !== 0) throw new Error(`bare python3 failed: ${r.stderr}`);
  }
  return performance.now() - t;
}

function ratchetRun(env) {
  return timeProcess([BIN, "run", join(home, "workflow.yaml")], {
    cwd: ws,
    env: { ...process.env, PATH, ...env },
  });
}

// Warm-up (file cache, Python's own caches, the sandbox probe), then interleaved rounds.
bare();
ratchetRun({});
const bareMs = [];
const sandboxedMs = [];
const noForkMs = [];
const plainMs = [];
const bwrapMs = [];
const bwrapWorks = spawnSync("bwrap", ["--ro-bind", "/", "/", "true"]).status === 0;
for (let i = 0; i < ROUNDS; i++) {
  bareMs.push(bare());
  sandboxedMs.push(ratchetRun({}));
  noForkMs.push(ratchetRun({ RATCHET_NO_FORKSERVER: "1" }));
  plainMs.push(ratchetRun({ RATCHET_SANDBOX: "off" }));
  if (bwrapWorks) bwrapMs.push(ratchetRun({ RATCHET_SANDBOX: "bubblewrap" }));
}
const base = median(bareMs);
const withSandbox = median(sandboxedMs);
const without = median(plainMs);
const ratio = withSandbox / base;
const noFork = median(noForkMs);
const range = (xs) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
const sandbox = spawnSync(process.execPath, [BIN, "doctor", "--json"], { encoding: "utf8" });
let protection = "unknown";
try {
  protection = JSON.parse(sandbox.stdout).write_protection.python;
} catch {
  // doctor output is informational here
}

report("fastpath", {
  steps: STEPS,
  rounds: ROUNDS,
  python,
  "python write protection": protection,
  "bare python3 x50 (ms, median)": base,
  "ratchet run, sandboxed, forkserver (ms, median)": withSandbox,
  "ratchet run, sandboxed, forkserver (ms, range)": range(sandboxedMs),
  "ratchet run, sandboxed, RATCHET_NO_FORKSERVER=1 (ms, median)": noFork,
  "ratchet run, sandboxed, RATCHET_NO_FORKSERVER=1 (ms, range)": range(noForkMs),
  "bare python3 x50 (ms, range)": range(bareMs),
  "ratchet run, RATCHET_SANDBOX=off (ms, median)": without,
  "ratio sandboxed (forkserver) / bare": ratio,
  "ratio sandboxed, RATCHET_NO_FORKSERVER=1 / bare": noFork / base,
  "ratio unsandboxed / bare": without / base,
  "ratio under bubblewrap / bare": bwrapWorks ? median(bwrapMs) / base : "bwrap unavailable",
  "per step, forkserver (ms)": withSandbox / STEPS,
  "per step, RATCHET_NO_FORKSERVER=1 (ms)": noFork / STEPS,
  "per step, bare python3 (ms)": base / STEPS,
  "per-step overhead, unsandboxed (ms)": (without - base) / STEPS,
  [`target ratio <= ${TARGET}`]: ratio <= TARGET ? "met" : "MISSED",
});
console.log(`  (ratio ${fmt(ratio)} against a target of ${TARGET})`);
