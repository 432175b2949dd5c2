/**
 * `ratchet` — the command line. Thin: parse arguments, call a service, print, return the exit
 * status of DESIGN.md §6. Every error is a RatchetError mapped by `exitStatusFor`.
 */
import { Command, CommanderError } from "commander";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import { FLOWS } from "../ledger/index.js";
import { initWorkspace, noteCommand, SqliteStore } from "../store/index.js";
import { addCompletionCommands } from "./completion-commands.js";
import { flowHelp } from "./flow-args.js";
import { addGraphCommands } from "./graph-commands.js";
import { err, guardStdio, out } from "./io.js";
import { events, planList, planShow, projectAdd, projectList } from "./reads.js";
import { reasonGroup } from "./reason-commands.js";
import { reviewCommand } from "./review-command.js";
import { addStoreCommands } from "./store-commands.js";
import { addWhyCommands } from "./why-commands.js";
import { addWordsCommands } from "./words-commands.js";
import { addWorkerCommands } from "./worker-commands.js";
import { runBatch, runFlowCommand } from "./write-flows.js";

const VERSION = "0.1.0";

function build(setStatus: (n: number) => void): Command {
  const program = new Command("ratchet");
  program
    .description("Deterministic, verifiable, recorded runs for AI-agent work.")
    .version(VERSION)
    .option(
      "--db <path>",
      "ledger database: a SQLite file or a postgres:// URL (default: .ratchet/ratchet.db found by walking up, or store.url of its config.json; env RATCHET_DB, else ORCH_DB)",
    )
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  // The command's name, for refusals that name it (a SQLite-only command on a PostgreSQL store).
  program.hook("preAction", (_root, action) => {
    const names: string[] = [];
    for (let c: Command | null = action; c && c !== program; c = c.parent) names.unshift(c.name());
    noteCommand(names.join(" "));
  });

  const globals = () => program.opts<{ db?: string }>();
  const act =
    <A extends unknown[]>(fn: (...a: A) => Promise<number>) =>
    async (...a: A) => {
      setStatus(await fn(...a));
    };

  program
    .command("init [dir]")
    .description("create a .ratchet/ workspace in dir (default: the current folder)")
    .option(
      "--example",
      "also lay out the README's sample plan.yaml and workflows/hello/ in dir (refuses to overwrite)",
    )
    .action(
      act(async (dir: string | undefined, o: { example?: boolean }) => {
        // The example is checked (and refused) before anything is written.
        const example = o.example
          ? (await import("./example-commands.js")).layOutExample(dir ?? ".")
          : undefined;
        const { workspace, created } = initWorkspace(dir ?? ".");
        SqliteStore.open(workspace.dbPath, { create: true }).close();
        out(
          JSON.stringify({
            ok: true,
            op: "init",
            workspace: workspace.dir,
            created,
            ...(example ? { example } : {}),
          }),
        );
        return 0;
      }),
    );

  program
    .command("shims <dir>")
    .description(
      "write scripts named like the original ledger's (start-step.sh, publish-plan.sh, run-step.sh, …) into dir; each runs the matching command with the same input (ORCH_DB is honoured like RATCHET_DB)",
    )
    .action(
      act(async (dir: string) => {
        const { shimsCommand } = await import("./shims.js");
        return shimsCommand(dir);
      }),
    );

  const plan = program.command("plan").description("publish, read and close plans");
  plan
    .command("show <plan_id>")
    .description("a plan's steps in tree order with logs, deviations, metrics and skills")
    .option("--step <step_id>", "only this step and its sub-steps")
    .option("--full", "print full logs (from blobs) instead of the cut display text")
    .option("--json", "machine-readable output")
    .action(
      act(async (id: string, o: { step?: string; full?: boolean; json?: boolean }) =>
        planShow(id, { ...globals(), ...o }),
      ),
    );
  plan
    .command("list")
    .description("plans, newest first")
    .option("--status <status>", "IN_PROGRESS, COMPLETED, FAILED or ABANDONED")
    .option("--limit <n>", "at most n plans (default 50)")
    .option("--json", "machine-readable output")
    .action(
      act(async (o: { status?: string; limit?: string; json?: boolean }) => planList({ ...globals(), ...o })),
    );

  const step = program.command("step").description("move steps through their state machine");
  step
    .command("apply <ops>")
    .description(
      'apply many write flows from a JSON-lines file (or -): one {"op": "<marker op>", …input} per line',
    )
    .option("--stop-on-error", "stop at the first failed op")
    .action(act(async (src: string, o: { stopOnError?: boolean }) => runBatch(src, { ...globals(), ...o })));

  const metric = program.command("metric").description("numeric observations");

  // Every write flow's command, its --help and its flag-style form come from FLOWS.
  const groups: Record<string, Command> = {
    plan,
    step,
    metric,
    headline: addWhyCommands(program, act, globals),
    reason: reasonGroup(program, act, globals),
    ...addWordsCommands(program, act, globals),
  };
  for (const f of FLOWS) {
    const group = groups[f.command[0]];
    if (!group) throw new Error(`no command group ${f.command[0]} for flow ${f.op}`);
    // A flow whose command its area's own file writes (`reason slots` has a text form).
    if (f.ownCommand) continue;
    if (group.commands.some((c) => c.name() === f.command[1])) continue; // a hand-written twin (headline respond)
    group
      .command(f.command[1])
      .argument("[input...]", "a .json/.yaml/.yml file or - for stdin, or the fields as flags")
      .description(f.summary)
      .allowUnknownOption()
      .helpOption("-h, --help", "show the input fields, the flags and an example")
      .addHelpText("after", flowHelp(f))
      .action(act(async (args: string[]) => runFlowCommand(f.op, args, globals())));
  }

  const project = program
    .command("project")
    .description("registered projects (their plans close through an agent review)");
  project
    .command("add <name>")
    .description("register a project")
    .option("--repo <path>", "git repository whose plans belong to the project")
    .action(act(async (name: string, o: { repo?: string }) => projectAdd(name, { ...globals(), ...o })));
  project
    .command("list")
    .option("--json", "machine-readable output")
    .action(act(async (o: { json?: boolean }) => projectList({ ...globals(), ...o })));

  program
    .command("events")
    .description("the append-only event log")
    .option("--since <id>", "only events after this id")
    .option("--plan <plan_id>", "only events of this plan")
    .option("--limit <n>", "at most n events before following (default 1000)")
    .option("--follow", "keep printing new events until interrupted")
    .option("--timeout <seconds>", "with --follow: stop after this many seconds")
    .option("--json", "one JSON object per line")
    .action(
      act(async (o: Record<string, string | boolean | undefined>) =>
        events({ ...globals(), ...(o as object) }),
      ),
    );

  program
    .command("review <script>")
    .description("static review of a learned step script (main.py or main.mjs); exit 9 when a finding blocks")
    .option("--declared <names>", "declared variables, comma-separated (default: every VAR_*/SECRET_* name)")
    .option("--json", "machine-readable output")
    .action(
      act(async (script: string, o: { declared?: string; json?: boolean }) => reviewCommand(script, o)),
    );

  addRunCommands(program, act, globals);
  addBridgeCommands(program, act, globals);
  addRunnerCommands(program, act, globals);
  addBuildCommands(program, act, globals);
  addServerCommands(program, act, globals);
  addThreadCommands(program, act, globals);
  addGraphCommands(program, act, globals);
  addCompletionCommands(program, act, globals);
  addStoreCommands(program, act);
  addWorkerCommands(program, act, globals);

  return program;
}

type RunOpts = Parameters<typeof import("./run-commands.js").cmdRun>[1];
type RunsListOpts = Parameters<typeof import("./run-commands.js").cmdRunsList>[0];
type RunSavedOpts = Parameters<typeof import("./run-commands.js").cmdRunSaved>[2];

/** Repeatable option values. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * Workflows and runs (src/cli/run-commands.ts). Loaded on demand: the workflow schema pulls in zod,
 * which would slow the start-up of every ledger write.
 */
function addRunCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const rc = () => import("./run-commands.js");
  program
    .command("run <workflow>")
    .description(
      "run a workflow in dependency order: learn_code steps run their saved scripts (0 tokens), direct/code_exec steps use the model (exit 8 when a step fails)",
    )
    .option("--var <name=value>", "set a workflow variable (repeatable)", collect)
    .option("--group <group>", "use a variable group of the workflow")
    .option("--only <steps>", "only these steps (comma-separated, repeatable)", collect)
    .option("--trigger <trigger>", "manual (default), schedule or webhook")
    .option("--step-timeout <seconds>", "time limit of each script (default 600)")
    .option(
      "--model <provider:model>",
      "model of direct/code_exec steps and sub-agents (default: RATCHET_MODEL, then config)",
    )
    .option("--json", "machine-readable output (the report only; no progress)")
    .option("--quiet", "print nothing but errors (the exit status says how the run ended)")
    .option(
      "--queue",
      "enqueue the run for `ratchet worker` (PostgreSQL store with a queue); prints the run id",
    )
    .option("--queue-name <name>", "with --queue: the queue (default: default)")
    .option("--wait", "with --queue: wait until a worker has finished the run (exit 0 passed, 8 otherwise)")
    .addHelpText(
      "after",
      "\nExamples:\n  ratchet run examples/workflows/hello --group french --var names=Ada,Grace\n  ratchet run flows/sales.yaml --only fetch-orders,build-report --json",
    )
    .action(act(async (wf: string, o: RunOpts) => (await rc()).cmdRun(wf, { ...globals(), ...o })));

  const runs = program.command("runs").description("recorded workflow runs");
  runs
    .command("list")
    .description("runs, newest first (marks runs whose owner process died as interrupted)")
    .option("--workflow <id>", "only runs of this workflow id")
    .option(
      "--status <status>",
      "only runs in this status: queued, running, passed, failed, interrupted, cancelled",
    )
    .option("--limit <n>", "at most n runs (default 50)")
    .option("--json", "machine-readable output")
    .action(act(async (o: RunsListOpts) => (await rc()).cmdRunsList({ ...globals(), ...o })));
  runs
    .command("cancel <run_id>")
    .description(
      "cancel a running run: it ends cancelled with every process of it gone (the process running it exits 8)",
    )
    .option("--json", "machine-readable output")
    .action(
      act(async (id: string, o: { json?: boolean }) =>
        (await rc()).cmdRunsCancel(id, { ...globals(), ...o }),
      ),
    );
  runs
    .command("show <run_id>")
    .description("a run and each step's mode, fast path, outcome, tokens, duration, exit code and error")
    .option("--json", "machine-readable output")
    .action(
      act(async (id: string, o: { json?: boolean }) => (await rc()).cmdRunsShow(id, { ...globals(), ...o })),
    );

  const workflow =
    program.commands.find((c) => c.name() === "workflow") ??
    program.command("workflow").description("workflow files, saved scripts and promotion");
  workflow
    .command("run-saved <workflow> <step_id>")
    .description("run one learn_code step's saved script outside a full run (recorded as a one-step run)")
    .option("--var <name=value>", "set a workflow variable (repeatable)", collect)
    .option("--group <group>", "use a variable group of the workflow")
    .option("--step-timeout <seconds>", "time limit of the script (default 600)")
    .option("--json", "machine-readable output")
    .action(
      act(async (wf: string, step: string, o: RunSavedOpts) =>
        (await rc()).cmdRunSaved(wf, step, { ...globals(), ...o }),
      ),
    );
  workflow
    .command("evidence <workflow>")
    .description(
      "promotion evidence of a step from the run tables: runs, successes, failures, groups covered",
    )
    .requiredOption("--step <step_id>", "the step")
    .option("--json", "machine-readable output")
    .action(
      act(async (wf: string, o: { step: string; json?: boolean }) =>
        (await rc()).cmdEvidence(wf, { ...globals(), ...o }),
      ),
    );
  workflow
    .command("config <workflow>")
    .description(
      "set a step's execution mode in the workflow file (promotion to learn_code needs 10 successful runs)",
    )
    .requiredOption("--step <step_id>", "the step")
    .requiredOption("--mode <mode>", "learn_code, code_exec or direct")
    .requiredOption("--reason <text>", "why (stored as declared_execution_mode_reason)")
    .option("--force", "promote with less evidence (recorded as workflow.promoted forced:true)")
    .addHelpText(
      "after",
      '\nExample:\n  ratchet workflow config flows/sales.yaml --step fetch-orders --mode learn_code --reason "fixed API sequence, 12 green runs"',
    )
    .option("--json", "machine-readable output")
    .action(
      act(
        async (
          wf: string,
          o: { step: string; mode: string; reason: string; force?: boolean; json?: boolean },
        ) => (await rc()).cmdConfig(wf, { ...globals(), ...o }),
      ),
    );

  program
    .command("doctor")
    .description(
      "check node, python3, git, ratchet-confine and bwrap, and the write protection scripts get (exit 8 when python3 or git is missing)",
    )
    .option("--json", "machine-readable output")
    .action(act(async (o: { json?: boolean }) => (await rc()).cmdDoctor(o)));
}

/**
 * The tool bridge and tools (src/cli/bridge-commands.ts). Loaded on demand: hono and the MCP SDK
 * would slow the start-up of every other command.
 */
function addBridgeCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const bc = () => import("./bridge-commands.js");
  const configHelp = "config file with mcpServers and customTools (default: .ratchet/config.json)";
  program
    .command("bridge")
    .description("the tool bridge scripts reach MCP servers and custom tools through")
    .command("serve")
    .description('serve a tool bridge on 127.0.0.1 until SIGINT/SIGTERM; prints {"url","port"}')
    .option("--port <n>", "port to listen on (default 0: an ephemeral port)")
    .option("--print-token", "print the bearer token in the JSON line (default: once on stderr)")
    .option("--config <path>", configHelp)
    .option(
      "--allow <tools>",
      "only these tools, comma-separated (mcp:server/tool, mcp:server/*, custom:tool)",
    )
    .option("--quiet", "no request log on stderr")
    .action(
      act(
        async (o: {
          port?: string;
          printToken?: boolean;
          config?: string;
          allow?: string;
          quiet?: boolean;
        }) => (await bc()).bridgeServe({ ...globals(), ...o }),
      ),
    );
  const tools = program.command("tools").description("MCP servers and custom tools of the workspace");
  tools
    .command("list")
    .description("every custom tool and every MCP server's tools (starts the servers; exit 8 if one fails)")
    .option("--config <path>", configHelp)
    .option("--json", "machine-readable output")
    .action(
      act(async (o: { config?: string; json?: boolean }) => (await bc()).toolsList({ ...globals(), ...o })),
    );
  tools
    .command("spec <names...>")
    .description("the get_api_spec text of tools (server/tool, mcp:server/tool, server/*, custom_tool)")
    .option("--config <path>", configHelp)
    .action(
      act(async (names: string[], o: { config?: string }) =>
        (await bc()).toolsSpec(names, { ...globals(), ...o }),
      ),
    );
}

/**
 * The code runner (src/cli/runner-commands.ts). Loaded on demand: zod and the model client would
 * slow the start-up of every other command.
 */
function addRunnerCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const rn = () => import("./runner-commands.js");
  const runner = program
    .command("runner")
    .description("bounded code changes proven in a disposable git worktree against a definition of done");
  runner
    .command("dry-run <spec>")
    .description(
      "validate a task spec and run the preflight (DoD must fail first); no model call (exit 4 refused)",
    )
    .option("--explain-risk", "report allowlist breadth, what the DoD runs, protected paths, dirty overlaps")
    .option("--json", "machine-readable output")
    .action(
      act(async (spec: string, o: { explainRisk?: boolean; json?: boolean }) =>
        (await rn()).runnerDryRun(spec, o),
      ),
    );
  runner
    .command("run <spec>")
    .description("run a task: exit 0 passed, 8 failed, 4 refused by preflight, 2 bad spec")
    .option("--json", "machine-readable output")
    .option("--quiet", "no progress and no summary on stdout (a failure is named on stderr)")
    .option(
      "--queue",
      "enqueue the task for `ratchet worker` (PostgreSQL store with a queue); exit 0 once queued",
    )
    .option("--queue-name <name>", "with --queue: the worker queue (default: default)")
    .action(
      act(async (spec: string, o: { json?: boolean; quiet?: boolean; queue?: boolean; queueName?: string }) =>
        (await rn()).runnerRun(spec, { ...globals(), ...o }),
      ),
    );
  runner
    .command("status <output_dir>")
    .description("the state and result of the tasks in an output folder")
    .option("--tail-events <n>", "also print the last n events")
    .option("--json", "machine-readable output")
    .action(
      act(async (dir: string, o: { tailEvents?: string; json?: boolean }) =>
        (await rn()).runnerStatus(dir, o),
      ),
    );
  runner
    .command("watch <output_dir>")
    .description("print events as they are written until every task is finished")
    .option("--timeout <seconds>", "give up after this many seconds (exit 8; default 3600)")
    .action(act(async (dir: string, o: { timeout?: string }) => (await rn()).runnerWatch(dir, o)));
  runner
    .command("doctor")
    .description(
      "check git, python3, the model (configured and reachable), the command sandbox and leaked worktrees",
    )
    .option("--json", "machine-readable output")
    .action(act(async (o: { json?: boolean }) => (await rn()).runnerDoctor(o)));
}

/**
 * The Builder (src/cli/build-commands.ts). Loaded on demand: the model client would slow the
 * start-up of every other command.
 */
function addBuildCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const bd = () => import("./build-commands.js");
  program
    .command("build <workflow>")
    .description(
      "the Builder: run a learn_code step's saved script, or have the model write/repair main.py (≤3 repairs) and save it (exit 8 when it does not pass)",
    )
    .requiredOption("--step <step_id>", "the learn_code step to build")
    .option("--group <group>", "use a variable group of the workflow")
    .option("--var <name=value>", "set a workflow variable (repeatable)", collect)
    .option(
      "--model <provider:model>",
      "the model (default: RATCHET_MODEL, then model in .ratchet/config.json)",
    )
    .option("--json", "machine-readable output")
    .option("--quiet", "no progress and no summary on stdout (a failure is named on stderr)")
    .addHelpText(
      "after",
      "\nExamples:\n  ratchet build examples/workflows/hello --step greet\n  RATCHET_MODEL=openai:gpt-4o-mini ratchet build flows/sales.yaml --step fetch-orders --group eu --json",
    )
    .action(
      act(
        async (
          wf: string,
          o: {
            step: string;
            group?: string;
            var?: string[];
            model?: string;
            json?: boolean;
            quiet?: boolean;
          },
        ) => (await bd()).cmdBuild(wf, { ...globals(), ...o }),
      ),
    );
}

/**
 * The server and the stdio MCP server (src/cli/server-commands.ts). Loaded on demand: hono and the
 * MCP SDK would slow the start-up of every other command.
 */
function addServerCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const sc = () => import("./server-commands.js");
  program
    .command("serve")
    .description(
      "HTTP API, live events (SSE), MCP endpoint and dashboard on 127.0.0.1:8765 until SIGINT/SIGTERM",
    )
    .option("--host <address>", "address to bind (default 127.0.0.1)")
    .option("--port <n>", "port (default 8765; 0: a free port)")
    .option(
      "--token <token>",
      "bearer token of writes and /mcp (default: env RATCHET_SERVER_TOKEN, else generated and printed once on stderr)",
    )
    .option("--read-only", "refuse every write (403)")
    .option("--runner-dir <dir>", "runner output folder to show tasks from (repeatable)", collect)
    .option(
      "--workflow <path>",
      "workflow file or folder to show besides those in the run tables (repeatable)",
      collect,
    )
    .option("--quiet", "no request log on stderr")
    .addHelpText(
      "after",
      '\nExamples:\n  ratchet serve\n  ratchet serve --port 9000 --runner-dir /tmp/runner-out --read-only\n  curl -H "Authorization: Bearer $TOKEN" -d @step.json http://127.0.0.1:8765/api/flows/complete-step',
    )
    .action(
      act(async (o: Parameters<typeof import("./server-commands.js").serve>[0]) =>
        (await sc()).serve({ ...globals(), ...o }),
      ),
    );
  program
    .command("mcp")
    .description("the MCP tools of `ratchet serve` over stdio (for clients that launch servers)")
    .option("--read-only", "refuse every write tool")
    .option("--runner-dir <dir>", "runner output folder for runner_status (repeatable)", collect)
    .option("--workflow <path>", "workflow file or folder (repeatable)", collect)
    .action(
      act(async (o: { readOnly?: boolean; runnerDir?: string[]; workflow?: string[] }) =>
        (await sc()).mcpStdio({ ...globals(), ...o }),
      ),
    );
}

/**
 * Threads, chat, orchestrator versions and skills (src/cli/thread-commands.ts). Loaded on demand:
 * Monty, the model client and the bridge would slow the start-up of every other command.
 */
function addThreadCommands(
  program: Command,
  act: <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>,
  globals: () => { db?: string },
): void {
  const tc = () => import("./thread-commands.js");
  const ta = () => import("./thread-admin-commands.js");
  type O = Record<string, string | boolean | string[] | undefined>;
  const waitHelp = "seconds to wait for an approval before leaving the thread Waiting (default 3600)";
  const thread = program
    .command("thread")
    .description(
      "agent threads run by a versioned orchestrator script, with approvals that survive restarts",
    );
  thread
    .command("start <goal>")
    .description("start a thread and drive it (exit 0 completed or waiting for approval, 8 failed)")
    .option("--project <name>", "project the thread belongs to (grants and insights are per project)")
    .option("--model <provider:model>", "model (default: RATCHET_MODEL)")
    .option("--wait-approval <seconds>", waitHelp)
    .option("--json", "one JSON line at the end instead of the live rendering")
    .option(
      "--queue",
      "enqueue the turn for `ratchet worker` (PostgreSQL store with a queue) instead of driving it here",
    )
    .option("--queue-name <name>", "with --queue: the worker queue (default: default)")
    .addHelpText("after", '\nExample:\n  ratchet thread start "summarise the open issues" --project web')
    .action(act(async (goal: string, o: O) => (await tc()).threadStart(goal, { ...globals(), ...o })));
  thread
    .command("list")
    .description("threads, newest first (recovers threads whose process died)")
    .option("--state <state>", "created, running, waiting, suspended, completed, done or failed")
    .option("--limit <n>", "at most n threads (default 50)")
    .option("--json", "machine-readable output")
    .action(act(async (o: O) => (await tc()).threadList({ ...globals(), ...o })));
  thread
    .command("show <thread>")
    .description("a thread's state, messages, approvals and checkpoint")
    .option("--json", "machine-readable output")
    .action(act(async (id: string, o: O) => (await tc()).threadShow(id, { ...globals(), ...o })));
  thread
    .command("watch <thread>")
    .description("print a thread's events until it ends (exit 8 if it fails or the timeout passes)")
    .option("--timeout <seconds>", "give up after this many seconds (default 3600)")
    .option("--json", "one JSON event per line")
    .action(act(async (id: string, o: O) => (await tc()).threadWatch(id, { ...globals(), ...o })));
  thread
    .command("resume <thread>")
    .description("continue a Waiting or Suspended thread from its saved VM")
    .option("--wait-approval <seconds>", waitHelp)
    .option("--json", "one JSON line at the end")
    .option(
      "--queue",
      "enqueue the turn for `ratchet worker` (PostgreSQL store with a queue) instead of driving it here",
    )
    .option("--queue-name <name>", "with --queue: the worker queue (default: default)")
    .action(act(async (id: string, o: O) => (await tc()).threadResume(id, { ...globals(), ...o })));
  for (const decision of ["approve", "deny"] as const) {
    const c = thread
      .command(`${decision} <thread>`)
      .description(
        decision === "approve"
          ? "approve the pending tool call (exactly that call); continues the thread here unless a process is waiting on it"
          : "deny the pending tool call: the orchestrator gets an error it can catch",
      )
      .option("--approval <id>", "the approval to decide (default: the thread's pending one)")
      .option("--reason <text>", "recorded with the decision")
      .option("--no-resume", "only record the decision")
      .option("--wait-approval <seconds>", waitHelp)
      .option("--json", "machine-readable output")
      .option("--queue", "continue the thread on a `ratchet worker` (enqueue the resume) instead of here")
      .option("--queue-name <name>", "with --queue: the worker queue (default: default)");
    if (decision === "approve") c.option("--always", "also grant this action for the project from now on");
    c.action(
      act(async (id: string, o: O) => (await tc()).threadDecide(decision, id, { ...globals(), ...o })),
    );
  }
  thread
    .command("inject <thread> <message>")
    .description("queue a message for a running or waiting thread; its orchestrator gets it at its next step")
    .option("--json", "machine-readable output")
    .action(
      act(async (id: string, message: string, o: O) =>
        (await tc()).threadInject(id, message, { ...globals(), ...o }),
      ),
    );
  thread
    .command("revoke <action>")
    .description("revoke the standing grant an --always approval gave an action (the next call asks again)")
    .option("--project <name>", "the project of the grant (default: none)")
    .option("--json", "machine-readable output")
    .action(act(async (action: string, o: O) => (await tc()).threadRevoke(action, { ...globals(), ...o })));
  thread
    .command("cancel <thread>")
    .description("cancel a thread (at once, or at its process's next host call)")
    .option("--reason <text>", "recorded as the thread's reason")
    .option("--json", "machine-readable output")
    .action(act(async (id: string, o: O) => (await tc()).threadCancel(id, { ...globals(), ...o })));

  program
    .command("chat")
    .description(
      "a REPL: streamed replies, tool calls, approvals and ◈ skills lines; each message runs as a thread",
    )
    .option("--project <name>", "project of the threads")
    .option("--model <provider:model>", "model (default: RATCHET_MODEL)")
    .action(act(async (o: O) => (await tc()).chat({ ...globals(), ...o })));

  const orch = program.command("orchestrator").description("versions of the orchestrator script threads run");
  orch
    .command("list")
    .description("versions (highest active one wins), their failures, and proposals from missions")
    .option("--json", "machine-readable output")
    .action(act(async (o: O) => (await ta()).orchestratorList({ ...globals(), ...o })));
  orch
    .command("show <version>")
    .description("the code of a version (0 is the built-in)")
    .action(act(async (v: string) => (await ta()).orchestratorShow(v, globals())));
  orch
    .command("rollback <version>")
    .description("disable every version above this one")
    .requiredOption("--reason <text>", "why (recorded)")
    .action(
      act(async (v: string, o: O) =>
        (await ta()).orchestratorRollback(v, { ...globals(), ...(o as { reason: string }) }),
      ),
    );
  orch
    .command("save <file>")
    .description("store a new version after a syntax check and the engine's test threads")
    .option("--reason <text>", "recorded with the version")
    .action(act(async (f: string, o: O) => (await ta()).orchestratorSave(f, { ...globals(), ...o })));
  orch
    .command("accept <proposal>")
    .description("apply a mission's proposal (orchestrator: syntax check + test threads first)")
    .action(act(async (id: string) => (await ta()).proposalDecide("accept", id, globals())));
  orch
    .command("reject <proposal>")
    .description("reject a mission's proposal")
    .option("--reason <text>", "recorded with the proposal")
    .action(
      act(async (id: string, o: O) => (await ta()).proposalDecide("reject", id, { ...globals(), ...o })),
    );

  const skills = program
    .command("skills")
    .description("skill documents injected into threads' system prompts");
  skills
    .command("add <name>")
    .description("add a skill")
    .option("--content <text>", "the text injected when the skill is active")
    .option("--file <path>", "read the text from a file")
    .option("--keywords <list>", "comma-separated keywords (10 per exact word, 5 per substring)")
    .option("--exclude <list>", "comma-separated keywords that veto the skill")
    .option("--tags <list>", "comma-separated tags (3 each)")
    .option(
      "--pattern <regex>",
      "a regex over the goal (20 each; repeatable)",
      (v: string, p: string[] = []) => [...p, v],
    )
    .option("--project <name>", "project of the skill")
    .action(
      act(async (name: string, o: O) =>
        (await ta()).skillsAdd(name, {
          ...globals(),
          ...o,
          ...(o.pattern ? { patterns: o.pattern as string[] } : {}),
        }),
      ),
    );
  skills
    .command("list")
    .option("--json", "machine-readable output")
    .action(act(async (o: O) => (await ta()).skillsList({ ...globals(), ...o })));
  skills
    .command("show <skill>")
    .description("a skill by id or name")
    .option("--json", "machine-readable output")
    .action(act(async (id: string, o: O) => (await ta()).skillsShow(id, { ...globals(), ...o })));
}

/** Runs the CLI with `argv` (as `process.argv`) and returns the exit status. */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  guardStdio();
  let status = 0;
  const program = build((n) => {
    status = n;
  });
  try {
    await program.parseAsync([...argv]);
    return status;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === "commander.helpDisplayed" ||
        e.code === "commander.version" ||
        e.code === "commander.help"
      )
        return 0;
      if (e.code === "commander.executeSubCommandAsync") return 1;
      return 2;
    }
    const re = toRatchetError(e);
    if (re.code === ErrorCode.Internal)
      err(`ratchet: internal error: ${re.message}\n${(e as Error).stack ?? ""}`);
    else err(`ratchet: ${re.message}`);
    return re.exitStatus;
  }
}

export { RatchetError };
