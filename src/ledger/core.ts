/**
 * The ledger's shared primitives, used by every write flow (`flows/<op>.ts`): lookups, the only
 * code that assigns a status (`moveStep`, `movePlan`, and `reopen` for the recovery path), the one
 * log writer, leases, and the roll-up (`rollUpPlan`: decide with the pure `rollUp`, then apply the
 * decision). Everything here runs inside the caller's `store.tx()`.
 */
import { existsSync, realpathSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  type Clock,
  DEFAULT_LEASE_SECONDS,
  ErrorCode,
  headTail,
  iso,
  LOG_HEAD_BYTES,
  LOG_INLINE_MAX_BYTES,
  LOG_TAIL_BYTES,
  RatchetError,
  Redactor,
  systemClock,
  utf8Length,
} from "../core/index.js";
import type { Blobs, MoveStepRow, PlanRow, StepForMove, StepRow, Store } from "../store/index.js";
import { LedgerEvent, PLAN_MOVE_EVENT, STEP_MOVE_EVENT } from "./events.js";
import { childStepId, reviewStepId } from "./ids.js";
import type { StepSpecInput } from "./inputs.js";
import { isSound, rollUp } from "./rollup.js";
import { checkPlanMove, checkStepMove, PlanStatus, StepRole, StepStatus, StepType } from "./states.js";

export interface LedgerDeps {
  store: Store;
  blobs: Blobs;
  clock?: Clock;
  /** Who holds leases taken by this process (default `<pid>@<host>`). */
  holder?: string;
  /** Masks secrets in every text the ledger stores (default: from the process environment). */
  redactor?: Redactor;
}

/**
 * Runs inside the transaction that closes a reviewed plan COMPLETED (the roll-up after
 * `<plan>-REVIEW.1` completes, or `review-close` pass), before the review step and the plan move.
 * Other modules register here (provenance writes its close-time reasons); the ledger knows no more
 * of them. A hook must not throw: the ledger catches, logs on the review step and goes on, so
 * nothing a hook does can stop the close.
 */
export type PlanClosingHook = (l: LedgerCore, plan: PlanRow, review: StepRow) => void;

const PLAN_CLOSING_HOOKS: PlanClosingHook[] = [];

/** Registers a hook run at every reviewed close; returns a function removing it. */
export function onPlanClosing(hook: PlanClosingHook): () => void {
  PLAN_CLOSING_HOOKS.push(hook);
  return () => {
    const i = PLAN_CLOSING_HOOKS.indexOf(hook);
    if (i >= 0) PLAN_CLOSING_HOOKS.splice(i, 1);
  };
}

/** What the roll-up did, reported on the tail marker of complete/fail/run. */
export interface RollupReport {
  plan_status: string;
  review_status?: string;
  needs_agent_review?: boolean;
  project?: string;
  review_step_id?: string;
  review_child_step_id?: string;
  unrecovered?: string[];
}

export class LedgerCore {
  readonly store: Store;
  readonly blobs: Blobs;
  readonly clock: Clock;
  readonly holder: string;
  readonly redactor: Redactor;

  constructor(deps: LedgerDeps) {
    this.store = deps.store;
    this.blobs = deps.blobs;
    this.clock = deps.clock ?? systemClock;
    this.holder = deps.holder ?? `${process.pid}@${hostname()}`;
    this.redactor = deps.redactor ?? new Redactor().addFromEnv(process.env);
  }

  /** Now, as the ISO timestamp rows carry. */
  now(): string {
    return iso(this.clock.now());
  }

  // ── lookups ────────────────────────────────────────────────────────────────────────────────

  requirePlan(planId: string): PlanRow {
    const p = this.store.getPlan(planId);
    if (!p) throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId });
    return p;
  }

  requireStep(stepId: string, field = "step_id"): StepRow {
    const s = this.store.getStep(stepId);
    if (!s)
      throw new RatchetError(ErrorCode.StepNotFound, `step ${stepId} not found (field \`${field}\`)`, {
        stepId,
        field,
      });
    return s;
  }

  requireOpenPlan(planId: string, doing: string): PlanRow {
    const p = this.requirePlan(planId);
    if (p.status !== PlanStatus.InProgress) {
      throw new RatchetError(ErrorCode.IllegalTransition, `plan ${planId} is ${p.status}: cannot ${doing}`, {
        planId,
        from: p.status,
        breaker: "soft",
      });
    }
    return p;
  }

  /**
   * {@link requireOpenPlan} when the caller needs only to know the plan is open: the same refusals,
   * reading the status alone.
   */
  checkOpenPlan(planId: string, doing: string): void {
    const status = this.store.planStatus(planId);
    if (status === undefined)
      throw new RatchetError(ErrorCode.PlanNotFound, `plan ${planId} not found`, { planId });
    if (status !== PlanStatus.InProgress) {
      throw new RatchetError(ErrorCode.IllegalTransition, `plan ${planId} is ${status}: cannot ${doing}`, {
        planId,
        from: status,
        breaker: "soft",
      });
    }
  }

  /**
   * The reads of a guarded step transition in one statement ({@link Store.stepForMove}), with the
   * refusals of `requireStep`, `refuseReviewStep` (naming `op`) and `checkOpenPlan`, in that order.
   * `rollup`: also read the roll-up's cheap exit, for a move out of the open states (complete, fail)
   * whose {@link rollUpPlan} is given the result.
   */
  stepToMove(stepId: string, op: string, doing: string, rollup: boolean): StepForMove {
    const r = this.store.stepForMove(stepId, rollup);
    if (r === undefined)
      throw new RatchetError(ErrorCode.StepNotFound, `step ${stepId} not found (field \`step_id\`)`, {
        stepId,
        field: "step_id",
      });
    const step = r.step;
    this.refuseReviewStep(step, op);
    const status = r.planStatus;
    if (status === undefined)
      throw new RatchetError(ErrorCode.PlanNotFound, `plan ${step.plan_id} not found`, {
        planId: step.plan_id,
      });
    if (status !== PlanStatus.InProgress) {
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `plan ${step.plan_id} is ${status}: cannot ${doing} ${step.step_id}`,
        { planId: step.plan_id, from: status, breaker: "soft" },
      );
    }
    return r;
  }

  refuseReviewStep(step: Pick<StepRow, "step_id" | "status" | "role">, doing: string): void {
    if (step.role === StepRole.Review) {
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `step ${step.step_id} is the review step: it is closed by the roll-up, never by ${doing}; drive ${step.step_id}.1 when a hand-off created it, or use \`ratchet plan review-close\``,
        { stepId: step.step_id, from: step.status, breaker: "soft" },
      );
    }
  }

  // ── primitives (call inside a transaction) ─────────────────────────────────────────────────

  moveStep(
    step: StepRow,
    to: StepStatus,
    patch: Partial<StepRow> = {},
    payload: Record<string, unknown> = {},
  ): StepRow {
    const next = this.writeMove(step, to, patch, payload);
    const moved = {} as Record<string, unknown>;
    for (const k in step) moved[k] = (step as unknown as Record<string, unknown>)[k];
    for (const k in next) moved[k] = (next as Record<string, unknown>)[k];
    return moved as unknown as StepRow;
  }

  /**
   * {@link moveStep} without building the moved row: the guarded move, its row update and its
   * event, returning the columns written (the caller's patch with the status and stamps).
   */
  writeMove(
    step: MoveStepRow,
    to: StepStatus,
    patch: Partial<StepRow> = {},
    payload: Record<string, unknown> = {},
  ): Partial<StepRow> {
    checkStepMove(step.step_id, step.status, to);
    const now = this.now();
    // Copied key by key: an object spread of the caller's patch took V8's slow path here.
    const next: Partial<StepRow> = {};
    for (const k in patch) (next as Record<string, unknown>)[k] = (patch as Record<string, unknown>)[k];
    next.status = to;
    next.updated_at = now;
    if (to === StepStatus.InProgress && !patch.started_at) next.started_at = now;
    if (to === StepStatus.Completed || to === StepStatus.Failed) {
      next.finished_at = now;
      next.lease_holder = null;
      next.lease_expires_at = null;
      const started = step.started_at ? Date.parse(step.started_at) : undefined;
      if (started !== undefined && next.duration_ms === undefined)
        next.duration_ms = Math.max(0, this.clock.now() - started);
    }
    this.store.updateStep(step.step_id, next);
    this.store.appendEvent({
      entityKind: "step",
      entityId: step.step_id,
      planId: step.plan_id,
      type: STEP_MOVE_EVENT[to] ?? LedgerEvent.StepReopened,
      payload: withMove(step.status, to, payload),
    });
    return next;
  }

  movePlan(plan: PlanRow, to: PlanStatus, payload: Record<string, unknown> = {}): void {
    checkPlanMove(plan.plan_id, plan.status, to);
    const now = this.now();
    this.store.updatePlan(plan.plan_id, {
      status: to,
      updated_at: now,
      ...(to !== PlanStatus.InProgress ? { finished_at: now } : {}),
    });
    // A closed plan holds no leases: the sweep only walks open plans.
    if (to !== PlanStatus.InProgress) this.store.releaseLeases(plan.plan_id);
    this.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: PLAN_MOVE_EVENT[to] ?? LedgerEvent.PlanReopened,
      payload: { from: plan.status, to, ...payload },
    });
  }

  /**
   * Re-opens a FAILED plan and its FAILED review step for the recovery path (a deviation under a
   * FAILED step of a FAILED plan, FL-019/FL-022): the plan goes back to IN_PROGRESS, the review to
   * `reviewTo` (PENDING, or NEEDS_REVIEW when the retry hangs under `<plan>-REVIEW.1`). The only
   * moves out of FAILED, each with its event; nothing else re-opens.
   */
  reopen(
    plan: PlanRow,
    review: StepRow | undefined,
    reviewTo: StepStatus,
    why: Record<string, unknown>,
  ): void {
    const now = this.now();
    if (review && review.status === StepStatus.Failed) {
      this.store.updateStep(review.step_id, {
        status: reviewTo,
        updated_at: now,
        finished_at: null,
        failure_reason: null,
      });
      this.store.appendEvent({
        entityKind: "step",
        entityId: review.step_id,
        planId: plan.plan_id,
        type: LedgerEvent.StepReopened,
        payload: { from: review.status, to: reviewTo, ...why },
      });
    }
    this.store.updatePlan(plan.plan_id, {
      status: PlanStatus.InProgress,
      updated_at: now,
      finished_at: null,
      ...(reviewTo === StepStatus.NeedsReview ? { review_state: "awaiting_agent" } : {}),
    });
    this.store.appendEvent({
      entityKind: "plan",
      entityId: plan.plan_id,
      planId: plan.plan_id,
      type: LedgerEvent.PlanReopened,
      payload: { from: plan.status, to: PlanStatus.InProgress, ...why },
    });
  }

  /**
   * The one log writer. Stores a log entry: whole when short, else head + marker + tail in the row
   * and the full text as a blob. `opts.display`: `raw` is already the display text (run-step cut
   * it once, with its footer): it is stored as given, and `opts.full` (the whole output, when it
   * was cut) is kept as the blob — one truncation stage, never two.
   */
  addLog(
    step: Pick<StepRow, "step_id" | "plan_id">,
    kind: string,
    raw: string,
    opts: { display?: boolean; full?: string } = {},
  ): void {
    const text = this.redactor.redact(raw);
    let shown = text;
    let blob: string | null = null;
    let bytes = utf8Length(text);
    if (opts.full !== undefined) {
      const full = this.redactor.redact(opts.full);
      blob = this.blobs.put(full);
      bytes = utf8Length(full);
    } else if (!opts.display && bytes > LOG_INLINE_MAX_BYTES) {
      shown = headTail(text, LOG_HEAD_BYTES, LOG_TAIL_BYTES).text;
      blob = this.blobs.put(text);
    }
    this.store.insertLog({
      step_id: step.step_id,
      plan_id: step.plan_id,
      at: this.now(),
      kind,
      text: shown,
      bytes,
      truncated: blob ? 1 : 0,
      blob,
    });
  }

  lease(seconds: number | undefined): {
    lease_holder: string;
    lease_expires_at: number;
    heartbeat_at: string;
  } {
    return {
      lease_holder: this.holder,
      lease_expires_at: this.clock.now() + (seconds ?? DEFAULT_LEASE_SECONDS) * 1000,
      heartbeat_at: this.now(),
    };
  }

  red(s: string | undefined): string | undefined {
    return s === undefined ? undefined : this.redactor.redact(s);
  }

  /** Runs the {@link onPlanClosing} hooks for a reviewed plan closing COMPLETED (in the caller's tx). */
  runPlanClosing(plan: PlanRow, review: StepRow): void {
    for (const hook of PLAN_CLOSING_HOOKS) {
      try {
        hook(this, plan, review);
      } catch (e) {
        this.addLog(review, "review", `[CLOSE HOOK] failed and was skipped: ${(e as Error).message}`);
      }
    }
  }

  /** Runs the roll-up for a plan after a non-review transition, inside the caller's transaction. */
  rollUpPlan(planId: string, known?: PlanRow | "open" | StepForMove): RollupReport {
    // `known` is the plan row the caller read in this same transaction (saves a lookup), or "open":
    // the caller checked in this transaction that the plan is IN_PROGRESS (`checkOpenPlan`), and
    // the row is read only when the cheap exit below does not apply; or the `stepToMove` read (with
    // `rollup`) of the step the caller just moved out of the open states: the plan was open, and
    // its cheap-exit reads, taken under the same write lock before the move, are the reads after
    // it (the moved step was the only row of the plan changed in between, and it is no longer open).
    const probe = known !== undefined && known !== "open" && "step" in known ? known : undefined;
    const known_ =
      known === undefined
        ? this.requirePlan(planId)
        : known === "open" || probe
          ? undefined
          : (known as PlanRow);
    const report: RollupReport = { plan_status: known_ ? known_.status : PlanStatus.InProgress };
    if (report.plan_status !== PlanStatus.InProgress) return report;
    // Cheap exit for the common case: regular work still open.
    const store = this.store;
    if (probe ? probe.othersOpen : store.hasOpenSteps(planId)) {
      const status = probe ? probe.reviewStatus : store.stepStatus(reviewStepId(planId));
      if (status !== undefined) report.review_status = status;
      return report;
    }
    const plan = known_ ?? this.requirePlan(planId);
    // The decision needs each step's place and state only; the review step's whole row is read
    // when the decision moves it.
    const steps = this.store.stepStatesOfPlan(planId);
    const reviewState = steps.find((s) => s.role === StepRole.Review);
    const decision = rollUp(steps, { planOpen: true, hasProject: hasReviewProject(plan) });
    if (!reviewState) return report;
    report.review_status = reviewState.status;
    if (decision.kind === "wait" || decision.kind === "closed") {
      if (reviewState.status === StepStatus.NeedsReview) {
        const child = steps.find((s) => s.role === StepRole.ReviewChild);
        Object.assign(report, {
          needs_agent_review: true,
          project: plan.project ?? undefined,
          review_step_id: reviewState.step_id,
          review_child_step_id: child?.step_id,
        });
      }
      return report;
    }
    const review = this.requireStep(reviewState.step_id);
    switch (decision.kind) {
      case "complete": {
        const reviewed = review.status === StepStatus.NeedsReview;
        const started = this.startIfPending(review);
        if (decision.recovered) {
          this.addLog(
            review,
            "review",
            `[REVIEW REOPENED] ${decision.recovered} failed and was recovered by its retries; review closed COMPLETED`,
          );
        }
        const skip = reviewed ? undefined : reviewSkipReason(plan);
        // Agent-published plans get the original's review-log line; Ratchet's own runs do not.
        if (skip && plan.kind === "plan") this.addLog(review, "review", `[REVIEW SKIPPED] ${skip}`);
        this.store.updatePlan(planId, {
          review_state: reviewed ? "reviewed" : "skipped",
          review_skip_reason: skip ?? null,
        });
        if (reviewed) this.runPlanClosing(plan, started);
        this.moveStep(started, StepStatus.Completed, { summary: "all steps completed" }, { by: "rollup" });
        this.movePlan(plan, PlanStatus.Completed, { by: "rollup" });
        return { plan_status: PlanStatus.Completed, review_status: StepStatus.Completed };
      }
      case "fail": {
        const reason = `unrecovered failed steps: ${decision.unrecovered.join(", ")}`;
        if (review.status === StepStatus.NeedsReview)
          this.store.updatePlan(planId, { review_state: "reviewed" });
        const started = this.startIfPending(review);
        this.moveStep(
          started,
          StepStatus.Failed,
          { failure_reason: reason },
          { by: "rollup", unrecovered: decision.unrecovered },
        );
        this.movePlan(plan, PlanStatus.Failed, { by: "rollup", reason, unrecovered: decision.unrecovered });
        return {
          plan_status: PlanStatus.Failed,
          review_status: StepStatus.Failed,
          unrecovered: decision.unrecovered,
        };
      }
      case "handoff": {
        this.moveStep(review, StepStatus.NeedsReview, {}, { by: "rollup", project: plan.project });
        const now = this.now();
        const childId = childStepId(review.step_id, 1);
        this.store.insertStep({
          ...blankStep(now),
          step_id: childId,
          plan_id: planId,
          parent_step_id: review.step_id,
          seq: 1,
          role: StepRole.ReviewChild,
          depth: review.depth + 1,
          title: `Agent review of plan ${planId} for project ${plan.project}`,
          type: StepType.SubAgent,
          status: StepStatus.Pending,
        });
        this.store.updatePlan(planId, {
          revision_count: plan.revision_count + 1,
          review_state: "awaiting_agent",
        });
        this.store.appendEvent({
          entityKind: "plan",
          entityId: planId,
          planId,
          type: LedgerEvent.PlanNeedsReview,
          payload: {
            project: plan.project,
            review_step_id: review.step_id,
            review_child_step_id: childId,
            revision_count: plan.revision_count + 1,
          },
        });
        return {
          plan_status: PlanStatus.InProgress,
          review_status: StepStatus.NeedsReview,
          needs_agent_review: true,
          project: plan.project ?? undefined,
          review_step_id: review.step_id,
          review_child_step_id: childId,
        };
      }
    }
  }

  /** The step moved to IN_PROGRESS when still PENDING (the roll-up or review-close closes it next). */
  startIfPending(step: StepRow, by = "rollup"): StepRow {
    return step.status === StepStatus.Pending ? this.moveStep(step, StepStatus.InProgress, {}, { by }) : step;
  }

  // ── step rows and run-step helpers ────────────────────────────────────────────────────────────

  newStepRow(
    planId: string,
    stepId: string,
    parent: string | null,
    seq: number,
    depth: number,
    s: StepSpecInput,
    now: string,
  ): StepRow {
    return {
      ...blankStep(now),
      step_id: stepId,
      plan_id: planId,
      parent_step_id: parent,
      seq,
      role: StepRole.Regular,
      depth,
      title: this.redactor.redact(s.title),
      description: this.red(s.description) ?? null,
      // Untyped until start/run gives it one (the original's bare-string steps).
      type: s.type ?? "",
      status: StepStatus.Pending,
    };
  }

  /** Whether the given log or a stored one carries run-step's `--- exit_code=` footer. */
  hasExitFooter(step: Pick<StepRow, "step_id">, logContext: string | undefined): boolean {
    if (logContext?.includes(EXIT_FOOTER)) return true;
    return this.store.logsOfStep(step.step_id).some((l) => l.text.includes(EXIT_FOOTER));
  }

  /** Whether a FAILED step is recovered by its deviation children (the roll-up's rule). */
  recovered(step: StepRow, steps: readonly StepRow[]): boolean {
    const children = new Map<string, StepRow[]>();
    for (const s of steps) {
      if (!s.parent_step_id) continue;
      const list = children.get(s.parent_step_id) ?? [];
      list.push(s);
      children.set(s.parent_step_id, list);
    }
    return isSound(step, children);
  }
}

/** An event payload `{from, to, ...extra}`, built key by key (no object spread on the hot path). */
function withMove(from: string, to: string, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { from, to };
  for (const k in extra) out[k] = extra[k];
  return out;
}

/** A step row with every optional column empty. */
export function blankStep(now: string): StepRow {
  return {
    step_id: "",
    plan_id: "",
    parent_step_id: null,
    seq: 0,
    role: StepRole.Regular,
    depth: 0,
    title: "",
    description: null,
    type: StepType.Thinking,
    status: StepStatus.Pending,
    summary: null,
    agent_input: null,
    agent_output: null,
    failure_reason: null,
    exit_code: null,
    tokens: 0,
    duration_ms: null,
    lease_holder: null,
    lease_expires_at: null,
    heartbeat_at: null,
    started_at: null,
    finished_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** The footer run-step appends to a command's output; a COMMAND step's log carrying it may complete. */
export const EXIT_FOOTER = "--- exit_code=";

/** The declared no-project marker of the original (`"project": "none"`). */
export const NO_PROJECT = "none";

/** Whether the plan's roll-up hands off to an agent review (a real registered project). */
export function hasReviewProject(plan: PlanRow): boolean {
  return plan.project !== null && plan.project !== NO_PROJECT;
}

/** Why a plan closing COMPLETED is not reviewed. */
export function reviewSkipReason(plan: PlanRow): string {
  if (plan.kind !== "plan") return `a ${plan.kind} plan closes on its own roll-up`;
  return plan.project === NO_PROJECT
    ? 'project "none": no state-graph review'
    : "no registered project: no state-graph review";
}

/** The top of the git work tree holding `dir` (found by walking up to `.git`), resolved. */
export function gitRoot(dir: string): string | undefined {
  let cur = resolve(dir);
  for (;;) {
    const dotgit = join(cur, ".git");
    if (existsSync(dotgit)) {
      try {
        return realpathSync(cur);
      } catch {
        return cur;
      }
    }
    const up = dirname(cur);
    if (up === cur) return undefined;
    cur = up;
  }
}
