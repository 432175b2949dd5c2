/**
 * The ledger's write flows. Each flow validates its input, then runs in ONE store transaction
 * (`BEGIN IMMEDIATE`) that changes the rows, appends an event per change, and — after every
 * non-review step transition — runs the deterministic roll-up, so exactly one writer can perform
 * the review hand-off. A refused flow throws a typed error and writes nothing.
 */
import { existsSync, realpathSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  type Clock,
  compactStamp,
  DEFAULT_LEASE_SECONDS,
  DEFAULT_MAX_REVISIONS,
  ErrorCode,
  headTail,
  iso,
  LOG_HEAD_BYTES,
  LOG_INLINE_MAX_BYTES,
  LOG_TAIL_BYTES,
  MAX_DEPTH,
  RatchetError,
  Redactor,
  systemClock,
  utf8Length,
} from "../core/index.js";
import type { BlobStore, PlanRow, StepRow, Store } from "../store/index.js";
import { LedgerEvent, PLAN_MOVE_EVENT, STEP_MOVE_EVENT } from "./events.js";
import { childStepId, planIdFor, reviewStepId, topStepId } from "./ids.js";
import type {
  AbandonInput,
  CompleteInput,
  DeviateInput,
  FailInput,
  FinishInput,
  HeartbeatInput,
  LogInput,
  MetricInput,
  PublishInput,
  RaiseBudgetInput,
  RecordSkillInput,
  ReviewCloseInput,
  StartInput,
  StepSpecInput,
  SweepInput,
} from "./inputs.js";
import { isSound, rollUp } from "./rollup.js";
import { checkPlanMove, checkStepMove, PlanStatus, StepRole, StepStatus, StepType } from "./states.js";

export interface LedgerDeps {
  store: Store;
  blobs: BlobStore;
  clock?: Clock;
  /** Who holds leases taken by this process (default `<pid>@<host>`). */
  holder?: string;
  /** Masks secrets in every text the ledger stores (default: from the process environment). */
  redactor?: Redactor;
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

export class Ledger {
  readonly store: Store;
  readonly blobs: BlobStore;
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

  #now(): string {
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

  #requireOpenPlan(planId: string, doing: string): PlanRow {
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

  #refuseReviewStep(step: StepRow, doing: string): void {
    if (step.role === StepRole.Review) {
      throw new RatchetError(
        ErrorCode.IllegalTransition,
        `step ${step.step_id} is the review step: it is closed by the roll-up, never by ${doing}; drive ${step.step_id}.1 when a hand-off created it, or use \`ratchet plan review-close\``,
        { stepId: step.step_id, from: step.status, breaker: "soft" },
      );
    }
  }

  // ── primitives (call inside a transaction) ─────────────────────────────────────────────────

  #moveStep(
    step: StepRow,
    to: StepStatus,
    patch: Partial<StepRow> = {},
    payload: Record<string, unknown> = {},
  ): StepRow {
    checkStepMove(step.step_id, step.status, to);
    const now = this.#now();
    const next: Partial<StepRow> = { ...patch, status: to, updated_at: now };
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
      payload: { from: step.status, to, ...payload },
    });
    return { ...step, ...next } as StepRow;
  }

  #movePlan(plan: PlanRow, to: PlanStatus, payload: Record<string, unknown> = {}): void {
    checkPlanMove(plan.plan_id, plan.status, to);
    const now = this.#now();
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
  #reopen(
    plan: PlanRow,
    review: StepRow | undefined,
    reviewTo: StepStatus,
    why: Record<string, unknown>,
  ): void {
    const now = this.#now();
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

  /** Stores a log entry: whole when short, else head + marker + tail in the row and the full text as a blob. */
  addLog(step: StepRow, kind: string, raw: string): void {
    const text = this.redactor.redact(raw);
    const bytes = utf8Length(text);
    let shown = text;
    let blob: string | null = null;
    let truncated = 0;
    if (bytes > LOG_INLINE_MAX_BYTES) {
      shown = headTail(text, LOG_HEAD_BYTES, LOG_TAIL_BYTES).text;
      blob = this.blobs.put(text);
      truncated = 1;
    }
    this.store.insertLog({
      step_id: step.step_id,
      plan_id: step.plan_id,
      at: this.#now(),
      kind,
      text: shown,
      bytes,
      truncated,
      blob,
    });
  }

  #lease(seconds: number | undefined): {
    lease_holder: string;
    lease_expires_at: number;
    heartbeat_at: string;
  } {
    return {
      lease_holder: this.holder,
      lease_expires_at: this.clock.now() + (seconds ?? DEFAULT_LEASE_SECONDS) * 1000,
      heartbeat_at: this.#now(),
    };
  }

  #red(s: string | undefined): string | undefined {
    return s === undefined ? undefined : this.redactor.redact(s);
  }

  /** Runs the roll-up for a plan after a non-review transition, inside the caller's transaction. */
  rollUpPlan(planId: string, known?: PlanRow): RollupReport {
    // `known` is the plan row the caller read in this same transaction (saves a lookup).
    const plan = known ?? this.requirePlan(planId);
    const reviewId = reviewStepId(planId);
    const report: RollupReport = { plan_status: plan.status };
    if (plan.status !== PlanStatus.InProgress) return report;
    // Cheap exit for the common case: regular work still open.
    if (this.store.countOpenSteps(planId) > 0) {
      const review = this.store.getStep(reviewId);
      if (review) report.review_status = review.status;
      return report;
    }
    const steps = this.store.stepsOfPlan(planId);
    const review = steps.find((s) => s.role === StepRole.Review);
    const decision = rollUp(steps, { planOpen: true, hasProject: hasReviewProject(plan) });
    if (!review) return report;
    report.review_status = review.status;
    switch (decision.kind) {
      case "wait":
      case "closed":
        if (review.status === StepStatus.NeedsReview) {
          const child = steps.find((s) => s.role === StepRole.ReviewChild);
          Object.assign(report, {
            needs_agent_review: true,
            project: plan.project ?? undefined,
            review_step_id: review.step_id,
            review_child_step_id: child?.step_id,
          });
        }
        return report;
      case "complete": {
        const reviewed = review.status === StepStatus.NeedsReview;
        const started = this.#startReviewIfPending(review);
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
        this.#moveStep(started, StepStatus.Completed, { summary: "all steps completed" }, { by: "rollup" });
        this.#movePlan(plan, PlanStatus.Completed, { by: "rollup" });
        return { plan_status: PlanStatus.Completed, review_status: StepStatus.Completed };
      }
      case "fail": {
        const reason = `unrecovered failed steps: ${decision.unrecovered.join(", ")}`;
        if (review.status === StepStatus.NeedsReview)
          this.store.updatePlan(planId, { review_state: "reviewed" });
        const started = this.#startReviewIfPending(review);
        this.#moveStep(
          started,
          StepStatus.Failed,
          { failure_reason: reason },
          { by: "rollup", unrecovered: decision.unrecovered },
        );
        this.#movePlan(plan, PlanStatus.Failed, { by: "rollup", reason, unrecovered: decision.unrecovered });
        return {
          plan_status: PlanStatus.Failed,
          review_status: StepStatus.Failed,
          unrecovered: decision.unrecovered,
        };
      }
      case "handoff": {
        this.#moveStep(review, StepStatus.NeedsReview, {}, { by: "rollup", project: plan.project });
        const now = this.#now();
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
          type: "plan.needs_review",
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

  /** The review step moved to IN_PROGRESS when still PENDING (the roll-up closes it next). */
  #startReviewIfPending(review: StepRow, by = "rollup"): StepRow {
    return review.status === StepStatus.Pending
      ? this.#moveStep(review, StepStatus.InProgress, {}, { by })
      : review;
  }

  // ── write flows ────────────────────────────────────────────────────────────────────────────

  publish(input: PublishInput, ctx: { cwd?: string; kind?: string } = {}) {
    const cwd = resolve(ctx.cwd ?? process.cwd());
    const kind = ctx.kind ?? "plan";
    // Only agent-published plans join a project by location; a run recorded by Ratchet itself
    // (workflow_run, …) closes on its own roll-up. The folder walk happens before the transaction.
    const repo = kind === "plan" ? gitRoot(cwd) : undefined;
    return this.store.tx(() => {
      let project: string | null = null;
      let projectSource: string | null = null;
      const notices: string[] = [];
      const here = repo ? this.store.projectForRepo(repo) : undefined;
      if (input.project === NO_PROJECT) {
        project = NO_PROJECT;
        projectSource = "declared";
        notices.push(`project "none": an explicit no-project plan, closed with no state-graph review`);
      } else if (input.project !== undefined) {
        if (!this.store.getProject(input.project)) {
          throw new RatchetError(
            ErrorCode.ProjectNotFound,
            `field \`project\`: project ${input.project} is not registered (run \`ratchet project add ${input.project}\`)`,
            { field: "project" },
          );
        }
        if (here && here.name !== input.project) {
          throw new RatchetError(
            ErrorCode.InvalidValue,
            `field \`project\`: declared ${input.project} but the current folder belongs to project ${here.name}: pick one (declare ${here.name}, or publish from ${input.project}'s folder)`,
            { field: "project" },
          );
        }
        project = input.project;
        projectSource = "declared";
      } else if (here) {
        project = here.name;
        projectSource = "cwd";
      } else if (kind === "plan") {
        notices.push(
          `plan not attributed to a project (none declared, and ${repo ? `repo ${repo} is not registered` : "the current folder is in no git repo"}): it closes with no agent review`,
        );
      }
      const now = this.#now();
      // Redacted before slugging: a secret in the goal must not end up in every id of the plan.
      const goal = this.redactor.redact(input.goal);
      const stamp = compactStamp(this.clock.now());
      const base = input.prefix !== undefined ? `${input.prefix}-${stamp}` : planIdFor(goal, stamp);
      let planId = base;
      for (let n = 2; this.store.getPlan(planId); n++) planId = `${base}-${n}`;
      const extensions: Record<string, unknown> = {};
      for (const k of ["declared_targets", "expectations", "headline_notes"] as const)
        if (input[k] !== undefined) extensions[k] = input[k];
      const maxRevisions = input.max_revisions ?? DEFAULT_MAX_REVISIONS;
      this.store.insertPlan({
        plan_id: planId,
        goal,
        kind,
        project,
        project_source: projectSource,
        status: PlanStatus.InProgress,
        revision_count: 0,
        max_revisions: maxRevisions,
        source_cwd: cwd,
        created_at: now,
        updated_at: now,
        finished_at: null,
        user_query: this.#red(input.user_query) ?? null,
        extensions: Object.keys(extensions).length ? this.redactor.redact(JSON.stringify(extensions)) : null,
      });
      const steps = input.steps.map((s, i) => {
        const row = this.#newStepRow(planId, topStepId(planId, i), null, i + 1, 0, s, now);
        this.store.insertStep(row);
        return row;
      });
      const review: StepRow = {
        ...blankStep(now),
        step_id: reviewStepId(planId),
        plan_id: planId,
        parent_step_id: null,
        seq: steps.length + 1,
        role: StepRole.Review,
        depth: 0,
        title: "Review and close the plan",
        type: StepType.SubAgent,
        status: StepStatus.Pending,
      };
      this.store.insertStep(review);
      const skills = (input.skills ?? []).map((sk) => {
        const skillId = this.store.insertSkill({
          plan_id: planId,
          step_id: null,
          name: sk.name,
          source: sk.source,
          reason: this.#red(sk.reason) ?? "active at publish",
          created_at: now,
        });
        return { skill_id: skillId, name: sk.name, source: sk.source };
      });
      this.store.appendEvent({
        entityKind: "plan",
        entityId: planId,
        planId,
        type: LedgerEvent.PlanPublished,
        payload: {
          goal,
          project,
          steps: steps.length,
          kind,
          ...(skills.length ? { skills: skills.length } : {}),
        },
      });
      return {
        plan_id: planId,
        goal: input.goal,
        project,
        project_source: projectSource,
        status: PlanStatus.InProgress,
        max_revisions: maxRevisions,
        /** Regular steps only (the original's shape); the review step is `review_step_id`. */
        step_ids: steps.map((s) => s.step_id),
        steps: [...steps, review].map((s) => ({
          step_id: s.step_id,
          title: s.title,
          type: s.type || null,
          status: s.status,
        })),
        review_step_id: review.step_id,
        ...(skills.length ? { skills_recorded: skills.length, skills } : {}),
        ...(Array.isArray(input.expectations) ? { expectations_recorded: input.expectations.length } : {}),
        ...(notices.length ? { notice: notices.join("; ") } : {}),
      };
    });
  }

  #newStepRow(
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
      description: this.#red(s.description) ?? null,
      // Untyped until start/run gives it one (the original's bare-string steps).
      type: s.type ?? "",
      status: StepStatus.Pending,
    };
  }

  start(input: StartInput) {
    return this.store.tx(() => {
      const step = this.requireStep(input.step_id);
      this.#refuseReviewStep(step, "start-step");
      this.#requireOpenPlan(step.plan_id, `start step ${step.step_id}`);
      if ((input.type ?? step.type) === StepType.Command) {
        throw new RatchetError(
          ErrorCode.CompleteOnCommand,
          `step ${step.step_id} is a COMMAND step: shell work starts through run-step (\`ratchet step run\`, scripts/run-step.sh), which captures the output and the true exit code; nothing written`,
          { stepId: step.step_id },
        );
      }
      const moved = this.#moveStep(
        step,
        StepStatus.InProgress,
        {
          ...(input.type ? { type: input.type } : {}),
          agent_input: this.#red(input.agent_input) ?? step.agent_input,
          ...this.#lease(input.lease_seconds),
        },
        { lease_holder: this.holder },
      );
      if (input.log_context) this.addLog(moved, "start", input.log_context);
      return {
        step_id: step.step_id,
        plan_id: step.plan_id,
        status: moved.status,
        type: moved.type,
        lease_holder: moved.lease_holder,
        lease_expires_at: iso(moved.lease_expires_at ?? 0),
      };
    });
  }

  /** Starts a step for `run-step`: PENDING → IN_PROGRESS, or renews the lease of an IN_PROGRESS one. */
  startForRun(stepId: string, type: string, command: string, leaseSeconds?: number) {
    return this.store.tx(() => {
      const step = this.requireStep(stepId);
      this.#refuseReviewStep(step, "run-step");
      this.#requireOpenPlan(step.plan_id, `run step ${step.step_id}`);
      let moved: StepRow;
      if (step.status === StepStatus.InProgress) {
        const lease = this.#lease(leaseSeconds);
        this.store.updateStep(step.step_id, { type, ...lease });
        this.store.appendEvent({
          entityKind: "step",
          entityId: step.step_id,
          planId: step.plan_id,
          type: "step.run_started",
          payload: { resumed: true },
        });
        moved = { ...step, type, ...lease };
      } else {
        moved = this.#moveStep(
          step,
          StepStatus.InProgress,
          { type, ...this.#lease(leaseSeconds) },
          { via: "run-step" },
        );
      }
      this.addLog(moved, "start", `[run-step] kickoff ${this.#now()}\n$ ${command}`);
      return moved;
    });
  }

  complete(
    input: CompleteInput,
    opts: { viaRun?: boolean; exitCode?: number; log?: { kind: string; text: string; full?: string } } = {},
  ) {
    return this.store.tx(() => {
      const step = this.requireStep(input.step_id);
      this.#refuseReviewStep(step, "complete-step");
      const plan = this.#requireOpenPlan(step.plan_id, `complete step ${step.step_id}`);
      if (step.type === StepType.Command && !opts.viaRun && !this.#hasExitFooter(step, input.log_context)) {
        throw new RatchetError(
          ErrorCode.CompleteOnCommand,
          `step ${step.step_id} is a COMMAND step: shell work completes through run-step (\`ratchet step run\`; it captures the output and the true exit code), or give a log_context carrying its \`${EXIT_FOOTER}N\` footer`,
          { stepId: step.step_id },
        );
      }
      checkStepMove(step.step_id, step.status, StepStatus.Completed);
      if (input.log_context) this.addLog(step, "complete", input.log_context);
      if (opts.log) this.#addRunLog(step, opts.log);
      const moved = this.#moveStep(step, StepStatus.Completed, {
        summary: this.#red(input.summary) ?? step.summary,
        agent_output: this.#red(input.agent_output) ?? step.agent_output,
        ...(opts.exitCode !== undefined ? { exit_code: opts.exitCode } : {}),
      });
      const rollup = this.rollUpPlan(step.plan_id, plan);
      return { step_id: step.step_id, plan_id: step.plan_id, status: moved.status, ...rollup };
    });
  }

  fail(
    input: FailInput,
    opts: { exitCode?: number; log?: { kind: string; text: string; full?: string } } = {},
  ) {
    return this.store.tx(() => {
      const step = this.requireStep(input.step_id);
      this.#refuseReviewStep(step, "fail-step");
      const plan = this.#requireOpenPlan(step.plan_id, `fail step ${step.step_id}`);
      checkStepMove(step.step_id, step.status, StepStatus.Failed);
      if (input.log_context) this.addLog(step, "fail", input.log_context);
      if (opts.log) this.#addRunLog(step, opts.log);
      const moved = this.#moveStep(
        step,
        StepStatus.Failed,
        {
          failure_reason: this.#red(input.reason) ?? null,
          ...(opts.exitCode !== undefined ? { exit_code: opts.exitCode } : {}),
        },
        input.reason ? { reason: this.#red(input.reason) } : {},
      );
      const rollup = this.rollUpPlan(step.plan_id, plan);
      return {
        step_id: step.step_id,
        plan_id: step.plan_id,
        status: moved.status,
        reason: moved.failure_reason,
        ...rollup,
      };
    });
  }

  /** Whether the given log or a stored one carries run-step's `--- exit_code=` footer. */
  #hasExitFooter(step: StepRow, logContext: string | undefined): boolean {
    if (logContext?.includes(EXIT_FOOTER)) return true;
    return this.store.logsOfStep(step.step_id).some((l) => l.text.includes(EXIT_FOOTER));
  }

  /** A run-step log: the display text was cut once already; the full output goes to a blob when cut. */
  #addRunLog(step: StepRow, log: { kind: string; text: string; full?: string }): void {
    const text = this.redactor.redact(log.text);
    let blob: string | null = null;
    let bytes = utf8Length(text);
    if (log.full !== undefined) {
      const full = this.redactor.redact(log.full);
      blob = this.blobs.put(full);
      bytes = utf8Length(full);
    }
    this.store.insertLog({
      step_id: step.step_id,
      plan_id: step.plan_id,
      at: this.#now(),
      kind: log.kind,
      text,
      bytes,
      truncated: blob ? 1 : 0,
      blob,
    });
  }

  log(input: LogInput) {
    return this.store.tx(() => {
      const step = this.requireStep(input.step_id);
      this.addLog(step, "log", input.text);
      this.store.appendEvent({
        entityKind: "step",
        entityId: step.step_id,
        planId: step.plan_id,
        type: "step.log_appended",
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

  heartbeat(input: HeartbeatInput) {
    return this.store.tx(() => {
      const step = this.requireStep(input.step_id);
      if (step.status !== StepStatus.InProgress) {
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `step ${step.step_id} is ${step.status}, not IN_PROGRESS: it holds no lease to renew`,
          {
            stepId: step.step_id,
            from: step.status,
            breaker: "soft",
          },
        );
      }
      const lease = this.#lease(input.lease_seconds);
      this.store.updateStep(step.step_id, lease);
      this.store.appendEvent({
        entityKind: "step",
        entityId: step.step_id,
        planId: step.plan_id,
        type: "step.heartbeat",
        payload: { lease_expires_at: iso(lease.lease_expires_at) },
      });
      return {
        step_id: step.step_id,
        plan_id: step.plan_id,
        status: step.status,
        lease_holder: lease.lease_holder,
        lease_expires_at: iso(lease.lease_expires_at),
      };
    });
  }

  deviate(input: DeviateInput) {
    return this.store.tx(() => {
      const parent = this.requireStep(input.parent_step_id, "parent_step_id");
      const found = this.requirePlan(parent.plan_id);
      // The recovery path (FL-019/FL-022): a FAILED step of a FAILED plan takes retries, which
      // re-open the plan; every other write to a closed plan is refused.
      const recovering =
        found.status === PlanStatus.Failed &&
        parent.status === StepStatus.Failed &&
        parent.role !== StepRole.Review;
      const plan = recovering
        ? found
        : this.#requireOpenPlan(parent.plan_id, `deviate under ${parent.step_id}`);
      if (parent.status === StepStatus.Completed) {
        throw new RatchetError(
          ErrorCode.SoftBreaker,
          `deviate rejected: step ${parent.step_id} is COMPLETED (immutable) (breaker=soft): attach the retry to the next non-terminal step or to the review step ${reviewStepId(plan.plan_id)}`,
          { stepId: parent.step_id, breaker: "soft", field: "parent_step_id" },
        );
      }
      const depth = parent.depth + 1;
      if (depth > MAX_DEPTH) {
        throw new RatchetError(
          ErrorCode.SoftBreaker,
          `deviation under ${parent.step_id} would reach depth ${depth} (limit ${MAX_DEPTH}): restructure the plan instead of nesting deeper`,
          { stepId: parent.step_id, breaker: "soft", depth },
        );
      }
      if (plan.revision_count >= plan.max_revisions) {
        throw new RatchetError(
          ErrorCode.RevisionBudget,
          `plan ${plan.plan_id} used its revision budget (${plan.revision_count}/${plan.max_revisions}): raise it with \`ratchet plan raise-budget\` and a reason`,
          {
            planId: plan.plan_id,
            breaker: "hard",
            revision_count: plan.revision_count,
            max_revisions: plan.max_revisions,
          },
        );
      }
      if (recovering) {
        const review = this.store.getStep(reviewStepId(plan.plan_id));
        this.#reopen(
          plan,
          review,
          parent.role === StepRole.ReviewChild ? StepStatus.NeedsReview : StepStatus.Pending,
          { by: "deviate", parent_step_id: parent.step_id },
        );
      }
      const now = this.#now();
      const existing = this.store.childrenOf(parent.step_id);
      let seq = existing.reduce((m, s) => Math.max(m, s.seq), 0);
      // `<plan>-REVIEW.1` is reserved for the tracked child of the hand-off.
      if (parent.role === StepRole.Review) seq = Math.max(seq, 1);
      const ids: string[] = [];
      for (const s of input.sub_steps) {
        seq++;
        const row = this.#newStepRow(
          plan.plan_id,
          childStepId(parent.step_id, seq),
          parent.step_id,
          seq,
          depth,
          s,
          now,
        );
        this.store.insertStep(row);
        ids.push(row.step_id);
      }
      const revision = plan.revision_count + 1;
      this.store.updatePlan(plan.plan_id, { revision_count: revision });
      const deviationId = this.store.insertDeviation({
        plan_id: plan.plan_id,
        kind: "deviate",
        parent_step_id: parent.step_id,
        justification: this.redactor.redact(input.justification),
        sub_step_ids: JSON.stringify(ids),
        old_max: null,
        new_max: null,
        created_at: now,
      });
      this.store.appendEvent({
        entityKind: "plan",
        entityId: plan.plan_id,
        planId: plan.plan_id,
        type: LedgerEvent.PlanDeviated,
        payload: {
          deviation_id: deviationId,
          parent_step_id: parent.step_id,
          sub_step_ids: ids,
          revision_count: revision,
        },
      });
      return {
        accepted: true,
        plan_id: plan.plan_id,
        parent_step_id: parent.step_id,
        sub_step_ids: ids,
        /** The original's name for `sub_step_ids`. */
        new_step_ids: ids,
        justification_logged: true,
        ...(recovering ? { reopened: true } : {}),
        depth,
        revision_count: revision,
        max_revisions: plan.max_revisions,
        deviation_id: deviationId,
      };
    });
  }

  recordSkill(input: RecordSkillInput) {
    return this.store.tx(() => {
      const plan = this.requirePlan(input.plan_id);
      if (input.step_id !== undefined) {
        const step = this.requireStep(input.step_id);
        if (step.plan_id !== plan.plan_id) {
          throw new RatchetError(
            ErrorCode.InvalidValue,
            `field \`step_id\`: step ${step.step_id} belongs to plan ${step.plan_id}, not ${plan.plan_id}`,
            { field: "step_id" },
          );
        }
      }
      const id = this.store.insertSkill({
        plan_id: plan.plan_id,
        step_id: input.step_id ?? null,
        name: input.name,
        source: input.source,
        reason: this.#red(input.reason) ?? null,
        created_at: this.#now(),
      });
      this.store.appendEvent({
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

  /** The `record-metric` op: a metric needs a project (given, or its plan's); `"none"` is none. */
  recordMetric(input: MetricInput) {
    return this.store.tx(() => this.recordMetricInTx(input, { requireProject: true }));
  }

  /** Records a metric inside the caller's transaction (run-step capture keeps a plan with no project). */
  recordMetricInTx(input: MetricInput, opts: { requireProject?: boolean } = {}) {
    // Like publish: a metric names only a registered project (exit 3, nothing written).
    const given = input.project === NO_PROJECT ? undefined : input.project;
    if (given !== undefined && !this.store.getProject(given))
      throw new RatchetError(
        ErrorCode.ProjectNotFound,
        `field \`project\`: project ${input.project} is not registered (run \`ratchet project add ${input.project}\`)`,
        { field: "project" },
      );
    let planId = input.plan_id;
    if (input.step_id !== undefined) {
      const step = this.requireStep(input.step_id);
      if (planId !== undefined && step.plan_id !== planId) {
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `field \`step_id\`: step ${step.step_id} belongs to plan ${step.plan_id}, not ${planId}`,
          { field: "step_id" },
        );
      }
      planId = step.plan_id;
    }
    const plan = planId !== undefined ? this.requirePlan(planId) : undefined;
    const fromPlan = plan?.project === NO_PROJECT ? null : (plan?.project ?? null);
    const project = given ?? fromPlan;
    if (project === null && opts.requireProject) {
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `field \`project\`: 'project' is required — give one, or a plan_id/step_id whose plan has a project${plan ? ` (plan ${plan.plan_id} has none)` : ""}; nothing written`,
        { field: "project" },
      );
    }
    const source = input.source ?? (opts.requireProject ? "record-metric" : "run-step");
    const id = this.store.insertMetric({
      source,
      name: input.name,
      value: input.value,
      unit: input.unit ?? null,
      project,
      plan_id: plan?.plan_id ?? null,
      step_id: input.step_id ?? null,
      created_at: this.#now(),
    });
    this.store.appendEvent({
      entityKind: "metric",
      entityId: String(id),
      planId: plan?.plan_id ?? null,
      type: LedgerEvent.MetricRecorded,
      payload: { name: input.name, value: input.value, unit: input.unit, project, step_id: input.step_id },
    });
    return {
      metric_id: id,
      name: input.name,
      value: input.value,
      unit: input.unit ?? null,
      project,
      plan_id: plan?.plan_id ?? null,
      step_id: input.step_id ?? null,
      source,
    };
  }

  raiseBudget(input: RaiseBudgetInput) {
    return this.store.tx(() => {
      const plan = this.#requireOpenPlan(input.plan_id, "raise its budget");
      if (input.new_max <= plan.max_revisions) {
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `field \`new_max\`: ${input.new_max} must be above the current ceiling ${plan.max_revisions}`,
          { field: "new_max" },
        );
      }
      const now = this.#now();
      const deviationId = this.store.insertDeviation({
        plan_id: plan.plan_id,
        kind: "raise_budget",
        parent_step_id: null,
        justification: this.redactor.redact(input.reason),
        sub_step_ids: null,
        old_max: plan.max_revisions,
        new_max: input.new_max,
        created_at: now,
      });
      this.store.updatePlan(plan.plan_id, { max_revisions: input.new_max });
      this.store.appendEvent({
        entityKind: "plan",
        entityId: plan.plan_id,
        planId: plan.plan_id,
        type: LedgerEvent.PlanBudgetRaised,
        payload: {
          deviation_id: deviationId,
          old_max: plan.max_revisions,
          new_max: input.new_max,
          reason: this.redactor.redact(input.reason),
        },
      });
      return {
        raised: true,
        plan_id: plan.plan_id,
        old_max: plan.max_revisions,
        new_max: input.new_max,
        revision_count: plan.revision_count,
        deviation_id: deviationId,
      };
    });
  }

  abandon(input: AbandonInput) {
    return this.store.tx(() => {
      const plan = this.#requireOpenPlan(input.plan_id, "abandon it");
      const started = this.store.stepsOfPlan(plan.plan_id).filter((s) => s.status !== StepStatus.Pending);
      if (started.length > 0) {
        throw new RatchetError(
          ErrorCode.SoftBreaker,
          `plan ${plan.plan_id} has started steps (${started.map((s) => `${s.step_id} ${s.status}`).join(", ")}): only a plan nobody started can be abandoned; fail its steps or finish it`,
          { planId: plan.plan_id, breaker: "soft" },
        );
      }
      const reason = this.redactor.redact(input.reason);
      const deviationId = this.store.insertDeviation({
        plan_id: plan.plan_id,
        kind: "abandon",
        parent_step_id: null,
        justification: `[ABANDONED] ${reason}`,
        sub_step_ids: null,
        old_max: null,
        new_max: null,
        created_at: this.#now(),
      });
      this.store.updatePlan(plan.plan_id, { abandon_reason: reason });
      this.#movePlan(plan, PlanStatus.Abandoned, { reason, deviation_id: deviationId });
      return {
        plan_id: plan.plan_id,
        status: PlanStatus.Abandoned,
        reason: input.reason,
        deviation_id: deviationId,
        revision_count: plan.revision_count,
      };
    });
  }

  finish(input: FinishInput) {
    return this.store.tx(() => {
      const plan = this.requirePlan(input.plan_id);
      if (plan.status === PlanStatus.Completed || plan.status === PlanStatus.Failed) {
        // The original's idempotent no-op: nothing written, the plan as it stands.
        const review = this.store.getStep(reviewStepId(plan.plan_id));
        return {
          ...plan,
          mode: "noop",
          plan_status: plan.status,
          completed_at: plan.finished_at,
          review_outcome: {
            reason: "review step already terminal (idempotent no-op)",
            review_status: review?.status ?? null,
          },
        };
      }
      if (plan.status !== PlanStatus.InProgress) {
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `plan ${plan.plan_id} is already ${plan.status}`,
          { planId: plan.plan_id, from: plan.status, breaker: "soft" },
        );
      }
      const steps = this.store.stepsOfPlan(plan.plan_id);
      const review = steps.find((s) => s.role === StepRole.Review);
      if (review?.status === StepStatus.NeedsReview) {
        const child = steps.find((s) => s.role === StepRole.ReviewChild);
        throw new RatchetError(
          ErrorCode.AwaitsReview,
          `plan ${plan.plan_id} is in NEEDS_REVIEW — it awaits its agent review: complete or fail ${child?.step_id ?? review.step_id} (drive it, or \`ratchet plan review-close\`); finish-plan cannot force it`,
          { planId: plan.plan_id, review_step_id: review.step_id, review_child_step_id: child?.step_id },
        );
      }
      const open = steps.filter(
        (s) =>
          s.role === StepRole.Regular && s.status !== StepStatus.Completed && s.status !== StepStatus.Failed,
      );
      if (review && open.length === 0) {
        const rollup = this.rollUpPlan(plan.plan_id);
        return { plan_id: plan.plan_id, mode: "rollup", status: rollup.plan_status, ...rollup };
      }
      // Legacy plan without a review row, or a force-finish of a partial plan: plain completion.
      this.#movePlan(plan, PlanStatus.Completed, {
        by: "finish",
        forced: open.length > 0,
        open_steps: open.map((s) => s.step_id),
      });
      return {
        plan_id: plan.plan_id,
        mode: review ? "forced" : "legacy",
        status: PlanStatus.Completed,
        plan_status: PlanStatus.Completed,
        open_steps: open.map((s) => s.step_id),
      };
    });
  }

  reviewClose(input: ReviewCloseInput) {
    return this.store.tx(() => {
      const found = this.requirePlan(input.plan_id);
      const steps = this.store.stepsOfPlan(found.plan_id);
      const review = steps.find((s) => s.role === StepRole.Review);
      const child = steps.find((s) => s.role === StepRole.ReviewChild);
      const childFailed = child?.status === StepStatus.Failed;
      const recovered = childFailed && child !== undefined && this.#recovered(child, steps);
      // FL-019: `pass` on a failed review counts only once `<plan>-REVIEW.1` is recovered.
      if (input.outcome === "pass" && childFailed && !recovered) {
        throw new RatchetError(
          ErrorCode.SoftBreaker,
          `plan ${found.plan_id}: ${child?.step_id} FAILED: recover it first (deviate under ${child?.step_id} and complete the retry), then pass the review`,
          { planId: found.plan_id, breaker: "soft" },
        );
      }
      const reopenFailed =
        input.outcome === "pass" && recovered && found.status === PlanStatus.Failed && review !== undefined;
      if (reopenFailed) this.#reopen(found, review, StepStatus.NeedsReview, { by: "review-close" });
      const plan = reopenFailed
        ? this.requirePlan(found.plan_id)
        : this.#requireOpenPlan(input.plan_id, "close its review");
      const current = reopenFailed ? this.requireStep(review.step_id) : review;
      if (!current || current.status !== StepStatus.NeedsReview) {
        throw new RatchetError(
          ErrorCode.IllegalTransition,
          `plan ${plan.plan_id}: review step is ${current?.status ?? "missing"}, not NEEDS_REVIEW; review-close only follows a needs_agent_review hand-off`,
          { planId: plan.plan_id, from: current?.status, to: "COMPLETED", breaker: "soft" },
        );
      }
      const open = steps.filter(
        (s) =>
          s.role === StepRole.Regular && s.status !== StepStatus.Completed && s.status !== StepStatus.Failed,
      );
      if (input.outcome === "pass" && open.length > 0) {
        throw new RatchetError(
          ErrorCode.SoftBreaker,
          `plan ${plan.plan_id} still has open steps (${open.map((s) => `${s.step_id} ${s.status}`).join(", ")}): close them before passing the review`,
          { planId: plan.plan_id, breaker: "soft" },
        );
      }
      const to = input.outcome === "pass" ? StepStatus.Completed : StepStatus.Failed;
      if (child && child.status !== StepStatus.Completed && child.status !== StepStatus.Failed) {
        const c =
          child.status === StepStatus.Pending
            ? this.#moveStep(child, StepStatus.InProgress, {}, { by: "review-close" })
            : child;
        this.#moveStep(c, to, {}, { by: "review-close" });
      }
      if (input.log_context) this.addLog(current, "review", input.log_context);
      const tag = `[AGENT-REVIEW ${input.outcome === "pass" ? "PASS" : "FAIL"}${recovered ? " after recovery" : ""}]`;
      this.addLog(current, "review", `${tag} ${input.summary ?? ""}`.trimEnd());
      this.store.updatePlan(plan.plan_id, { review_state: "reviewed" });
      this.#moveStep(
        current,
        to,
        {
          summary: this.#red(input.summary) ?? null,
          ...(to === StepStatus.Failed
            ? { failure_reason: this.#red(input.summary) ?? "review failed" }
            : {}),
        },
        { by: "review-close", outcome: input.outcome },
      );
      this.#movePlan(plan, input.outcome === "pass" ? PlanStatus.Completed : PlanStatus.Failed, {
        by: "review-close",
        outcome: input.outcome,
      });
      return {
        plan_id: plan.plan_id,
        outcome: input.outcome,
        status: input.outcome === "pass" ? PlanStatus.Completed : PlanStatus.Failed,
        review_step_id: current.step_id,
        review_child_step_id: child?.step_id,
        ...(recovered ? { after_recovery: true } : {}),
      };
    });
  }

  /** Whether a FAILED step is recovered by its deviation children (the roll-up's rule). */
  #recovered(step: StepRow, steps: readonly StepRow[]): boolean {
    const children = new Map<string, StepRow[]>();
    for (const s of steps) {
      if (!s.parent_step_id) continue;
      const list = children.get(s.parent_step_id) ?? [];
      list.push(s);
      children.set(s.parent_step_id, list);
    }
    return isSound(step, children);
  }

  /** Fails every IN_PROGRESS step whose lease expired, each in its own transaction with its roll-up. */
  sweep(input: SweepInput) {
    const nowMs = this.clock.now();
    if (input.plan_id !== undefined) this.requirePlan(input.plan_id);
    const expired = this.store.expiredLeases(nowMs, input.plan_id);
    const swept: Record<string, unknown>[] = [];
    for (const s of expired) {
      const r = this.store.tx(() => {
        const cur = this.store.getStep(s.step_id);
        if (
          !cur ||
          cur.status !== StepStatus.InProgress ||
          cur.lease_expires_at === null ||
          cur.lease_expires_at >= nowMs
        )
          return undefined;
        const plan = this.store.getPlan(cur.plan_id);
        const reason = `lease expired at ${iso(cur.lease_expires_at)} (held by ${cur.lease_holder ?? "unknown"}, last heartbeat ${cur.heartbeat_at ?? "never"}); failed by sweep`;
        if (plan?.status !== PlanStatus.InProgress) {
          // The plan was closed around the step (forced finish): just release the lease.
          this.store.updateStep(cur.step_id, { lease_holder: null, lease_expires_at: null });
          return undefined;
        }
        this.#moveStep(cur, StepStatus.Failed, { failure_reason: reason }, { by: "sweep", reason });
        const rollup = this.rollUpPlan(cur.plan_id);
        return {
          step_id: cur.step_id,
          plan_id: cur.plan_id,
          lease_holder: cur.lease_holder,
          expired_at: iso(cur.lease_expires_at),
          reason,
          ...rollup,
        };
      });
      if (r) swept.push(r);
    }
    return { swept, count: swept.length, now: iso(nowMs) };
  }
}

function blankStep(now: string): StepRow {
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
const EXIT_FOOTER = "--- exit_code=";

/** The declared no-project marker of the original (`"project": "none"`). */
export const NO_PROJECT = "none";

/** Whether the plan's roll-up hands off to an agent review (a real registered project). */
function hasReviewProject(plan: PlanRow): boolean {
  return plan.project !== null && plan.project !== NO_PROJECT;
}

/** Why a plan closing COMPLETED is not reviewed. */
function reviewSkipReason(plan: PlanRow): string {
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
