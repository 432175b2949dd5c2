#!/usr/bin/env node
// An offline tour of Ratchet in a temporary workspace. Every step is a real `ratchet` command,
// printed before it runs. Run with `npm run demo`.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "bin", "ratchet.js");
const ws = mkdtempSync(join(tmpdir(), "ratchet-demo-"));
const keep = process.argv.includes("--keep");
const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

function say(text) {
  console.log(`\n${bold(`── ${text}`)}`);
}

/** Runs `ratchet …` in the workspace, prints it, returns the parsed tail marker. */
function ratchet(args, { input, expect = [0], quiet = false, env } = {}) {
  console.log(dim(`$ ratchet ${args.join(" ")}${input ? ` <<< '${input}'` : ""}`));
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: ws,
    input,
    encoding: "utf8",
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  return settle(args, r, { expect, quiet });
}

/**
 * Like {@link ratchet}, without blocking this process: for a child that talks to a server running
 * here (the scripted model), which a blocked event loop could not answer.
 */
function ratchetAsync(args, { expect = [0], quiet = false, env } = {}) {
  console.log(dim(`$ ratchet ${args.join(" ")}`));
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: ws,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (status) => done(settle(args, { status, stdout, stderr }, { expect, quiet })));
  });
}

function settle(args, r, { expect, quiet }) {
  const lines = r.stdout.trimEnd().split("\n");
  const last = lines[lines.length - 1] ?? "";
  if (!quiet) process.stdout.write(r.stdout);
  if (r.stderr) process.stdout.write(dim(r.stderr));
  if (!expect.includes(r.status)) {
    console.error(`demo: \`ratchet ${args.join(" ")}\` exited ${r.status}, expected ${expect.join(" or ")}`);
    process.exit(1);
  }
  try {
    return { status: r.status, marker: JSON.parse(last), stdout: r.stdout };
  } catch {
    return { status: r.status, marker: {}, stdout: r.stdout };
  }
}

const json = (o) => JSON.stringify(o);

try {
  say("1. A workspace and a registered project (its plans close through an agent review)");
  ratchet(["init"]);
  ratchet(["project", "add", "demo"]);

  say("2. Publish a plan (YAML input): steps A, B, C and the review step");
  const pub = ratchet(["plan", "publish", join(root, "examples", "plans", "demo-plan.yaml")], {
    quiet: true,
  });
  const plan = pub.marker.plan_id;
  console.log(json(pub.marker));
  const A = `${plan}-A`;
  const B = `${plan}-B`;
  const C = `${plan}-C`;

  say("3. Step A writes code through `step run`: output and true exit code are captured");
  writeFileSync(join(ws, "greet.py"), "");
  ratchet(["step", "run", "-"], {
    input: json({
      step_id: A,
      type: "CODE",
      command: `printf 'def greet(name):\\n    return "Hello, " + name\\n' > greet.py && cat greet.py`,
      summary: "greet.py written",
    }),
    quiet: true,
  });

  say("4. Step B runs a test that fails (exit 1): the step FAILS, `ratchet` exits with the test's status");
  ratchet(["step", "run", "-"], {
    input: json({
      step_id: B,
      type: "TEST",
      command: `python3 -c 'import greet; assert greet.greet("Ada") == "Hello, Ada!", greet.greet("Ada")'`,
    }),
    expect: [1],
    quiet: true,
  });

  say("5. Recover with a deviation: the fix and the re-run are children of the failed step");
  const dev = ratchet(["step", "deviate", "-"], {
    input: json({
      parent_step_id: B,
      justification: "the test expects an exclamation mark",
      sub_steps: [{ title: "Fix the greeting and re-run the test", type: "TEST" }],
    }),
    quiet: true,
  });
  console.log(json(dev.marker));
  ratchet(["step", "run", "-"], {
    input: json({
      step_id: dev.marker.sub_step_ids[0],
      type: "TEST",
      command: `sed -i 's/+ name/+ name + "!"/' greet.py && python3 -c 'import greet; assert greet.greet("Ada") == "Hello, Ada!"; print("ok"); print("metric name=tests_passed value=1")'`,
      metrics_from_stdout: true,
      summary: "greeting fixed, test passes",
    }),
    quiet: true,
  });

  say("6. Non-shell work goes through start + complete; the last step triggers the roll-up");
  ratchet(["step", "start", "-"], {
    input: json({ step_id: C, agent_input: "summarise the change" }),
    quiet: true,
  });
  const last = ratchet(["step", "complete", "-"], {
    input: json({
      step_id: C,
      summary: "greet() returns 'Hello, <name>!'",
      log_context: "notes: one bug found by the test",
    }),
    quiet: true,
  });
  console.log(json(last.marker));

  say("7. The plan belongs to project `demo`: the review hand-off created a tracked child step");
  const child = last.marker.review_child_step_id;
  ratchet(["step", "start", "-"], {
    input: json({ step_id: child, agent_input: "review plan against the project" }),
    quiet: true,
  });
  const done = ratchet(["step", "complete", "-"], {
    input: json({ step_id: child, summary: "review clean" }),
    quiet: true,
  });
  console.log(json(done.marker));

  say("8. Finishing again is a no-op: the plan is closed (exit 0, mode noop, nothing written)");
  const again = ratchet(["plan", "finish", "-"], { input: json({ plan_id: plan }), quiet: true });
  console.log(json(again.marker));

  say("9. The ledger: steps in tree order with logs, the deviation and the metric");
  ratchet(["plan", "show", plan]);

  say("10. The event log (one event per state change)");
  ratchet(["events", "--plan", plan]);

  say("11. A learned workflow: every step runs its saved, reviewed main.py — no model, zero tokens");
  cpSync(join(root, "examples", "workflows", "hello"), join(ws, "hello"), { recursive: true });
  const hello = ratchet(["run", "hello", "--group", "french", "--var", "names=Ada,Grace"]);
  const runId = /^run (run-\S+) of/m.exec(hello.stdout)?.[1];

  say("12. The run is recorded: each step's mode, fast path, outcome, tokens (0), duration and exit code");
  ratchet(["runs", "show", runId]);

  say("13. The Builder learns a new step once (the model writes main.py), recorded as a plan of attempts");
  const { startScriptedModel } = await import(join(root, "dist", "testing", "scripted-model.js"));
  mkdirSync(join(ws, "tally"));
  writeFileSync(
    join(ws, "tally", "workflow.yaml"),
    [
      "id: tally",
      "variables: { names: { default: 'Ada,Grace,Linus' } }",
      "defaults: { declared_execution_mode: learn_code }",
      "steps:",
      "  - id: count",
      "    description: Count the comma-separated names in VAR_NAMES and write count.json",
      "    validation:",
      "      files: [{ file_name: count.json, must_exist: true, json_checks: [{ path: $.count, value_type: integer, min_value: 1 }] }]",
      "",
    ].join("\n"),
  );
  const countScript = [
    "import json",
    "import os",
    "",
    'names = [n for n in os.environ["VAR_NAMES"].split(",") if n.strip()]',
    'with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "count.json"), "w") as f:',
    '    json.dump({"count": len(names)}, f)',
    'print(f"{len(names)} names")',
    "",
  ].join("\n");
  const builderModel = await startScriptedModel({
    script: {
      turns: [
        {
          text: "Writing main.py and trying it.",
          tool_calls: [
            { name: "write_file", arguments: { path: "main.py", content: countScript } },
            { name: "run_script", arguments: {} },
          ],
        },
        { tool_calls: [{ name: "finish", arguments: { summary: "main.py counts VAR_NAMES" } }] },
      ],
    },
  });
  try {
    const modelEnv = {
      RATCHET_MODEL: "openai-compatible:scripted",
      OPENAI_BASE_URL: builderModel.url,
      OPENAI_API_KEY: "sk-demo-0000000000",
    };
    await ratchetAsync(["build", "tally", "--step", "count"], { env: modelEnv });
    const asked = builderModel.requests().length;

    say("14. Later runs use the saved script: zero tokens and not one model request");
    await ratchetAsync(["run", "tally", "--trigger", "schedule"], { env: modelEnv });
    await ratchetAsync(["run", "tally", "--trigger", "schedule", "--var", "names=Ada,Grace"], {
      env: modelEnv,
    });
    console.log(
      `model requests: ${asked} during the build, ${builderModel.requests().length - asked} during the two runs`,
    );
  } finally {
    await builderModel.close();
  }

  say("15. The code runner: a model fixes a bug in a throwaway worktree, proven by the tests (offline)");
  const repo = join(ws, "calc");
  mkdirSync(repo);
  writeFileSync(
    join(repo, "calc.py"),
    "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
  );
  writeFileSync(
    join(repo, "test_calc.py"),
    [
      "import unittest",
      "",
      "from calc import add, mul",
      "",
      "",
      "class CalcTest(unittest.TestCase):",
      "    def test_add(self):",
      "        self.assertEqual(add(2, 3), 5)",
      "",
      "    def test_mul(self):",
      "        self.assertEqual(mul(2, 3), 6)",
      "",
      "",
      'if __name__ == "__main__":',
      "    unittest.main()",
      "",
    ].join("\n"),
  );
  const identity = {
    GIT_AUTHOR_NAME: "Demo",
    GIT_AUTHOR_EMAIL: "demo@example.invalid",
    GIT_COMMITTER_NAME: "Demo",
    GIT_COMMITTER_EMAIL: "demo@example.invalid",
  };
  for (const args of [
    ["init", "-q", "-b", "main"],
    ["add", "-A"],
    ["commit", "-q", "-m", "calc with a bug"],
  ])
    execFileSync("git", args, { cwd: repo, env: { ...process.env, ...identity } });
  const spec = join(ws, "fix-add.json");
  writeFileSync(
    spec,
    json({
      task_id: "fix-add",
      title: "Fix add() in calc.py",
      prompt: "add() subtracts; make it add. Do not touch the tests.",
      backend: "scripted",
      cwd: repo,
      output_dir: join(ws, "runner-out"),
      allowlist: ["calc.py"],
      protected_paths: ["test_calc.py"],
      definition_of_done: { command: "python3 -m unittest -q test_calc", assertion: "exit_code == 0" },
      max_rounds: 2,
    }),
  );
  // The "model" is the scripted model: a local OpenAI-protocol server replaying these turns.
  const model = await startScriptedModel({
    script: {
      turns: [
        { tool_calls: [{ name: "read_file", arguments: { path: "calc.py" } }] },
        {
          tool_calls: [
            {
              name: "edit_file",
              arguments: {
                path: "calc.py",
                start_line: 2,
                end_line: 2,
                expected_text: "    return a - b",
                new_text: "    return a + b",
              },
            },
          ],
        },
        { tool_calls: [{ name: "finish", arguments: { summary: "add() now adds" } }] },
      ],
    },
  });
  try {
    const run = await ratchetAsync(["runner", "run", spec, "--json"], {
      env: {
        ...identity,
        RATCHET_MODEL: "openai-compatible:scripted",
        OPENAI_BASE_URL: model.url,
        OPENAI_API_KEY: "sk-demo-0000000000",
      },
      quiet: true,
    });
    const r = run.marker;
    console.log(
      `status ${r.status} (${r.stop_reason}), rounds ${r.rounds}, source unchanged ${r.source_unchanged}`,
    );
    if (r.patch_file) process.stdout.write(readFileSync(r.patch_file, "utf8"));
  } finally {
    await model.close();
  }
  ratchet(["runner", "status", join(ws, "runner-out"), "--tail-events", "3"]);

  say("16. A thread: the orchestrator script runs in a sandbox; one tool call needs an approval");
  // The policy asks a person before the built-in `echo` tool runs; the approval comes from a
  // second `ratchet` process while the first one waits with the VM paused and saved.
  const cfgPath = join(ws, ".ratchet", "config.json");
  let cfg = {};
  try {
    cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
  } catch {
    // no config yet
  }
  cfg.threads = { policy: { default: "allow", rules: [{ action: "echo", decision: "require_approval" }] } };
  writeFileSync(cfgPath, json(cfg));
  const threadModel = await startScriptedModel({
    script: {
      turns: [
        {
          text: "I will announce it.",
          tool_calls: [{ name: "echo", arguments: { text: "release 1.2 is out" } }],
        },
        { text: "Announced: release 1.2 is out." },
      ],
    },
  });
  const modelEnv = {
    RATCHET_MODEL: "openai-compatible:scripted",
    OPENAI_BASE_URL: threadModel.url,
    OPENAI_API_KEY: "sk-demo-0000000000",
  };
  try {
    const started = ratchetAsync(["thread", "start", "announce the release", "--json"], {
      env: modelEnv,
      quiet: true,
    });
    let waiting;
    for (let i = 0; i < 200 && !waiting; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const list = spawnSync(process.execPath, [bin, "thread", "list", "--state", "waiting", "--json"], {
        cwd: ws,
        encoding: "utf8",
      });
      waiting = JSON.parse(list.stdout || "[]")[0];
    }
    if (!waiting) throw new Error("the demo thread never asked for approval");
    ratchet(["thread", "approve", waiting.thread_id, "--reason", "demo"], { env: modelEnv });
    const done = (await started).marker;
    console.log(`thread ${done.thread_id}: ${done.state}, ${done.step_count} steps → ${done.final_result}`);
    ratchet(["thread", "show", done.thread_id]);
  } finally {
    await threadModel.close();
  }

  console.log(`\n${bold("Demo finished.")} Workspace: ${keep ? ws : "(removed; pass --keep to keep it)"}`);
} finally {
  if (!keep) rmSync(ws, { recursive: true, force: true });
}
