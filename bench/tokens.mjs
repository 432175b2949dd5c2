// bench/tokens — what learning a step saves.
//  The same one-step workflow on a 20-run schedule, twice, through the built CLI:
//   (a) code_exec: every run asks the model to write and run the code again;
//   (b) learn_code: one `ratchet build` (the model writes main.py once), then 20 runs of the saved
//       script on the fast path;
//   (c) one more build of the same step whose first script fails, so that one repair agent runs.
//  The model is the scripted model (a real local HTTP server); its token counts are its estimate
//  of 4 characters per token of each real request and reply, so they scale with the actual
//  prompts the Builder sends (the whole request: system prompt, messages, tool definitions). Printed:
//  total tokens and wall time of each, side by side, the ratios code_exec ÷ learn_code, issue 19's
//  figure (tokens of the build ÷ tokens of one code_exec run, both from this run), and what each
//  request is made of (system prompt, tool schemas, the step's task, earlier turns, the reply). The
//  request log proves the learned runs made no model call.
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { startScriptedModel } from "../dist/testing/scripted-model.js";
import { CHARS_PER_TOKEN } from "../dist/testing/scripted-model-replies.js";
import { contentText, requestChars } from "../dist/testing/scripted-model-script.js";
import { BIN, fmt, median, report, tempDir } from "./lib.mjs";

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

// (c) a build whose first script fails at run time, so that one repair agent is needed.
const BROKEN = 'import sys\nprint("cannot reach the data", file=sys.stderr)\nsys.exit(3)\n';
const repairScript = {
  turns: [
    {
      match: { contains: "There is no script yet" },
      tool_calls: [
        { name: "write_file", arguments: { path: "main.py", content: BROKEN } },
        { name: "finish", arguments: { summary: "main.py written" } },
      ],
    },
  ],
  default: reply,
};

// What the scripted model counts for a reply: its text, the tool names and argument texts.
const charsOf = (r) =>
  (r.text ?? "").length +
  (r.tool_calls ?? []).reduce((n, c) => n + c.name.length + JSON.stringify(c.arguments).length, 0);
/** The characters of the reply a recorded request got (`turn` is the script's turn, or "default"). */
const replyCharsOf = (entry, script) =>
  charsOf(entry.turn === "default" ? script.default : script.turns[entry.turn]);

/** One request in parts, in characters (their sum is what the scripted model's estimate counts). */
function parts(entry, script) {
  const body = entry.body;
  const messages = body.messages ?? [];
  const text = (role) =>
    messages.filter((m) => m.role === role).reduce((n, m) => n + contentText(m.content).length, 0);
  const system = text("system");
  const task = messages.find((m) => m.role === "user");
  const taskChars = task ? contentText(task.content).length : 0;
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? JSON.stringify(body.tools).length : 0;
  const total = requestChars(body);
  const turns = total - system - tools - taskChars;
  return { system, tools, task: taskChars, turns, reply: replyCharsOf(entry, script) };
}
const tok = (chars) => Math.ceil(chars / CHARS_PER_TOKEN);
/** Tokens of a request and its reply as the estimate counted before it counted tools: message text only. */
const textOnlyTokens = (entry, script) =>
  tok((entry.body.messages ?? []).reduce((n, m) => n + contentText(m.content).length, 0)) +
  tok(replyCharsOf(entry, script));

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
workflow("repaired", "learn_code");

const script = { turns: [], default: reply };
const model = await startScriptedModel({ script });
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
  const perRun = [];
  for (let i = 0; i < RUNS; i++) {
    const { ms, out } = await ratchet(["run", "exec", "--trigger", "schedule"]);
    perRun.push(runTokens(out));
    execTokens += runTokens(out);
    execMs += ms;
  }
  const execRequests = model.requests().length;
  const execFirst = model.requests().filter((r) => r.n <= execRequests / RUNS);

  // (b) learn_code: one build, then 20 scheduled runs.
  const build = await ratchet(["build", "learned", "--step", "report"]);
  if (build.out.verdict !== "passed") throw new Error(`build did not pass: ${JSON.stringify(build.out)}`);
  const afterBuild = model.requests().length;
  const buildRequests = model.requests().slice(execRequests, afterBuild);
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

  // (c) a build with one repair: the author's script exits 3, a fresh repair agent fixes it.
  model.reset(repairScript);
  const repaired = await ratchet(["build", "repaired", "--step", "report"]);
  const kinds = repaired.out.attempts.map((a) => `${a.kind}:${a.outcome}`).join(", ");
  if (repaired.out.verdict !== "passed" || repaired.out.attempts.length !== 2)
    throw new Error(`the repaired build did not pass in 2 attempts: ${kinds}`);
  const repairRequests = model.requests();

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
  // Issue 19's figure: the build against ONE code_exec run of the same step (both measured above).
  const oneRun = median(perRun);
  const buildPerRun = build.out.tokens / oneRun;
  console.log(
    `\n  tokens of the build ÷ tokens of one code_exec run: ${build.out.tokens} ÷ ${oneRun} = ${fmt(buildPerRun, 3)}` +
      ` (code_exec runs: median ${oneRun}, ${Math.min(...perRun)}–${Math.max(...perRun)})`,
  );
  const oldBuild = buildRequests.reduce((n, r) => n + textOnlyTokens(r, script), 0);
  const oldRun = execFirst.reduce((n, r) => n + textOnlyTokens(r, script), 0);
  console.log(
    `  counting message text only (the estimate before it counted tool schemas): ${oldBuild} ÷ ${oldRun} = ${fmt(oldBuild / oldRun, 3)}`,
  );
  console.log(
    `  a build with one repair (${kinds}): ${repaired.out.tokens} tokens = ${fmt(repaired.out.tokens / oneRun, 3)} code_exec runs`,
  );
  const rows = [
    ...execFirst.map((r, i) => [`code_exec run 1, request ${i + 1}`, parts(r, script)]),
    ...buildRequests.map((r, i) => [`build, request ${i + 1}`, parts(r, script)]),
    ...repairRequests.map((r, i) => [`build + repair, request ${i + 1}`, parts(r, repairScript)]),
  ];
  console.log("\n  per request, characters (≈ tokens at 4 characters per token)");
  console.log(
    `  ${"request".padEnd(32)} ${["system", "tool schemas", "task", "earlier turns", "reply", "total"].map((h) => h.padStart(13)).join(" ")}`,
  );
  for (const [name, p] of rows) {
    const cells = [
      p.system,
      p.tools,
      p.task,
      p.turns,
      p.reply,
      p.system + p.tools + p.task + p.turns + p.reply,
    ];
    console.log(`  ${name.padEnd(32)} ${cells.map((c) => `${c} (${tok(c)})`.padStart(13)).join(" ")}`);
  }
  report("tokens", {
    runs: RUNS,
    "code_exec total tokens": execTokens,
    "learn_code total tokens (build + runs)": learnedTokens,
    "learn_code build tokens": build.out.tokens,
    "code_exec tokens of one run (median)": oneRun,
    "tokens ratio build / one code_exec run (issue 19)": buildPerRun,
    "same, message text only (the earlier estimate)": oldBuild / oldRun,
    "build with one repair, tokens": repaired.out.tokens,
    "build with one repair / one code_exec run": repaired.out.tokens / oneRun,
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
