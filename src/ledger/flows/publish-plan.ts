/** `publish-plan` (`ratchet plan publish`): Publish a plan (goal, steps) in one transaction; returns plan_id, step_ids (regular steps) and review_step_id. */
import { resolve } from "node:path";
import {
  arr,
  compactStamp,
  DEFAULT_MAX_REVISIONS,
  ErrorCode,
  type Infer,
  MAX_STEPS_PER_PLAN,
  MAX_TEXT_CHARS,
  MAX_TITLE_CHARS,
  num,
  obj,
  oneOf,
  opt,
  RatchetError,
  type Schema,
  str,
} from "../../core/index.js";
import type { headlineAtPublish } from "../../provenance/reasons/headline-publish.js";
import { recordPlanSession } from "../../provenance/words/session.js";
import type { StepRow } from "../../store/index.js";
import { blankStep, gitRoot, type LedgerCore, NO_PROJECT } from "../core.js";
import { LedgerEvent } from "../events.js";
import { defineFlow } from "../flow.js";
import { planIdFor, reviewStepId, topStepId } from "../ids.js";
import { id, refuse, SKILL_SOURCES, StepSpecInput, text } from "../inputs.js";
import { PlanStatus, StepRole, StepStatus, StepType } from "../states.js";

/** Any JSON value kept as given (the original's extension keys), at most MAX_TEXT_CHARS serialised. */
function jsonValue(description: string): Schema<unknown> {
  return {
    parse(v, path) {
      const size = JSON.stringify(v)?.length ?? 0;
      if (size > MAX_TEXT_CHARS)
        refuse(path, `must be at most ${MAX_TEXT_CHARS} characters as JSON (got ${size})`);
      return v;
    },
    json: () => ({ description }),
  };
}

const SkillSpec = obj({
  name: str({ min: 1, max: MAX_TITLE_CHARS, description: "skill name" }),
  source: oneOf(SKILL_SOURCES, "how the skill was activated"),
  reason: opt(text("why it was activated")),
});

const PublishFields = obj({
  goal: str({ min: 1, max: MAX_TEXT_CHARS, description: "what the plan achieves" }),
  prefix: opt(
    str({
      min: 1,
      max: 64,
      pattern: /^[a-z0-9-]+$/,
      description: "plan id prefix: the id becomes <prefix>-<YYYYMMDDHHMMSS> (default: a slug of the goal)",
    }),
  ),
  project: opt(id('registered project the plan belongs to, or "none" for an explicit no-project plan')),
  max_revisions: opt(num({ int: true, min: 0, max: 1000, description: "revision budget (default 5)" })),
  steps: arr(StepSpecInput, { min: 1, max: MAX_STEPS_PER_PLAN, description: "the plan's steps, in order" }),
  user_query: opt(text("the user's prompt, verbatim (stored on the plan)")),
  skills: opt(arr(SkillSpec, { max: 100, description: "skills active at publish (recorded with no step)" })),
  declared_targets: opt(jsonValue("impact preflight targets (stored as given)")),
  expectations: opt(jsonValue("expected outcomes (stored as given)")),
  headline_notes: opt(jsonValue("headline notes (stored as given)")),
});

/** Publish input; a missing goal or steps is named with the original's wording. */
export const PublishInput: Schema<Infer<typeof PublishFields>> & { shape: typeof PublishFields.shape } = {
  shape: PublishFields.shape,
  parse(v, path) {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      for (const f of ["goal", "steps"]) {
        const got = (v as Record<string, unknown>)[f];
        if (got === undefined || got === null)
          refuse(
            f,
            `is required (missing required field: '${f}'; required: goal, steps; prefix recommended)`,
          );
      }
    }
    return PublishFields.parse(v, path);
  },
  json: () => PublishFields.json(),
};
export type PublishInput = Infer<typeof PublishFields>;

/** The headline code, loaded by the flow only for a plan that declares targets (not by every write). */
let headlineFn: typeof headlineAtPublish | undefined;

/** Loads the headline code; a publish with `declared_targets` needs it (the flow's `run` calls it). */
export async function loadHeadline(): Promise<void> {
  headlineFn ??= (await import("../../provenance/reasons/headline-publish.js")).headlineAtPublish;
}

export function publishPlan(l: LedgerCore, input: PublishInput, ctx: { cwd?: string; kind?: string } = {}) {
  const cwd = resolve(ctx.cwd ?? process.cwd());
  const kind = ctx.kind ?? "plan";
  // Only agent-published plans join a project by location; a run recorded by Ratchet itself
  // (workflow_run, …) closes on its own roll-up. The folder walk happens before the transaction.
  const repo = kind === "plan" ? gitRoot(cwd) : undefined;
  return l.store.tx(() => {
    let project: string | null = null;
    let projectSource: string | null = null;
    const notices: string[] = [];
    const here = repo ? l.store.projectForRepo(repo) : undefined;
    if (input.project === NO_PROJECT) {
      project = NO_PROJECT;
      projectSource = "declared";
      notices.push(`project "none": an explicit no-project plan, closed with no state-graph review`);
    } else if (input.project !== undefined) {
      if (!l.store.getProject(input.project)) {
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
    const now = l.now();
    // Redacted before slugging: a secret in the goal must not end up in every id of the plan.
    const goal = l.redactor.redact(input.goal);
    const stamp = compactStamp(l.clock.now());
    const base = input.prefix !== undefined ? `${input.prefix}-${stamp}` : planIdFor(goal, stamp);
    let planId = base;
    for (let n = 2; l.store.getPlan(planId); n++) planId = `${base}-${n}`;
    const extensions: Record<string, unknown> = {};
    for (const k of ["declared_targets", "expectations", "headline_notes"] as const)
      if (input[k] !== undefined) extensions[k] = input[k];
    const maxRevisions = input.max_revisions ?? DEFAULT_MAX_REVISIONS;
    l.store.insertPlan({
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
      user_query: l.red(input.user_query) ?? null,
      extensions: Object.keys(extensions).length ? l.redactor.redact(JSON.stringify(extensions)) : null,
    });
    const sessionId = recordPlanSession(l, planId, project);
    const steps = input.steps.map((s, i) => {
      const row = l.newStepRow(planId, topStepId(planId, i), null, i + 1, 0, s, now);
      l.store.insertStep(row);
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
    l.store.insertStep(review);
    const skills = (input.skills ?? []).map((sk) => {
      const skillId = l.store.insertSkill({
        plan_id: planId,
        step_id: null,
        name: sk.name,
        source: sk.source,
        reason: l.red(sk.reason) ?? "active at publish",
        created_at: now,
      });
      return { skill_id: skillId, name: sk.name, source: sk.source };
    });
    l.store.appendEvent({
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
    // Provenance (spec §5.1): the headline of a plan with a project and declared_targets.
    if (extensions.declared_targets !== undefined && !headlineFn)
      throw new RatchetError(ErrorCode.Internal, "publish with declared_targets: call loadHeadline() first");
    const headline = headlineFn?.(l, { plan_id: planId, project, extensions, at: now });
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
      session_id: sessionId,
      ...(skills.length ? { skills_recorded: skills.length, skills } : {}),
      ...(Array.isArray(input.expectations) ? { expectations_recorded: input.expectations.length } : {}),
      ...(notices.length ? { notice: notices.join("; ") } : {}),
      ...(headline ? { headline } : {}),
    };
  });
}

export const PUBLISH_PLAN_FLOW = defineFlow({
  op: "publish-plan",
  command: ["plan", "publish"],
  summary:
    "Publish a plan (goal, steps) in one transaction; returns plan_id, step_ids (regular steps) and review_step_id.",
  input: PublishInput,
  example: {
    goal: "Fix the login bug",
    prefix: "fix-login",
    steps: [
      "Read the code",
      { description: "Write the fix", type: "CODE" },
      { title: "Run the tests", type: "COMMAND" },
    ],
  },
  refusals: [
    { code: ErrorCode.ProjectNotFound, exit: 3, when: "`project` names no registered project" },
    {
      code: ErrorCode.InvalidValue,
      exit: 2,
      when: "the declared project is not the current folder's (`pick one`); malformed `declared_targets`/`headline_notes`, a note citing no existing reason",
    },
    {
      code: ErrorCode.HeadlineBlocked,
      exit: 4,
      when: "an unanswered headline finding on a human constraint declared `block: true`",
    },
  ],
  result: [
    "plan_id",
    "goal",
    "project",
    "project_source",
    "status",
    "max_revisions",
    "step_ids",
    "steps",
    "review_step_id",
    "session_id",
    "skills_recorded?",
    "skills?",
    "expectations_recorded?",
    "notice?",
    "headline?",
  ],
  run: async (l, i, c) => {
    if (i.declared_targets !== undefined) await loadHeadline();
    const r = publishPlan(l, i, { ...(c.cwd ? { cwd: c.cwd } : {}) });
    // The state-graph baseline of a registered-project plan, after the transaction (never fails publish).
    if (!r.project || !l.store.getProject(r.project)?.repo_path) return r;
    const { baselineAtPublish } = await import("../../provenance/nodes/index.js");
    const base = await baselineAtPublish(l.store, r);
    return base?.notice ? { ...r, notice: r.notice ? `${r.notice}; ${base.notice}` : base.notice } : r;
  },
});
