/** `record-skill` (`ratchet plan record-skill`): Record a skill activated mid-flight (source: iron-law, auto-search, explicit-mention or deferred-load). */
import {
  ErrorCode,
  type Infer,
  MAX_TITLE_CHARS,
  obj,
  oneOf,
  opt,
  RatchetError,
  str,
} from "../../core/index.js";
import type { LedgerCore } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { id, SKILL_SOURCES, text } from "../inputs.js";

export const RecordSkillInput = obj({
  plan_id: id("plan"),
  name: str({ min: 1, max: MAX_TITLE_CHARS, description: "skill name" }),
  source: oneOf(SKILL_SOURCES, "how the skill was activated"),
  step_id: opt(id("step")),
  reason: opt(text("why it was activated")),
});
export type RecordSkillInput = Infer<typeof RecordSkillInput>;

export function recordSkill(l: LedgerCore, input: RecordSkillInput) {
  return l.store.tx(() => {
    const plan = l.requirePlan(input.plan_id);
    if (input.step_id !== undefined) {
      const step = l.requireStep(input.step_id);
      if (step.plan_id !== plan.plan_id) {
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `field \`step_id\`: step ${step.step_id} belongs to plan ${step.plan_id}, not ${plan.plan_id}`,
          { field: "step_id" },
        );
      }
    }
    const id = l.store.insertSkill({
      plan_id: plan.plan_id,
      step_id: input.step_id ?? null,
      name: input.name,
      source: input.source,
      reason: l.red(input.reason) ?? null,
      created_at: l.now(),
    });
    l.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanSkillRecorded,
      payload: { skill_id: id, name: input.name, step_id: input.step_id },
    });
    return {
      recorded: true,
      plan_id: plan.plan_id,
      skill: input.name,
      skill_id: id,
      name: input.name,
      source: input.source,
    };
  });
}

export const RECORD_SKILL_FLOW = defineFlow({
  op: "record-skill",
  command: ["plan", "record-skill"],
  summary:
    "Record a skill activated mid-flight (source: iron-law, auto-search, explicit-mention or deferred-load).",
  input: RecordSkillInput,
  example: { plan_id: "fix-login-20260101120000", name: "systematic-debugging", source: "explicit-mention" },
  positional: "plan_id",
  refusals: [{ code: ErrorCode.InvalidValue, exit: 2, when: "`step_id` belongs to another plan" }],
  result: ["recorded", "plan_id", "skill", "skill_id", "name", "source"],
  run: (l, i) => recordSkill(l, i),
});
