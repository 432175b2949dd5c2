/**
 * `__execute_code_step__`: runs model-written Python in a nested Monty VM with its own, smaller
 * limits. The code may `print`, ask a model with `llm_query(prompt)` (tokens count on the thread),
 * call actions by name (`echo__add(a=1, b=2)` or `echo__add({"a": 1, "b": 2})`) through the same
 * checkpoint — an action that needs an approval is refused there — and end the thread with
 * `FINAL(value)`. Its errors (limits included) come back as text for the
 * model; they do not fail the thread.
 */
import { CODE_CALL_PREFIX, executeAction } from "./checkpoint.js";
import { ThreadEvent } from "./events.js";
import type { HostAnswer, HostCalls, HostContext } from "./host.js";
import {
  CODE_STEP_MAX_ALLOCATIONS,
  CODE_STEP_MAX_DURATION_SECS,
  CODE_STEP_MAX_LLM_CALLS,
  CODE_STEP_MAX_MEMORY_BYTES,
  CODE_STEP_MAX_OUTPUT_CHARS,
  LLM_TIMEOUT_MS,
} from "./limits.js";
import { montyVm, type PausedVm, VmError } from "./vm.js";

export async function runCodeStep(h: HostCalls, code: string, ctx: HostContext): Promise<HostAnswer> {
  const vmf = h.d.vm ?? montyVm;
  let output = "";
  let final: unknown = null;
  let error: string | null = null;
  let tokens = 0;
  let llmCalls = 0;
  let actionCalls = 0;
  const print = (text: string) => {
    if (output.length < CODE_STEP_MAX_OUTPUT_CHARS) output += text;
  };
  try {
    let vm: PausedVm = vmf.start(code, {
      scriptName: "code_step.py",
      inputs: {},
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
      if (name === "FINAL") {
        final = args[0] ?? kwargs.result ?? null;
        vm = vm.resume(null);
      } else if (name === "llm_query") {
        if (++llmCalls > CODE_STEP_MAX_LLM_CALLS) {
          vm = vm.raise("RuntimeError", `llm_query: at most ${CODE_STEP_MAX_LLM_CALLS} calls per code step`);
          continue;
        }
        const prompt = String(args[0] ?? kwargs.prompt ?? "");
        try {
          const c = await h.d.model().complete({
            system: "Answer the question directly and briefly.",
            messages: [{ role: "user", content: prompt }],
            timeoutMs: LLM_TIMEOUT_MS,
            ...(h.d.signal ? { signal: h.d.signal } : {}),
          });
          tokens += c.usage.inputTokens + c.usage.outputTokens;
          h.addUsage(c.usage.inputTokens, c.usage.outputTokens);
          vm = vm.resume(c.text);
        } catch (e) {
          vm = vm.raise("RuntimeError", `llm_query failed: ${(e as Error).message}`);
        }
      } else if ((await h.d.actions.list(h.d.signal)).some((a) => a.name === name)) {
        // An action: through the same checkpoint, under an id made from this host call's number,
        // so a code step run again after a restart finds the calls it already made.
        const callArgs = args.length > 0 ? args[0] : kwargs;
        const inner: HostContext = {
          seq: ctx.seq,
          commit: (answer, effects) =>
            h.d.threads.tx(() => {
              effects?.();
              return answer;
            }),
        };
        const a = await executeAction(
          h,
          name,
          callArgs,
          `${CODE_CALL_PREFIX}${ctx.seq}-${++actionCalls}`,
          inner,
        );
        vm = "error" in a ? vm.raise(a.error.type, a.error.message) : vm.resume(a.value);
      } else {
        vm = vm.raise("NameError", `name '${name}' is not defined`);
      }
    }
    const out = vm.progress.output;
    if (out !== null && out !== undefined && output === "")
      output = typeof out === "string" ? out : JSON.stringify(out);
  } catch (e) {
    error = e instanceof VmError ? e.message : String(e);
  }
  if (output.length > CODE_STEP_MAX_OUTPUT_CHARS)
    output = `${output.slice(0, CODE_STEP_MAX_OUTPUT_CHARS)}\n…[cut]`;
  h.d.onEvent?.({ type: "code", output: error ? `${output}\n${error}` : output });
  const value = { output, final, error, tokens };
  return ctx.commit({ value }, () =>
    h.d.threads.event(h.threadId, ThreadEvent.CodeStep, {
      chars: code.length,
      output_chars: output.length,
      error,
      tokens,
      final: final !== null,
    }),
  );
}
