/**
 * The ledger: its primitives (`core.ts`) and one method per write flow, each delegating to the
 * flow's function in `flows/<op>.ts`. Each flow validates its input, then runs in ONE store
 * transaction (`BEGIN IMMEDIATE`) that changes the rows, appends an event per change, and — after
 * every non-review step transition — runs the deterministic roll-up, so exactly one writer can
 * perform the review hand-off. A refused flow throws a typed error and writes nothing.
 */
import { LedgerCore } from "./core.js";
import { type AbandonInput, abandonPlan } from "./flows/abandon-plan.js";
import { agentReviewClose, type ReviewCloseInput } from "./flows/agent-review-close.js";
import { appendLog, type LogInput } from "./flows/append-log.js";
import { type CompleteInput, completeStep } from "./flows/complete-step.js";
import { type DeviateInput, deviate } from "./flows/deviate.js";
import { type FailInput, failStep } from "./flows/fail-step.js";
import { type FinishInput, finishPlan } from "./flows/finish-plan.js";
import { type HeartbeatInput, heartbeat } from "./flows/heartbeat.js";
import { type PublishInput, publishPlan } from "./flows/publish-plan.js";
import { type RaiseBudgetInput, raiseBudget } from "./flows/raise-budget.js";
import { type MetricInput, recordMetric, recordMetricInTx } from "./flows/record-metric.js";
import { type RecordSkillInput, recordSkill } from "./flows/record-skill.js";
import { startForRun } from "./flows/run-step.js";
import { type StartInput, startStep } from "./flows/start-step.js";
import { type SweepInput, sweep } from "./flows/sweep.js";

export type { LedgerDeps, RollupReport } from "./core.js";
export { gitRoot, NO_PROJECT } from "./core.js";

/** A run's log: the display text (already cut once) and the full output when it was cut. */
export interface RunLog {
  kind: string;
  text: string;
  full?: string;
}

export class Ledger extends LedgerCore {
  publish(input: PublishInput, ctx: { cwd?: string; kind?: string } = {}) {
    return publishPlan(this, input, ctx);
  }

  start(input: StartInput) {
    return startStep(this, input);
  }

  /** Starts a step for `run-step`: PENDING → IN_PROGRESS, or renews the lease of an IN_PROGRESS one. */
  startForRun(stepId: string, type: string, command: string, leaseSeconds?: number) {
    return startForRun(this, stepId, type, command, leaseSeconds);
  }

  complete(input: CompleteInput, opts: { viaRun?: boolean; exitCode?: number; log?: RunLog } = {}) {
    return completeStep(this, input, opts);
  }

  fail(input: FailInput, opts: { exitCode?: number; log?: RunLog } = {}) {
    return failStep(this, input, opts);
  }

  log(input: LogInput) {
    return appendLog(this, input);
  }

  heartbeat(input: HeartbeatInput) {
    return heartbeat(this, input);
  }

  deviate(input: DeviateInput) {
    return deviate(this, input);
  }

  recordSkill(input: RecordSkillInput) {
    return recordSkill(this, input);
  }

  /** The `record-metric` op: a metric needs a project (given, or its plan's); `"none"` is none. */
  recordMetric(input: MetricInput) {
    return recordMetric(this, input);
  }

  /** Records a metric inside the caller's transaction (run-step capture keeps a plan with no project). */
  recordMetricInTx(input: MetricInput, opts: { requireProject?: boolean } = {}) {
    return recordMetricInTx(this, input, opts);
  }

  raiseBudget(input: RaiseBudgetInput) {
    return raiseBudget(this, input);
  }

  abandon(input: AbandonInput) {
    return abandonPlan(this, input);
  }

  finish(input: FinishInput) {
    return finishPlan(this, input);
  }

  reviewClose(input: ReviewCloseInput) {
    return agentReviewClose(this, input);
  }

  /** Fails every IN_PROGRESS step whose lease expired, each in its own transaction with its roll-up. */
  sweep(input: SweepInput) {
    return sweep(this, input);
  }
}
