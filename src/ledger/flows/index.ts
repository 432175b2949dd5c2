/**
 * Every write flow, in one list. The CLI commands and their `--help`, the flag-style form, the
 * HTTP routes and `/openapi.json`, the MCP tools, the shims and the op table of docs/cli.md are
 * derived from it: adding a flow is one file in this folder and one line here.
 */
import type { Schema } from "../../core/index.js";
import { HEADLINE_RESPOND_FLOW } from "../../provenance/reasons/headline-respond.js";
// Provenance flows live in their area (their definitions exported there); importing the door also
// registers the close-time reasons on the ledger's onPlanClosing hook.
import { REASON_FILL_FLOW, REASON_SLOTS_FLOW } from "../../provenance/reasons/index.js";
import { NOTE_FLOW, REFERENCE_ADD_FLOW, REFERENCE_MARK_FLOW } from "../../provenance/words/flows.js";
import type { FlowDef } from "../flow.js";
import type { Op } from "../inputs.js";
import { ABANDON_PLAN_FLOW } from "./abandon-plan.js";
import { AGENT_REVIEW_CLOSE_FLOW } from "./agent-review-close.js";
import { APPEND_LOG_FLOW } from "./append-log.js";
import { COMPLETE_STEP_FLOW } from "./complete-step.js";
import { DEVIATE_FLOW } from "./deviate.js";
import { FAIL_STEP_FLOW } from "./fail-step.js";
import { FINISH_PLAN_FLOW } from "./finish-plan.js";
import { HEARTBEAT_FLOW } from "./heartbeat.js";
import { PUBLISH_PLAN_FLOW } from "./publish-plan.js";
import { RAISE_BUDGET_FLOW } from "./raise-budget.js";
import { RECORD_METRIC_FLOW } from "./record-metric.js";
import { RECORD_SKILL_FLOW } from "./record-skill.js";
import { RUN_STEP_FLOW } from "./run-step.js";
import { START_STEP_FLOW } from "./start-step.js";
import { SWEEP_FLOW } from "./sweep.js";

/** A flow of any input (the list is heterogeneous; each entry keeps its own types). */
// biome-ignore lint/suspicious/noExplicitAny: each flow's input type differs; `run` is only called with its own schema's output
export type AnyFlow = FlowDef<any, Record<string, unknown>>;

export const FLOWS = [
  PUBLISH_PLAN_FLOW,
  START_STEP_FLOW,
  COMPLETE_STEP_FLOW,
  FAIL_STEP_FLOW,
  APPEND_LOG_FLOW,
  RUN_STEP_FLOW,
  DEVIATE_FLOW,
  RECORD_SKILL_FLOW,
  RECORD_METRIC_FLOW,
  RAISE_BUDGET_FLOW,
  ABANDON_PLAN_FLOW,
  FINISH_PLAN_FLOW,
  AGENT_REVIEW_CLOSE_FLOW,
  HEARTBEAT_FLOW,
  SWEEP_FLOW,
  REASON_SLOTS_FLOW,
  REASON_FILL_FLOW,
  HEADLINE_RESPOND_FLOW,
  NOTE_FLOW,
  REFERENCE_ADD_FLOW,
  REFERENCE_MARK_FLOW,
] as const satisfies readonly AnyFlow[];

/** The flow of each op. */
export const FLOW_BY_OP: Readonly<Record<Op, AnyFlow>> = Object.fromEntries(
  FLOWS.map((f) => [f.op, f]),
) as unknown as Record<Op, AnyFlow>;

/** Op names in FLOWS order. */
export const OP_NAMES = FLOWS.map((f) => f.op) as Op[];

/** Each op's input schema. */
export const OP_INPUTS = Object.fromEntries(FLOWS.map((f) => [f.op, f.input])) as unknown as Readonly<
  Record<Op, Schema<unknown>>
>;
