// bench/runner — the code runner's own cost, next to the work it wraps.
//  (a) runner overhead per round: the wall time of a whole `runTask` (scripted model, small temp git
//      repo, ROUNDS rounds: each round writes calc.sh, the DoD fails until the last) minus the time
//      spent in the model client (timed around `complete`) minus every DoD run (its `durationMs`
//      from the task's verifier.log), divided by the rounds; baseline: the DoD command's own wall
//      time (median DoD run) in the same run. Split by the events' timestamps into the overhead
//      inside the round loop (first round_started → last dod_run) and the per-task set-up and
//      tear-down (preflight, snapshots, worktree, patch export, proof; the preflight DoD excluded).
//      The DoD is the issue's `bash test_calc.sh` (~10 ms); a second variant, printed beside it,
//      runs a small Python unittest suite (`python3 -m unittest`, 24 tests in 3 files), the size
//      of DoD a real project has at the low end. Processes started per task are counted through
//      the process runner; CPU time is this process's plus its children's (/proc/self/stat).
//      BENCH_BEFORE_ROOT=<a checkout with a built dist/> runs that checkout's runner on the same
//      tasks, interleaved task by task, so machine load falls on both alike.
//  (b) worktree set-up of a 1,000- and a 10,000-file repo through the runner's worktree adapter
//      (`gitWorktrees().create`) divided by a bare `git worktree add --detach` of the same repo,
//      interleaved, median of WT_RUNS each.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, median, ROOT, report, tempDir } from "./lib.mjs";

const load = async (root) => ({
  root,
  ...(await import(join(root, "dist", "runner", "index.js"))),
  exec: await import(join(root, "dist", "exec", "index.js")),
});
const after = await load(ROOT);
const beforeRoot = process.env.BENCH_BEFORE_ROOT;
const before = beforeRoot ? await load(beforeRoot) : undefined;
const { gitWorktrees, parseTaskSpec } = after;
const { startScriptedModel } = await import(join(ROOT, "dist", "testing", "scripted-model.js"));
const { scriptedModelClient } = await import(join(ROOT, "dist", "testing", "scripted-model-client.js"));

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = 5;
const TASKS = quick ? 2 : 5;
const WT_RUNS = quick ? 3 : 5;
const SIZES = process.env.BENCH_ONLY === "a" ? [] : [1000, 10000];

const IDENTITY = {
  GIT_AUTHOR_NAME: "Ratchet Bench",
  GIT_AUTHOR_EMAIL: "bench@example.invalid",
  GIT_COMMITTER_NAME: "Ratchet Bench",
  GIT_COMMITTER_EMAIL: "bench@example.invalid",
};
Object.assign(process.env, IDENTITY);
const git = (cwd, ...args) =>
  execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** A repo with one commit: `files` maps a relative path to its content. */
function makeRepo(dir, files) {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "init");
  return dir;
}

/** CPU ms of this process and of its waited-for children (user + system). */
function cpuMs() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const tick = 10; // USER_HZ = 100 on Linux
  const own = process.cpuUsage();
  return (own.user + own.system) / 1000 + (Number(f[13]) + Number(f[14])) * tick;
}

/** The two DoDs: the bash script and a small Python unittest suite. */
const BASH_TEST = [
  "p=0; f=0",
  'if [ "$(bash calc.sh 2 3)" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi',
  'if [ "$(bash calc.sh 10 4)" = 14 ]; then p=$((p+1)); else f=$((f+1)); fi',
  'echo "$p passed, $f failed"',
  '[ "$f" -eq 0 ]',
  "",
].join("\n");
function pythonTests() {
  const files = {};
  for (const [n, name] of ["basic", "signs", "big"].entries()) {
    const cases = Array.from({ length: 8 }, (_, i) => {
      const a = (i + 1) * (n === 1 ? -3 : n === 2 ? 100003 : 1);
      const b = i * 7 + 2;
      return `    def test_${name}_${i}(self):\n        self.assertEqual(add(${a}, ${b}), ${a + b})\n`;
    });
    files[`tests/test_${name}.py`] =
      `import unittest\nfrom calc import add\n\n\nclass Test${name}(unittest.TestCase):\n${cases.join("\n")}`;
  }
  files["tests/__init__.py"] = "";
  return files;
}
const VARIANTS = {
  bash: {
    file: "calc.sh",
    initial: "echo $(( $1 - $2 ))\n",
    content: (k) => (k === ROUNDS ? "echo $(( $1 + $2 ))\n" : `echo $(( $1 - $2 )) # try ${k}\n`),
    files: { "test_calc.sh": BASH_TEST },
    protected: ["test_calc.sh"],
    command: "bash test_calc.sh",
  },
  python: {
    file: "calc.py",
    initial: "def add(a, b):\n    return a - b\n",
    content: (k) =>
      k === ROUNDS ? "def add(a, b):\n    return a + b\n" : `def add(a, b):\n    return a - b  # try ${k}\n`,
    files: pythonTests(),
    protected: ["tests"],
    command: "python3 -m unittest discover -s tests -t . -q",
  },
};

const temps = [];
try {
  // (a) overhead per round
  const runnerFigures = {};
  const summaries = [];
  for (const [variant, v] of Object.entries(VARIANTS)) {
    if (process.env.BENCH_DOD && process.env.BENCH_DOD !== variant) continue;
    const round = (k) => [
      { tool_calls: [{ name: "write_file", arguments: { path: v.file, content: v.content(k) } }] },
      { tool_calls: [{ name: "finish", arguments: { summary: `round ${k}` } }] },
    ];
    const turns = Array.from({ length: ROUNDS }, (_, i) => round(i + 1)).flat();
    const model = await startScriptedModel({ script: { turns } });
    const sides = before
      ? [
          ["after", after],
          ["before", before],
        ]
      : [["after", after]];
    const samples = Object.fromEntries(
      sides.map(([name]) => [
        name,
        { overheads: [], loop: [], fixed: [], dod: [], proof: [], model: [], wall: [], procs: [], cpu: [] },
      ]),
    );
    try {
      for (let t = 0; t < TASKS; t++) {
        // interleaved: the order of the two sides alternates task by task
        const order = t % 2 === 0 ? sides : [...sides].reverse();
        for (const [name, mod] of order) {
          const dir = tempDir("runner-a");
          temps.push(dir);
          const repo = makeRepo(join(dir, "repo"), {
            [v.file]: v.initial,
            ...v.files,
            "README.md": "calc\n",
          });
          const out = join(dir, "out");
          const spec = parseTaskSpec({
            task_id: "bench",
            title: "bench",
            prompt: `${v.file} subtracts; make it add.`,
            backend: "scripted",
            cwd: repo,
            output_dir: out,
            allowlist: [v.file],
            protected_paths: v.protected,
            definition_of_done: { command: v.command, assertion: "exit_code == 0" },
            max_rounds: ROUNDS,
          });
          model.reset();
          const inner = scriptedModelClient(model, { maxAttempts: 1 });
          let modelMs = 0;
          const client = {
            model: inner.model,
            async complete(req) {
              const s = performance.now();
              try {
                return await inner.complete(req);
              } finally {
                modelMs += performance.now() - s;
              }
            },
          };
          let procs = 0;
          const runner = {
            run(req) {
              procs++;
              return mod.exec.realProcessRunner.run(req);
            },
          };
          const c0 = cpuMs();
          const s = performance.now();
          const result = await mod.runTask(spec, { client, runner });
          const wall = performance.now() - s;
          const cpu = cpuMs() - c0;
          if (result.status !== "passed" || result.rounds !== ROUNDS)
            throw new Error(
              `bench task (${name}, ${variant}) ended ${result.status} after ${result.rounds} rounds: ${result.error ?? ""}`,
            );
          const runs = [
            ...readFileSync(join(out, "bench.verifier.log"), "utf8").matchAll(/ ([\d.]+) ms\n/g),
          ].map((m) => Number(m[1]));
          // preflight + one per round + the fresh-worktree verification that decides "passed"
          if (runs.length !== ROUNDS + 2)
            throw new Error(`expected ${ROUNDS + 2} DoD runs, got ${runs.length}`);
          const dodMs = runs.reduce((a, b) => a + b, 0);
          const x = samples[name];
          x.overheads.push((wall - modelMs - dodMs) / ROUNDS);
          // Inside the round loop only (set-up and tear-down excluded), by the events' timestamps:
          // from the first round_started to the last dod_run.
          const ev = readFileSync(join(out, "bench.events.jsonl"), "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l));
          const at = (e) => Date.parse(e.time);
          const loopMs =
            at(ev.findLast((e) => e.type === "dod_run" && e.label.startsWith("round"))) -
            at(ev.find((e) => e.type === "round_started"));
          const outsideLoop = runs[0] + (runs.at(-1) ?? 0); // preflight and fresh-worktree DoD runs
          x.loop.push((loopMs - modelMs - (dodMs - outsideLoop)) / ROUNDS);
          x.fixed.push(wall - loopMs - outsideLoop);
          x.model.push(modelMs / ROUNDS);
          x.wall.push(wall / ROUNDS);
          x.dod.push(...runs);
          x.proof.push(runs.at(-1) ?? 0);
          x.procs.push(procs);
          x.cpu.push(cpu);
        }
      }
    } finally {
      await model.close();
    }
    const tag = variant === "bash" ? "(a)" : "(a-py)";
    // With two sides, their DoD runs pooled: one baseline for both ratios.
    const pooled = median(sides.flatMap(([name]) => samples[name].dod));
    if (before) runnerFigures[`${tag} DoD run median ms, both sides pooled`] = pooled;
    for (const [name] of sides) {
      const x = samples[name];
      const side = name === "after" ? "" : ` [before: ${beforeRoot}]`;
      const dodMedian = median(x.dod);
      const overhead = median(x.overheads);
      const range = (xs) => `${fmt(Math.min(...xs), 1)}–${fmt(Math.max(...xs), 1)}`;
      Object.assign(runnerFigures, {
        [`${tag}${side} DoD: ${v.command}`]: "",
        [`${tag}${side} task wall ms/round (median)`]: median(x.wall),
        [`${tag}${side} model ms/round (median, scripted)`]: median(x.model),
        [`${tag}${side} DoD run median ms (baseline)`]: dodMedian,
        // the proof's run alone: where other work runs beside it, a longer run here shows it
        [`${tag}${side} fresh-worktree DoD run ms (median)`]: median(x.proof),
        [`${tag}${side} runner overhead ms/round (median)`]: overhead,
        [`${tag}${side} runner overhead ms/round (range)`]: range(x.overheads),
        [`${tag}${side} overhead / DoD time`]: overhead / dodMedian,
        [`${tag}${side} in-loop overhead ms/round (median)`]: median(x.loop),
        [`${tag}${side} in-loop overhead / DoD time`]: median(x.loop) / dodMedian,
        [`${tag}${side} set-up + tear-down ms/task (median)`]: median(x.fixed),
        ...(before
          ? {
              [`${tag}${side} overhead / pooled DoD time`]: overhead / pooled,
              [`${tag}${side} in-loop overhead / pooled DoD time`]: median(x.loop) / pooled,
            }
          : {}),
        [`${tag}${side} processes per task (median)`]: median(x.procs),
        [`${tag}${side} CPU ms per task, Node + its waited-for children (not the spawner's) (median)`]:
          median(x.cpu),
      });
      summaries.push(
        `${tag}${side}: overhead/round ${fmt(overhead)} ms = ${fmt(overhead / dodMedian)} × one DoD run (${fmt(dodMedian)} ms), in-loop ${fmt(median(x.loop) / dodMedian)} ×, ${median(x.procs)} processes/task`,
      );
    }
  }

  // (b) worktree set-up
  const wt = gitWorktrees();
  const figuresB = {};
  for (const n of SIZES) {
    const dir = tempDir(`runner-b${n}`);
    temps.push(dir);
    const files = {};
    for (let i = 0; i < n; i++) files[`d${Math.floor(i / 100)}/f${i}.txt`] = `file ${i}\n`;
    const repo = makeRepo(join(dir, "repo"), files);
    const runnerMs = [];
    const bareMs = [];
    const once = async (first) => {
      if (first) {
        const s = performance.now();
        const path = await wt.create(repo);
        runnerMs.push(performance.now() - s);
        await wt.remove(repo, path);
      } else {
        // the same place and shape as the adapter's: a fresh temp folder with `wt` inside
        const path = join(mkdtempSync(join(realpathSync(tmpdir()), "ratchet-bench-wt-")), "wt");
        const s = performance.now();
        git(repo, "worktree", "add", "--detach", path, "HEAD");
        bareMs.push(performance.now() - s);
        git(repo, "worktree", "remove", "--force", path);
        rmSync(join(path, ".."), { recursive: true, force: true });
      }
    };
    await once(true); // warm-up (page cache), not counted
    await once(false);
    runnerMs.length = 0;
    bareMs.length = 0;
    for (let i = 0; i < WT_RUNS; i++) {
      await once(i % 2 === 0);
      await once(i % 2 !== 0);
    }
    git(repo, "worktree", "prune");
    const left = git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0;
    if (left !== 1) throw new Error(`${left - 1} worktree(s) left behind in the ${n}-file repo`);
    const r = median(runnerMs);
    const b = median(bareMs);
    figuresB[`(b) ${n} files: runner create median ms`] = r;
    figuresB[`(b) ${n} files: bare git worktree add median ms`] = b;
    figuresB[`(b) ${n} files: runner / bare`] = r / b;
  }

  report("runner", {
    "(a) rounds per task": ROUNDS,
    "(a) tasks": TASKS,
    "load average (1 min) at the end": loadavg()[0],
    ...runnerFigures,
    ...figuresB,
  });
  console.log(
    `\nsamples: ${TASKS} tasks × ${ROUNDS} rounds per side; ${WT_RUNS} worktrees per side per size`,
  );
  for (const line of summaries) console.log(line);
} finally {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}
