// bench/threads — the thread engine.
//  (a) Orchestrator loop iterations per second: one thread of N steps, each step a scripted model
//      reply (over HTTP, the production client) asking for one tool call (the bridge's built-in
//      `echo`) through the action checkpoint, with the VM saved at every host call. Baseline, same
//      run: the same N model calls and N tool calls made directly, with no engine.
//  (b) Host calls per second: an orchestrator that calls `__add_message__` (a write: VM dump +
//      one transaction) and `__check_signals__` (a read) in a loop. Baseline: the same loop in the
//      same VM answered by a plain function (the interpreter's own pause/resume cost).
//  (c) Memory per idle paused thread: 1,000 default orchestrators paused at an approval
//      (`__execute_action__`), held in memory; heap + external growth per thread, and the bytes of
//      each saved VM. Baseline: the bytes of the same thread's conversation as JSON.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, ROOT, report } from "./lib.mjs";

const threads = await import(join(ROOT, "dist", "threads", "index.js"));
const { SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));
const { createToolRegistry, invokeTool } = await import(join(ROOT, "dist", "bridge", "index.js"));
const { startScriptedModel } = await import(join(ROOT, "dist", "testing", "scripted-model.js"));
const { scriptedModelClient } = await import(join(ROOT, "dist", "testing", "scripted-model-client.js"));

const quick = process.env.BENCH_QUICK === "1";
const STEPS = quick ? 40 : 150;
const HOST_LOOPS = quick ? 500 : 2000;
const PAUSED = quick ? 200 : 1000;

const dir = mkdtempSync(join(tmpdir(), "ratchet-bench-threads-"));
const store = SqliteStore.open(join(dir, "ratchet.db"), { create: true });
const turns = [
  {
    tool_calls: [{ name: "echo", arguments: { text: "tick" } }],
    usage: { prompt_tokens: 50, completion_tokens: 10 },
    repeat: STEPS - 1,
  },
  { text: "done", usage: { prompt_tokens: 50, completion_tokens: 2 } },
];
const model = await startScriptedModel({ script: { turns } });
const config = threads.compileThreadsConfig({ budget: { max_steps: STEPS + 10, max_tokens: 10_000_000 } });
const svc = new threads.ThreadService({
  store,
  config,
  model: () => scriptedModelClient(model),
  actions: () => threads.bridgeActions(createToolRegistry({ baseDir: ROOT }), {}),
  missions: false,
});

// (a)
let t = performance.now();
const r = await svc.start("tick until done");
const engineMs = performance.now() - t;
if (r.outcome !== "completed" || r.thread.step_count !== STEPS)
  throw new Error(`bench thread ended ${r.outcome}: ${r.thread.reason}`);
model.reset();
const client = scriptedModelClient(model);
const registry = createToolRegistry({ baseDir: ROOT });
// The same conversation an agent loop has to send: it grows by one call and one result a step.
const convo = [{ role: "user", content: "tick until done" }];
t = performance.now();
for (let i = 0; i < STEPS; i++) {
  const c = await client.complete({
    system: config.systemPrompt,
    messages: convo,
    tools: [{ name: "echo", description: "echo", inputSchema: { type: "object" } }],
  });
  convo.push({ role: "assistant", content: c.text, toolCalls: c.toolCalls });
  for (const call of c.toolCalls) {
    const out = await invokeTool(registry, { kind: "custom", tool: "echo" }, call.args);
    convo.push({ role: "tool", toolCallId: call.id, toolName: call.name, content: JSON.stringify(out) });
  }
}
const directMs = performance.now() - t;
await registry.close();

// (b)
const HOST = `n = 0\nwhile n < ${HOST_LOOPS}:\n    __add_message__("user", "x")\n    __check_signals__()\n    n += 1\nFINAL(n)\n{"outcome": "completed"}\n`;
svc.versions.save(HOST, threads.montyVm);
t = performance.now();
const h = await svc.start("host calls");
const hostMs = performance.now() - t;
if (h.outcome !== "completed") throw new Error(`host-call thread ended ${h.outcome}: ${h.thread.reason}`);
const limits = { maxDurationSecs: 60, maxMemory: 64e6, maxAllocations: 1e8, maxRecursionDepth: 200 };
t = performance.now();
let vm = threads.montyVm.start(HOST, { scriptName: "bare.py", inputs: {}, limits });
while (vm.progress.kind === "call") vm = vm.resume(null);
const bareMs = performance.now() - t;

// (c)
const answers = {
  __list_skills__: [],
  __add_message__: null,
  __get_actions__: [
    { name: "append", description: "append", parameters: { type: "object" }, effect: "unknown" },
  ],
  __check_signals__: null,
  __check_budget__: { ok: true, reason: null },
  __llm_complete__: {
    text: "",
    action_calls: [{ call_id: "c1", name: "append", args: { line: "x" } }],
    usage: {},
    finish_reason: "tool-calls",
  },
};
const config0 = {
  system_prompt: config.systemPrompt,
  skill_budget_tokens: 2000,
  max_skills: 3,
  resumed: false,
};
function paused(i) {
  let v = threads.montyVm.start(threads.DEFAULT_ORCHESTRATOR, {
    scriptName: "orchestrator_v0.py",
    inputs: { goal: `paused thread number ${i}: append a line`, config: config0 },
    limits,
  });
  while (v.progress.kind === "call" && v.progress.name !== "__execute_action__")
    v = v.resume(answers[v.progress.name] ?? null);
  return v;
}
paused(-1);
global.gc?.();
const before = process.memoryUsage();
const held = [];
for (let i = 0; i < PAUSED; i++) held.push(paused(i));
global.gc?.();
const after = process.memoryUsage();
const perThread =
  (after.heapUsed +
    after.external +
    after.arrayBuffers -
    (before.heapUsed + before.external + before.arrayBuffers)) /
  PAUSED;
const rssPer = (after.rss - before.rss) / PAUSED;
const dumpBytes = held[0].dump().length;
const convoBytes = JSON.stringify([
  { role: "user", content: "paused thread number 0: append a line" },
  { role: "assistant", content: "", tool_calls: answers.__llm_complete__.action_calls },
]).length;

report("threads", {
  "(a) engine: steps/s (model reply + tool call each)": STEPS / (engineMs / 1000),
  "(a) baseline: same model + tool calls direct, /s": STEPS / (directMs / 1000),
  "(a) engine time ÷ direct time": engineMs / directMs,
  "(b) engine host calls/s (write + read pairs)": (2 * HOST_LOOPS) / (hostMs / 1000),
  "(b) baseline: bare VM pause/resume calls/s": (2 * HOST_LOOPS) / (bareMs / 1000),
  "(b) engine ÷ bare per host call": hostMs / bareMs,
  [`(c) RSS growth per paused thread (${PAUSED} held), KiB`]: rssPer / 1024,
  "(c) JS heap + external growth per paused thread, KiB": perThread / 1024,
  "(c) saved VM bytes per paused thread": dumpBytes,
  "(c) saved VM ÷ its conversation as JSON": dumpBytes / convoBytes,
  machine: "shared with other engineers' work (2 cores): re-measure on a quiet machine",
});
console.log(`  (${held.length} VMs held; thread of ${STEPS} steps in ${fmt(engineMs, 0)} ms)`);
await model.close();
store.close();
