/**
 * `__execute_code_step__(code, state)`: runs model-written Python in a nested Monty VM with its own,
 * smaller limits, `state` as a variable, and these functions: the actions by name
 * (`echo__add(a=1, b=2)` or `echo__add({"a": 1, "b": 2})`, through the same checkpoint — one that
 * needs an approval ends the code step with its gate in `pending_gate` (stored versions; the
 * built-in one refuses it, raising PermissionError); a failed one raises RuntimeError),
 * `llm_query(prompt, context=None, model=None)`, `llm_query_batched(prompts, context=None, …)`,
 * `rlm_query(prompt)` (a child thread, a full sub-agent) and `FINAL(value)`. Answers
 * `{return_value, stdout, action_results, final_answer, had_error, pending_gate}`; errors (limits
 * included) are in `stdout` and `had_error`, they do not fail the thread.
 */
import { CODE_CALL_PREFIX } from "./checkpoint.js";
import { ThreadEvent } from "./events.js";
import type { CodeStepHost, HostContext, HostResult } from "./host-types.js";
import {
  CODE_STEP_MAX_ALLOCATIONS,
  CODE_STEP_MAX_DURATION_SECS,
  CODE_STEP_MAX_LLM_CALLS,
  CODE_STEP_MAX_MEMORY_BYTES,
  CODE_STEP_MAX_OUTPUT_CHARS,
  LLM_TIMEOUT_MS,
} from "./limits.js";
import { montyVm, type PausedVm, VmError } from "./vm.js";

const LLM_QUERY_SYSTEM = "Answer the question directly and briefly.";

/** The prompt of an `llm_query` with its optional context. */
function queryPrompt(prompt: unknown, context: unknown): string {
  const p = typeof prompt === "string" ? prompt : JSON.stringify(prompt ?? "");
  if (context === undefined || context === null) return p;
  const c = typeof context === "string" ? context : JSON.stringify(context);
  return `${p}\n\nContext:\n${c}`;
}

export async function runCodeStep(
  h: CodeStepHost,
  code: string,
  state: unknown,
  ctx: HostContext,
): Promise<HostResult> {
  const vmf = h.d.vm ?? montyVm;
  let stdout = "";
  let finalAnswer: unknown = null;
  let returnValue: unknown = null;
  let error: string | null = null;
  let pendingGate: Record<string, unknown> | null = null;
  let tokens = 0;
  let llmCalls = 0;
  let actionCalls = 0;
  const actionResults: unknown[] = [];
  const print = (text: string) => {
    if (stdout.length < CODE_STEP_MAX_OUTPUT_CHARS) stdout += text;
  };
  const ask = async (prompt: string): Promise<string> => {
    if (++llmCalls > CODE_STEP_MAX_LLM_CALLS)
      throw new Error(`at most ${CODE_STEP_MAX_LLM_CALLS} model calls per code step`);
    const c = await h.d.model().complete({
      system: LLM_QUERY_SYSTEM,
      messages: [{ role: "user", content: prompt }],
      timeoutMs: LLM_TIMEOUT_MS,
      ...(h.d.signal ? { signal: h.d.signal } : {}),
    });
    tokens += c.usage.inputTokens + c.usage.outputTokens;
    h.addUsage(c.usage.inputTokens, c.usage.outputTokens);
    return c.text;
  };
  const actionNames = new Set((await h.d.actions.list(h.d.signal)).map((a) => a.name));
  try {
    let vm: PausedVm = vmf.start(code, {
      scriptName: "code_step.py",
      inputs: { state: state ?? {} },
      limits: {
        maxDurationSecs: CODE_STEP_MAX_DURATION_SECS,
        maxMemory: CODE_STEP_MAX_MEMORY_BYTES,
        maxAllocations: CODE_STEP_MAX_ALLOCATIONS,
        maxRecursionDepth: 100,
      },
      onPrint: print,
    });
    while (vm.progress.kind === "call") {
      const { name, args, kwargs } = vm.progress;
      const arg = (i: number, key: string) => (args.length > i ? args[i] : kwargs[key]);
      if (name === "FINAL" || name === "FINAL_VAR") {
        finalAnswer = arg(0, "value") ?? kwargs.result ?? null;
        vm = vm.resume(null);
      } else if (name === "llm_query" || name === "rlm_query" || name === "llm_query_batched") {
        try {
          if (name === "llm_query")
            vm = vm.resume(await ask(queryPrompt(arg(0, "prompt"), arg(1, "context"))));
          else if (name === "llm_query_batched") {
            const prompts = arg(0, "prompts");
            const list = Array.isArray(prompts) ? prompts : [];
            const ctxArg = arg(1, "context");
            vm = vm.resume(await Promise.all(list.map((p) => ask(queryPrompt(p, ctxArg)))));
          } else {
            const goal = queryPrompt(arg(0, "prompt"), null);
            if (!h.d.subAgent) vm = vm.resume(await ask(goal));
            else {
              const r = await h.d.subAgent(goal, h.threadId);
              vm = r.ok ? vm.resume(r.answer) : vm.raise("RuntimeError", `rlm_query: ${r.answer}`);
            }
          }
        } catch (e) {
          vm = vm.raise("RuntimeError", `${name} failed: ${(e as Error).message}`);
        }
      } else if (actionNames.has(name)) {
        // An action: through the same checkpoint, under an id made from this host call's number,
        // so a code step run again after a restart finds the calls it already made.
        const callArgs = args.length > 0 && args[0] && typeof args[0] === "object" ? args[0] : kwargs;
        const r = await h.executeForCode({
          callId: `${CODE_CALL_PREFIX}${ctx.seq}-${++actionCalls}`,
          action: name,
          args: callArgs as Record<string, unknown>,
        });
        if ("stop" in r) {
          vm = vm.raise("RuntimeError", `action ${name}: ${r.reason}`);
          continue;
        }
        if ("gate" in r) {
          // The code stops here; the script gets the gate and pauses the thread (default.py's path).
          pendingGate = {
            gate_paused: true,
            gate_name: "approval",
            request_id: r.gate.approval_id,
            action_name: name,
            call_id: r.gate.call_id,
            parameters: callArgs,
            resume_kind: { approval: { request_id: r.gate.approval_id, expires_ms: r.gate.expires_ms } },
          };
          break;
        }
        actionResults.push(r.result);
        if (!r.result.is_error) vm = vm.resume(r.result.output);
        else
          vm = vm.raise(
            r.status === "denied" || r.status === "refused" ? "PermissionError" : "RuntimeError",
            String(r.result.output),
          );
      } else {
        vm = vm.raise("NameError", `name '${name}' is not defined`);
      }
    }
    if (vm.progress.kind === "done") returnValue = vm.progress.output ?? null;
  } catch (e) {
    error = e instanceof VmError ? e.message : String(e);
  }
  if (error) stdout = `${stdout}${stdout && !stdout.endsWith("\n") ? "\n" : ""}Error: ${error}`;
  if (stdout.length > CODE_STEP_MAX_OUTPUT_CHARS)
    stdout = `${stdout.slice(0, CODE_STEP_MAX_OUTPUT_CHARS)}\n…[cut]`;
  h.d.onEvent?.({ type: "code", output: stdout });
  const value = {
    return_value: returnValue,
    stdout,
    action_results: actionResults,
    final_answer: finalAnswer,
    had_error: error !== null,
    pending_gate: pendingGate,
    // The key the original's earlier script (default-7f87d17.py) reads; default.py reads it as a fallback.
    need_approval: pendingGate,
    tokens,
  };
  return ctx.commit({ value }, () =>
    h.d.threads.event(h.threadId, ThreadEvent.CodeStep, {
      chars: code.length,
      output_chars: stdout.length,
      error,
      tokens,
      final: finalAnswer !== null,
      gate: pendingGate ? pendingGate.request_id : null,
      actions: actionResults.length,
    }),
  );
}
