#!/usr/bin/env node
// An offline tour of Ratchet in a temporary workspace. Every step is a real `ratchet` command,
// printed before it runs. Run with `npm run demo`.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
function ratchet(args, { input, expect = [0], quiet = false } = {}) {
  console.log(dim(`$ ratchet ${args.join(" ")}${input ? ` <<< '${input}'` : ""}`));
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: ws, input, encoding: "utf8" });
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

  say("8. Finishing again is refused: the plan is closed (exit 4, accepted:false, nothing written)");
  ratchet(["plan", "finish", "-"], { input: json({ plan_id: plan }), expect: [4] });

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

  console.log(`\n${bold("Demo finished.")} Workspace: ${keep ? ws : "(removed; pass --keep to keep it)"}`);
} finally {
  if (!keep) rmSync(ws, { recursive: true, force: true });
}
