// bench/runner — the code runner's own cost, next to the work it wraps.
//  (a) runner overhead per round: the wall time of a whole `runTask` (scripted model, small temp git
//      repo, ROUNDS rounds: each round writes calc.sh, the DoD fails until the last) minus the time
//      spent in the model client (timed around `complete`) minus every DoD run (its `durationMs`
//      from the task's verifier.log), divided by the rounds; baseline: the DoD command's own wall
//      time (median DoD run) in the same run. Split by the events' timestamps into the overhead
//      inside the round loop (first round_started → last dod_run) and the per-task set-up and
//      tear-down (preflight, snapshots, worktree, patch export, proof; the preflight DoD excluded).
//  (b) worktree set-up of a 1,000- and a 10,000-file repo through the runner's worktree adapter
//      (`gitWorktrees().create`) divided by a bare `git worktree add --detach` of the same repo,
//      interleaved, median of WT_RUNS each.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, median, ROOT, report, tempDir } from "./lib.mjs";

const { gitWorktrees, parseTaskSpec, runTask } = await import(join(ROOT, "dist", "runner", "index.js"));
const { startScriptedModel } = await import(join(ROOT, "dist", "testing", "scripted-model.js"));
const { scriptedModelClient } = await import(join(ROOT, "dist", "testing", "scripted-model-client.js"));

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = 5;
const TASKS = quick ? 2 : 5;
const WT_RUNS = quick ? 3 : 5;
const SIZES = [1000, 10000];

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

const temps = [];
try {
  // (a) overhead per round
  const TEST = [
    "p=0; f=0",
    'if [ "$(bash calc.sh 2 3)" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi',
    'if [ "$(bash calc.sh 10 4)" = 14 ]; then p=$((p+1)); else f=$((f+1)); fi',
    'echo "$p passed, $f failed"',
    '[ "$f" -eq 0 ]',
    "",
  ].join("\n");
  const round = (k) => [
    {
      tool_calls: [
        {
          name: "write_file",
          arguments: {
            path: "calc.sh",
            content: k === ROUNDS ? "echo $(( $1 + $2 ))\n" : `echo $(( $1 - $2 )) # try ${k}\n`,
          },
        },
      ],
    },
    { tool_calls: [{ name: "finish", arguments: { summary: `round ${k}` } }] },
  ];
  const turns = Array.from({ length: ROUNDS }, (_, i) => round(i + 1)).flat();
  const model = await startScriptedModel({ script: { turns } });
  const overheads = [];
  const loopOverheads = [];
  const fixed = [];
  const dodTimes = [];
  const modelPerRound = [];
  const wallPerRound = [];
  try {
    for (let t = 0; t < TASKS; t++) {
      const dir = tempDir("runner-a");
      temps.push(dir);
      const repo = makeRepo(join(dir, "repo"), {
        "calc.sh": "echo $(( $1 - $2 ))\n",
        "test_calc.sh": TEST,
        "README.md": "calc\n",
      });
      const out = join(dir, "out");
      const spec = parseTaskSpec({
        task_id: "bench",
        title: "bench",
        prompt: "calc.sh subtracts; make it add.",
        backend: "scripted",
        cwd: repo,
        output_dir: out,
        allowlist: ["calc.sh"],
        protected_paths: ["test_calc.sh"],
        definition_of_done: { command: "bash test_calc.sh", assertion: "exit_code == 0" },
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
      const s = performance.now();
      const result = await runTask(spec, { client });
      const wall = performance.now() - s;
      if (result.status !== "passed" || result.rounds !== ROUNDS)
        throw new Error(
          `bench task ended ${result.status} after ${result.rounds} rounds: ${result.error ?? ""}`,
        );
      const runs = [...readFileSync(join(out, "bench.verifier.log"), "utf8").matchAll(/ ([\d.]+) ms\n/g)].map(
        (m) => Number(m[1]),
      );
      // preflight + one per round + the fresh-worktree verification that decides "passed"
      if (runs.length !== ROUNDS + 2) throw new Error(`expected ${ROUNDS + 2} DoD runs, got ${runs.length}`);
      const dodMs = runs.reduce((a, b) => a + b, 0);
      overheads.push((wall - modelMs - dodMs) / ROUNDS);
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
      loopOverheads.push((loopMs - modelMs - (dodMs - outsideLoop)) / ROUNDS);
      fixed.push(wall - loopMs - outsideLoop);
      modelPerRound.push(modelMs / ROUNDS);
      wallPerRound.push(wall / ROUNDS);
      dodTimes.push(...runs);
    }
  } finally {
    await model.close();
  }
  const overhead = median(overheads);
  const dodMedian = median(dodTimes);

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
    "(a) task wall ms/round (median)": median(wallPerRound),
    "(a) model ms/round (median, scripted)": median(modelPerRound),
    "(a) DoD run median ms (baseline)": dodMedian,
    "(a) runner overhead ms/round (median)": overhead,
    "(a) overhead / DoD time": overhead / dodMedian,
    "(a) in-loop overhead ms/round (median)": median(loopOverheads),
    "(a) in-loop overhead / DoD time": median(loopOverheads) / dodMedian,
    "(a) set-up + tear-down ms/task (median)": median(fixed),
    ...figuresB,
  });
  console.log(`\nsamples: ${TASKS} tasks × ${ROUNDS} rounds; ${WT_RUNS} worktrees per side per size`);
  console.log(`overhead/round ${fmt(overhead)} ms = ${fmt(overhead / dodMedian)} × one DoD run`);
} finally {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}
