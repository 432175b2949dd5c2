/** `append-log` (`ratchet step log`): Append raw output to a step's log. */
import { type Infer, obj, utf8Length } from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { id, logText } from "../inputs.js";

export const LogInput = obj({
  step_id: id("step to append to"),
  text: logText("raw output to keep"),
});
export type LogInput = Infer<typeof LogInput>;

export function appendLog(l: LedgerCore, input: LogInput) {
  return l.store.tx(() => {
    const step = l.requireStep(input.step_id);
    l.addLog(step, "log", input.text);
    l.store.appendEvent({
      entityKind: "step",
      entityId: step.step_id,
      planId: step.plan_id,
      type: LedgerEvent.StepLogAppended,
      payload: { bytes: utf8Length(input.text) },
    });
    return {
      step_id: step.step_id,
      plan_id: step.plan_id,
      status: step.status,
      bytes: utf8Length(input.text),
    };
  });
}

export const APPEND_LOG_FLOW = defineFlow({
  op: "append-log",
  command: ["step", "log"],
  summary: "Append raw output to a step's log.",
  input: LogInput,
  example: { step_id: "fix-login-20260101120000-A", text: "raw output" },
  positional: "step_id",
  refusals: [],
  result: ["step_id", "plan_id", "status", "bytes"],
  run: (l, i) => appendLog(l, i),
});
