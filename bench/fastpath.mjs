// bench/fastpath — the cost of running learned scripts through Ratchet.
//  Also: Ratchet's own per-step work — a forkserver run's wall time minus the time its 50 scripts
//  took from request to exit (each step's duration_ms in the run's --json, the launch included),
//  divided by 50 (the CLI's start-up is in it once) — and the CPU time of each side (this
//  process's waited-for children, from /proc/self/stat: for a run, the ratchet process and the
//  children it waited for; a pre-started interpreter that ends with Ratchet is not waited for,
//  so its forked scripts' CPU may be missing from that figure).
//  A generated 50-step workflow of trivial learned scripts (each writes one small JSON output):
//  the whole `ratchet run` (one CLI process: review, copy, sandbox, validation, metadata, ledger,
//  run tables) divided by 50 bare `python3 -B main.py` runs measured in this process.
//  Learned Python steps start in the pre-started interpreter (src/exec/forkserver.ts) by default;
//  the same run with RATCHET_NO_FORKSERVER=1 (a plain start through the launcher per step) is
//  measured in the same rounds. Target (issue 19): ≤ 0.5 with the forkserver. Also reported: per-step overhead in ms, with and without the sandbox, and the
//  ratio when scripts run under bubblewrap instead of ratchet-confine (Landlock).
//  BENCH_BEFORE_BIN=<another checkout>/bin/ratchet.js adds that build's forkserver run to every
//  round (its own workspace, the same workflow, interleaved with this build's): before/after in
//  the same conditions.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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
const TICK_MS = 1000 / Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim() || 100);
/** CPU time (user + system, ms) of this process's children that have been waited for. */
function childCpuMs() {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  // After "pid (comm) ": state is field 3, cutime 16, cstime 17.
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
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

// The build to compare with, in a workspace of its own (its store, its migrations).
const BEFORE = process.env.BENCH_BEFORE_BIN;
const before = BEFORE ? { bin: BEFORE, ws: tempDir("fastpath-before") } : undefined;
if (before) {
  const r = spawnSync(process.execPath, [before.bin, "init"], { cwd: before.ws, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ratchet init (before) failed: ${r.stderr}`);
  cpSync(home, join(before.ws, "fast"), { recursive: true });
}

/** A forkserver run with `--json`: wall time, the steps' own durations (request to exit), CPU. */
function forkRun(side = { bin: BIN, ws }) {
  const cpu = childCpuMs();
  const t = performance.now();
  const r = spawnSync(process.execPath, [side.bin, "run", join(side.ws, "fast", "workflow.yaml"), "--json"], {
    cwd: side.ws,
    encoding: "utf8",
    // RATCHET_FORKSERVER=1: a build from before the pre-started interpreter became the default reads it.
    env: { ...process.env, PATH, RATCHET_FORKSERVER: "1" },
  });
  const wall = performance.now() - t;
  if (r.status !== 0) throw new Error(`ratchet run exited ${r.status}: ${r.stderr}`);
  const steps = JSON.parse(r.stdout).steps;
  if (steps.length !== STEPS || steps.some((s) => s.outcome !== "passed" || !s.fast_path))
    throw new Error(`not every step passed on the fast path: ${r.stdout.slice(0, 2000)}`);
  const scripts = steps.reduce((sum, s) => sum + s.duration_ms, 0);
  return { wall, scripts, cpu: childCpuMs() - cpu };
}

// Warm-up (file cache, Python's own caches, the sandbox probe), then interleaved rounds.
bare();
ratchetRun({});
if (before) forkRun(before);
const bareMs = [];
const bareCpu = [];
const sandboxedMs = [];
const scriptsMs = [];
const ownMs = [];
const forkCpu = [];
const beforeRuns = [];
const noForkMs = [];
const plainMs = [];
const bwrapMs = [];
const bwrapWorks = spawnSync("bwrap", ["--ro-bind", "/", "/", "true"]).status === 0;
for (let i = 0; i < ROUNDS; i++) {
  const cpu = childCpuMs();
  bareMs.push(bare());
  bareCpu.push(childCpuMs() - cpu);
  const b = before && i % 2 === 1 ? forkRun(before) : undefined;
  const f = forkRun();
  const b2 = before && i % 2 === 0 ? forkRun(before) : undefined;
  sandboxedMs.push(f.wall);
  scriptsMs.push(f.scripts);
  ownMs.push(f.wall - f.scripts);
  forkCpu.push(f.cpu);
  for (const x of [b, b2]) if (x) beforeRuns.push(x);
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
  "per step, forkserver: the script, request to exit (ms, median)": median(scriptsMs) / STEPS,
  "per step, forkserver: Ratchet's own work, wall - scripts (ms, median)": median(ownMs) / STEPS,
  "per step, forkserver: Ratchet's own work (ms, range)": range(ownMs.map((x) => x / STEPS)),
  "CPU per step, forkserver run: ratchet + what it waited for (ms, median)": median(forkCpu) / STEPS,
  "CPU per step, bare python3 (ms, median)": median(bareCpu) / STEPS,
  "per-step overhead, unsandboxed (ms)": (without - base) / STEPS,
  ...(before
    ? {
        "before: build": before.bin,
        "before: ratchet run, forkserver (ms, median)": median(beforeRuns.map((x) => x.wall)),
        "before: ratio / bare": median(beforeRuns.map((x) => x.wall)) / base,
        "before: per step, the script (ms, median)": median(beforeRuns.map((x) => x.scripts)) / STEPS,
        "before: per step, Ratchet's own work (ms, median)":
          median(beforeRuns.map((x) => x.wall - x.scripts)) / STEPS,
        "before: CPU per step, ratchet + what it waited for (ms, median)":
          median(beforeRuns.map((x) => x.cpu)) / STEPS,
        "after / before, ratchet run (median)": withSandbox / median(beforeRuns.map((x) => x.wall)),
      }
    : {}),
  [`target ratio <= ${TARGET}`]: ratio <= TARGET ? "met" : "MISSED",
});
console.log(`  (ratio ${fmt(ratio)} against a target of ${TARGET})`);
console.log(
  `  (load average at the end: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")})`,
);
