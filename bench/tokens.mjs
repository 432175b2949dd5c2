// bench/tokens — what learning a step saves.
//  The same one-step workflow on a 20-run schedule, twice, through the built CLI:
//   (a) code_exec: every run asks the model to write and run the code again;
//   (b) learn_code: one `ratchet build` (the model writes main.py once), then 20 runs of the saved
//       script on the fast path.
//  The model is the scripted model (a real local HTTP server); its token counts are its estimate
//  of 4 characters per token of each real request and reply, so they scale with the actual
//  prompts the Builder sends. Printed: total tokens and wall time of each, side by side, and the
//  ratios code_exec ÷ learn_code. The request log proves the learned runs made no model call.
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { startScriptedModel } from "../dist/testing/scripted-model.js";
import { BIN, fmt, report, tempDir } from "./lib.mjs";

const RUNS = process.env.BENCH_QUICK === "1" ? 5 : 20;
const SCRIPT = [
  "import json",
  "import os",
  "",
  'out = os.environ["STEP_OUTPUT_DIR"]',
  'with open(os.path.join(out, "report.json"), "w") as f:',
  '    json.dump({"region": os.environ["VAR_REGION"]}, f)',
  "",
].join("\n");
const reply = {
  text: "I will write the script and run it.",
  tool_calls: [
    { name: "write_file", arguments: { path: "main.py", content: SCRIPT } },
    { name: "finish", arguments: { summary: "main.py writes report.json from VAR_REGION" } },
  ],
};

const ws = tempDir("tokens");
const init = spawnSync(process.execPath, [BIN, "init"], { cwd: ws, encoding: "utf8" });
if (init.status !== 0) throw new Error(`ratchet init failed: ${init.stderr}`);
function workflow(name, mode) {
  const home = join(ws, name);
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, "workflow.yaml"),
    [
      `id: ${name}`,
      "variables: { region: { default: eu } }",
      "steps:",
      "  - id: report",
      "    description: write report.json holding the region",
      `    agent_configs: { declared_execution_mode: ${mode} }`,
      "    validation:",
      "      files: [{ file_name: report.json, must_exist: true, json_checks: [{ path: $.region, value_type: string }] }]",
      "",
    ].join("\n"),
  );
  return home;
}
workflow("exec", "code_exec");
workflow("learned", "learn_code");

const model = await startScriptedModel({ script: { turns: [], default: reply } });
const env = { ...process.env, RATCHET_MODEL: "openai-compatible:scripted", OPENAI_BASE_URL: model.url };
delete env.RATCHET_DB;

// Asynchronous: the scripted model answers from this process's event loop.
const run = promisify(execFile);
async function ratchet(args) {
  const t = performance.now();
  const r = await run(process.execPath, [BIN, ...args, "--json"], { cwd: ws, env, maxBuffer: 64 << 20 });
  return { ms: performance.now() - t, out: JSON.parse(r.stdout) };
}
const runTokens = (out) => out.steps.reduce((n, s) => n + s.tokens, 0);

try {
  // (a) code_exec, 20 scheduled runs.
  let execTokens = 0;
  let execMs = 0;
  for (let i = 0; i < RUNS; i++) {
    const { ms, out } = await ratchet(["run", "exec", "--trigger", "schedule"]);
    execTokens += runTokens(out);
    execMs += ms;
  }
  const execRequests = model.requests().length;

  // (b) learn_code: one build, then 20 scheduled runs.
  const build = await ratchet(["build", "learned", "--step", "report"]);
  if (build.out.verdict !== "passed") throw new Error(`build did not pass: ${JSON.stringify(build.out)}`);
  const afterBuild = model.requests().length;
  let learnedTokens = build.out.tokens;
  let learnedMs = build.ms;
  let runsMs = 0;
  for (let i = 0; i < RUNS; i++) {
    const { ms, out } = await ratchet(["run", "learned", "--trigger", "schedule"]);
    learnedTokens += runTokens(out);
    learnedMs += ms;
    runsMs += ms;
  }
  const learnedRunRequests = model.requests().length - afterBuild;
  if (learnedRunRequests !== 0) throw new Error(`learned runs made ${learnedRunRequests} model request(s)`);

  console.log(`\n  ${RUNS} scheduled runs          code_exec        learn_code (1 build + runs)`);
  console.log(
    `  total tokens              ${String(execTokens).padEnd(16)} ${learnedTokens} (build ${build.out.tokens}, runs 0)`,
  );
  console.log(
    `  wall time                 ${`${fmt(execMs / 1000)} s`.padEnd(16)} ${fmt(learnedMs / 1000)} s (build ${fmt(build.ms / 1000)} s)`,
  );
  console.log(
    `  model requests            ${String(execRequests).padEnd(16)} ${afterBuild - execRequests} (all in the build)`,
  );
  report("tokens", {
    runs: RUNS,
    "code_exec total tokens": execTokens,
    "learn_code total tokens (build + runs)": learnedTokens,
    "learn_code build tokens": build.out.tokens,
    "tokens ratio code_exec / learn_code": execTokens / learnedTokens,
    "code_exec wall time (s)": execMs / 1000,
    "learn_code wall time, build + runs (s)": learnedMs / 1000,
    "learn_code runs only (s)": runsMs / 1000,
    "time ratio code_exec / learn_code": execMs / learnedMs,
    "model requests during learned runs": learnedRunRequests,
  });
} finally {
  await model.close();
}
