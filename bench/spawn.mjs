// bench/spawn: what one process start costs through the one door (runProcess), the resident
// spawner against Node's own child_process.spawn (RATCHET_NO_SPAWNER=1, the fallback), at three
// sizes of the Node process (libuv forks Node, so its cost grows with the RSS; the spawner's
// should not). Interleaved: per size, R rounds of N runs of each transport, the order alternating.
// Figures: median wall ms per run (range = the rounds' medians), Node's CPU ms per run (user +
// system of this process: the fork is system time on Node's main thread), the ratio
// spawner ÷ fallback of the medians. BENCH_ROUNDS, BENCH_RUNS and BENCH_SIZES (MB, comma-separated)
// override the defaults (5, 40, 50,150,350).
import { loadavg } from "node:os";
import { join } from "node:path";
import { fmt, median, ROOT, report } from "./lib.mjs";

const { runProcess } = await import(join(ROOT, "dist", "exec", "index.js"));
const { spawnerPid, startSpawner } = await import(join(ROOT, "dist", "exec", "spawner.js"));

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 40);
const SIZES = (process.env.BENCH_SIZES ?? "50,150,350").split(",").map(Number);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" };
const COMMANDS = [
  ["/bin/true", "/bin/true", []],
  ["git --version", "git", ["--version"]],
];

const ballast = [];
/** Grows this process to about `mb` MB of RSS with touched memory (a fork copies its page tables). */
function growTo(mb) {
  while (process.memoryUsage().rss < mb * 1024 * 1024) ballast.push(Buffer.alloc(8 * 1024 * 1024, 1));
  return process.memoryUsage().rss / 1024 / 1024;
}

function useTransport(t) {
  if (t === "spawner") delete process.env.RATCHET_NO_SPAWNER;
  else process.env.RATCHET_NO_SPAWNER = "1";
}

/** N runs of `command`; returns per-run wall ms and Node CPU ms. */
async function batch(transport, command, args) {
  useTransport(transport);
  const walls = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const r = await runProcess({ command, args, env });
    walls.push(performance.now() - t);
    if (r.exitCode !== 0)
      throw new Error(`${command} via ${transport}: ${JSON.stringify(r.spawnError ?? r.stderr)}`);
  }
  const cpu = process.cpuUsage(cpu0);
  return { walls, cpuMs: (cpu.user + cpu.system) / 1000 / RUNS };
}

const load = [loadavg()[0]];
const started = new Date().toISOString();
// Warm-up: starts the spawner and loads what both paths load.
await startSpawner();
await batch("spawner", "/bin/true", []);
await batch("child_process", "/bin/true", []);
if (spawnerPid() === undefined)
  throw new Error("no spawner running: build dist/native/ratchet-spawner (npm run build)");

const figures = {};
for (const size of SIZES) {
  const rss = growTo(size);
  for (const [label, command, args] of COMMANDS) {
    const per = {
      spawner: { medians: [], all: [], cpu: [] },
      child_process: { medians: [], all: [], cpu: [] },
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ["spawner", "child_process"] : ["child_process", "spawner"];
      for (const t of order) {
        const b = await batch(t, command, args);
        per[t].medians.push(median(b.walls));
        per[t].all.push(...b.walls);
        per[t].cpu.push(b.cpuMs);
      }
      load.push(loadavg()[0]);
    }
    const key = `${label} @ ${Math.round(rss)} MB`;
    const m = (t) => median(per[t].all);
    const range = (t) => `${fmt(Math.min(...per[t].medians))}–${fmt(Math.max(...per[t].medians))}`;
    figures[`${key}: spawner ms/run (range)`] = `${fmt(m("spawner"))} (${range("spawner")})`;
    figures[`${key}: fallback ms/run (range)`] = `${fmt(m("child_process"))} (${range("child_process")})`;
    figures[`${key}: Node CPU ms/run spawner / fallback`] =
      `${fmt(median(per.spawner.cpu))} / ${fmt(median(per.child_process.cpu))}`;
    figures[`${key}: spawner ÷ fallback`] = m("spawner") / m("child_process");
  }
}
figures["rounds × runs per transport, command and size"] = `${ROUNDS} × ${RUNS}`;
figures["load average (1 min) min–max"] = `${fmt(Math.min(...load))}–${fmt(Math.max(...load))}`;
figures["UTC"] = `${started} – ${new Date().toISOString()}`;
report("spawn", figures);
