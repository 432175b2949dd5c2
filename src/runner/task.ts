/**
 * `runTask`: one task from spec to artifacts, as a sequence of small named steps:
 * {@link startTask} → {@link preflightStep} (repository checks) → snapshot of the source →
 * {@link prepareStep} (disposable worktree, command sandbox) → {@link preflightDodStep} (the DoD
 * must fail first) → {@link roundsStep} (round.ts: one tool loop, DoD on pristine protected
 * paths, score, keep-best) → {@link exportStep} (allowlist-checked patch) → worktree removed →
 * {@link verifyStep} (the DoD on a FRESH worktree holding only the patch decides "passed") →
 * {@link proveSourceUnchanged} → {@link applyStep} (complete-task mode) → {@link finish}.
 */

import { existsSync } from "node:fs";
import { ErrorCode, RatchetError } from "../core/index.js";
import { detectSandbox, type RunResult, type SandboxInfo } from "../exec/index.js";
import type { LoopTool } from "../model/index.js";
import { applyToSource } from "./apply.js";
import { type CommandSandbox, commandSandbox } from "./confine.js";
import type { DodRun } from "./dod.js";
import { normaliseDodOutput } from "./dod-normalise.js";
import { gitRun } from "./git.js";
import { TASK_MAX_TOKENS } from "./limits.js";
import { hashText, patchPaths, pathsOutside, rawDiffSettings, WorktreeView } from "./patch.js";
import { preflightDod, preflightRepo, Refusal, type StaticPreflight } from "./preflight.js";
import { type Best, type RoundContext, redactDod, runRound } from "./round.js";
import { scoreRound } from "./score.js";
import type { TaskSpec } from "./spec.js";
import {
  dodInfo,
  finish,
  holdsKnownSecret,
  hunkMarkdown,
  logDod,
  type RunTaskOptions,
  readContext,
  refuse,
  startTask,
  type TaskResult,
  type TaskRun,
  TaskStop,
} from "./task-run.js";
import { runnerTools } from "./tools.js";
import { type MadeProof, ProofWorktree, proofLeavesSourceAlone, verifyOnFreshWorktree } from "./verify.js";
import {
  compareSnapshots,
  type RepoLayout,
  readCopiedConfig,
  SHOW_REF_ARGS,
  type SnapshotReads,
  type SourceSnapshot,
  snapshotSource,
  startSnapshotReads,
  type Worktree,
  type WorktreeBase,
  worktreeBase,
} from "./worktree.js";

/** The reads started beside preflight (see {@link earlyReads}). */
interface EarlyReads {
  /** The snapshot's `show-ref --head`. */
  shown: Promise<RunResult>;
  /** The settings every worktree of the task copies. */
  copied: Promise<[string, string][]>;
  /** Resolves once both are over (never rejects). */
  settled(): Promise<void>;
}

/**
 * Starts the "before" snapshot's `show-ref` and the read of the copied settings beside
 * preflight's `rev-parse` (both only read the repository, and neither needs the layout).
 * Their answers are used only when preflight passes, i.e. cwd is a repository root with a
 * commit; `undefined` when cwd does not exist (preflight refuses without starting anything).
 */
function earlyReads(t: TaskRun): EarlyReads | undefined {
  if (!existsSync(t.spec.cwd)) return undefined;
  const shown = gitRun(SHOW_REF_ARGS, t.spec.cwd, t.runner);
  const copied = readCopiedConfig(t.spec.cwd, t.runner);
  return {
    shown,
    copied,
    settled: async () => {
      await Promise.all([shown.catch(() => undefined), copied.catch(() => undefined)]);
    },
  };
}

/** The worktree of the rounds and its command sandbox (disposed in `runTask`'s `finally`). */
interface Work {
  worktree: Worktree;
  sandbox: CommandSandbox | undefined;
}

type Confined = Work & { sandbox: CommandSandbox; view: WorktreeView };

/** Repository checks (no worktree, no model). A refusal ends the task. */
async function preflightStep(t: TaskRun): Promise<{ refused?: TaskResult; repo: StaticPreflight }> {
  const repo = await preflightRepo(t.spec, t.runner);
  return repo.ok ? { repo } : { repo, refused: refuse(t, repo.refusals) };
}

/**
 * The worktree of the rounds and its command sandbox. `hold` gets them as soon as they exist, so
 * a failure further on still removes them. `probing`: the launcher probe, started beside the
 * source snapshot and the checkout. The worktree's view (tracked allowlisted files, pristine
 * protected files) is taken as soon as git has checked it out, before anything else touches it.
 */
async function prepareStep(
  t: TaskRun,
  base: WorktreeBase | undefined,
  probing: Promise<SandboxInfo>,
  hold: (work: Work) => void,
): Promise<Confined> {
  const worktree = await t.worktrees.create(t.spec.cwd, base);
  const work: Work = { worktree, sandbox: undefined };
  hold(work);
  const view = WorktreeView.capture(worktree.path, t.spec.allowlist, t.spec.protected_paths);
  t.art.event("worktree_created", { path: worktree.path });
  t.opts.onWorktree?.(worktree.path);
  const sandbox = await commandSandbox(worktree, t.spec.writable_paths, t.runner, await probing);
  work.sandbox = sandbox;
  t.art.event("command_sandbox", {
    protection: sandbox.protection,
    reason: sandbox.reason,
    writable: sandbox.writable,
  });
  const inside = sandbox.writable.find((w) => worktree.git.gitDir.startsWith(`${w}/`));
  if (inside !== undefined) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `writable_paths entry ${inside} contains Ratchet's private git folder ${worktree.git.gitDir}: choose a narrower folder`,
      { field: "writable_paths" },
    );
  }
  return { worktree, sandbox, view };
}

/** The DoD before any change: it must fail (unless `allow_passing_dod`). */
async function preflightDodStep(t: TaskRun, work: Confined) {
  const pre = await preflightDod(t.spec, work.worktree.path, t.runner, work.sandbox);
  const dod = redactDod(pre.dod, t.redact);
  logDod(t, "preflight", dod);
  t.result.dod = dodInfo(t.spec, dod);
  return { dod, refused: pre.refusal ? refuse(t, [pre.refusal]) : undefined };
}

/**
 * The no-progress key of a round: the same key twice in a row (with the same patch) stops the
 * task. Kept in one place so how the DoD output is normalised can change here alone.
 */
export function progressKey(patch: string, dodOutput: string, paths: readonly string[] = []): string {
  return `${hashText(patch)}:${hashText(normaliseDodOutput(dodOutput, paths))}`;
}

/** The rounds until the DoD passes or a stop condition holds; the best round and why they stopped. */
async function roundsStep(t: TaskRun, work: Confined, pre: DodRun): Promise<{ best: Best; stop: string }> {
  const { spec, art, tokens, opts } = t;
  const ctx: RoundContext = {
    spec,
    client: opts.client,
    runner: t.runner,
    repo: work.worktree.git,
    view: work.view,
    sandbox: work.sandbox,
    // a tool waits for the last round's diff before it touches the worktree (see runRound)
    tools: gated(
      runnerTools({
        worktree: work.worktree.path,
        repo: work.worktree.git,
        source: spec.cwd,
        allowlist: spec.allowlist,
        protectedPaths: spec.protected_paths,
        runner: t.runner,
        sandbox: work.sandbox,
        redact: t.redact,
        onRefusal: (tool, reason) => art.event("tool_refused", { tool, reason }),
      }),
      () => ctx.gate,
    ),
    context: readContext(spec, t.redact),
    art,
    tokens,
    responses: t.responses,
    logDod: (label, dod) => logDod(t, label, dod),
    redact: t.redact,
    ...(opts.signal ? { signal: opts.signal } : {}),
    rawDiff: rawDiffSettings(work.worktree.base?.copied),
  };
  let best: Best = { score: scoreRound(false, pre.output), patch: "", round: 0, dod: pre };
  let last = pre;
  const paths = [work.worktree.path, spec.cwd];
  // the last round's no-progress key and patch (its diff may still run: see runRound)
  let prev: Promise<{ key: string; patch: string }> | undefined;
  // every way out waits for a diff still running (and fails the task if it failed)
  const ended = async (stop: TaskStop) => {
    await ctx.gate;
    return { best, stop };
  };
  for (let round = 1; round <= spec.max_rounds; round++) {
    if (tokens.input + tokens.output >= TASK_MAX_TOKENS) return ended(TaskStop.Budget);
    if (opts.signal?.aborted) return ended(TaskStop.Cancelled);
    t.result.rounds = round;
    art.event("round_started", { round });
    art.progress("running", { round });
    ctx.progressPossible = prev !== undefined;
    const r = await runRound(ctx, round, last, best);
    last = r.dod;
    ctx.lastFingerprint = r.fingerprint;
    ctx.gate = undefined;
    if (r.kept) {
      const kept: Best = { score: r.score, patch: r.patch ?? "", round, dod: r.dod };
      best = kept;
      if (r.patch === undefined)
        ctx.gate = r.patching.then((patch) => {
          kept.patch = patch;
        });
    }
    if (r.dod.passed) return ended(TaskStop.Passed);
    if (r.modelError !== undefined) return ended(TaskStop.ModelError);
    if (r.loop?.stopReason === "cancelled") return ended(TaskStop.Cancelled);
    const output = r.dod.output;
    const mine = r.patching.then((patch) => ({ key: progressKey(patch, output, paths), patch }));
    mine.catch(() => undefined); // a failed diff fails the task through the gate
    // A round left running differs from the last one (its fingerprint does), so it is progress.
    if (r.patch !== undefined && prev !== undefined) {
      const p = await prev;
      if (p.key === progressKey(r.patch, output, paths) && p.patch === r.patch)
        return ended(TaskStop.NoProgress);
    }
    prev = mine;
  }
  return ended(TaskStop.MaxRounds);
}

/** `tools`, each waiting for `gate()` (the last round's diff still running) before it runs. */
function gated(tools: LoopTool[], gate: () => Promise<unknown> | undefined): LoopTool[] {
  return tools.map((tool) => ({
    def: tool.def,
    async execute(args, c) {
      await gate();
      return tool.execute(args, c);
    },
  }));
}

/** The patch re-checked (allowlist, no known secret) and written with hunk.md. A refusal ends the task. */
function exportStep(t: TaskRun, best: Best): TaskResult | undefined {
  const { spec, art, result } = t;
  result.best_score = best.score;
  result.best_round = best.round;
  result.dod = dodInfo(spec, best.dod);
  const outside = pathsOutside(best.patch, spec.allowlist);
  if (outside.length > 0) {
    result.refusals = [
      {
        code: Refusal.OutsideAllowlist,
        message: `the final diff touches paths outside the allowlist: ${outside.join(", ")}`,
      },
    ];
    return finish(t, "refused", TaskStop.Refused);
  }
  // The patch is written byte for byte (masking would corrupt it), so one holding a known secret
  // value is not written at all.
  if (holdsKnownSecret(t, best.patch)) {
    result.refusals = [
      {
        code: Refusal.SecretInPatch,
        message:
          "the final diff contains a known secret value (the model key or a workspace secret); not exported",
      },
    ];
    return finish(t, "refused", TaskStop.Refused);
  }
  result.changed_files = patchPaths(best.patch);
  if (best.patch !== "") {
    art.writeRaw("patch", best.patch);
    result.patch_file = art.path("patch");
  }
  art.writeText("hunk.md", hunkMarkdown(spec, best, result.changed_files));
  return undefined;
}

/** The DoD on a fresh worktree holding only the exported patch: what decides "passed". */
async function verifyStep(
  t: TaskRun,
  best: Best,
  probed: SandboxInfo,
  base: Worktree["base"],
  made: MadeProof | undefined,
  onDodStarted: (() => void) | undefined,
): Promise<{ passed: boolean; path: string }> {
  const fresh = await verifyOnFreshWorktree(t.spec, best.patch, {
    worktrees: t.worktrees,
    runner: t.runner,
    probed,
    ...(onDodStarted ? { onDodStarted } : {}),
    ...(base ? { base } : {}),
    ...(made ? { made } : {}),
    ...(t.opts.signal ? { signal: t.opts.signal } : {}),
  });
  const dod = redactDod(fresh.dod, t.redact);
  logDod(t, "fresh worktree", dod);
  t.result.dod = dodInfo(t.spec, dod, true);
  t.art.event("dod_verified", {
    passed: dod.passed,
    exit_code: dod.exitCode,
    patch_hash: hashText(best.patch),
    protection: fresh.protection,
  });
  return { passed: dod.passed, path: fresh.path };
}

/** Compares the source with the snapshot taken before any worktree existed. */
async function proveSourceUnchanged(
  t: TaskRun,
  before: SourceSnapshot,
  ours: string[],
  layout: RepoLayout | undefined,
  reads: SnapshotReads | undefined,
): Promise<boolean> {
  const after = await snapshotSource(t.spec.cwd, [t.spec.output_dir, ...ours], t.runner, {
    ...(layout ? { layout } : {}),
    ...(reads ? { shown: reads.shown, status: reads.status } : {}),
  });
  const changes = compareSnapshots(before, after);
  t.result.source_unchanged = changes.length === 0;
  t.result.source_changes = changes;
  if (changes.length > 0) t.art.event("source_changed", { fields: changes });
  return changes.length === 0;
}

/** Complete-task mode; a failure ends the task. */
async function applyStep(t: TaskRun, best: Best): Promise<TaskResult | undefined> {
  const applied = await applyToSource(t.spec, best.patch, t.result.changed_files, t.runner);
  if (applied.source_dod) logDod(t, "source", redactDod(applied.source_dod, t.redact));
  const { source_dod: _, ...fields } = applied;
  Object.assign(t.result, fields);
  t.art.event("source_applied", { ...fields });
  if (applied.source_apply_error === null) return undefined;
  return finish(
    t,
    "failed",
    applied.source_patch_applied ? TaskStop.SourceDodFailed : TaskStop.SourceApplyFailed,
  );
}

async function removeWork(t: TaskRun, work: Work): Promise<void> {
  work.sandbox?.dispose();
  work.sandbox = undefined;
  await t.worktrees.remove(t.spec.cwd, work.worktree);
  t.art.event("worktree_removed", { path: work.worktree.path });
}

/**
 * Runs one task. Never throws for a task failure: the outcome is the returned result (also
 * written to `{output_dir}/{task_id}.result.json`).
 */
export async function runTask(spec: TaskSpec, opts: RunTaskOptions): Promise<TaskResult> {
  const t = startTask(spec, opts);
  let work: Work | undefined;
  let probing: Promise<SandboxInfo> | undefined;
  let early: EarlyReads | undefined;
  let afterReads: SnapshotReads | undefined;
  let proof: ProofWorktree | undefined;
  try {
    // Preflight's `rev-parse` and `status`, the snapshot's `show-ref`, the settings the worktrees
    // copy and the launcher probe all start now, side by side: each only reads, none needs
    // another's answer, and what a refused task started is dropped (see earlyReads).
    const preflighting = preflightStep(t);
    early = earlyReads(t);
    // The probe must come from this task's process runner, so it is probed again for every task.
    probing = detectSandbox({ languages: ["python"], runner: t.runner, refresh: true });
    const { refused, repo } = await preflighting;
    if (refused) return refused;
    const layout = repo.layout;
    const before = await snapshotSource(spec.cwd, [spec.output_dir], t.runner, {
      ...(layout ? { layout } : {}),
      ...(repo.status !== undefined ? { status: repo.status } : {}),
      ...(early ? { shown: early.shown } : {}),
    });
    // The worktree is made of the commit the snapshot saw, with the settings read before it.
    const base =
      layout && before.head !== "" && early
        ? worktreeBase(layout, before.head, await early.copied)
        : undefined;
    const confined = await prepareStep(t, base, probing, (w) => {
      work = w;
    });
    const preflighted = preflightDodStep(t, confined);
    // Where commands are confined, the proof's fresh worktree is made while the preflight DoD
    // (started first) and the rounds run: none of their commands can write it.
    if (confined.sandbox.protection === "landlock") {
      const probed = confined.sandbox.probed;
      proof = new ProofWorktree(
        t.worktrees,
        spec.cwd,
        confined.worktree.base,
        confined.sandbox.writable,
        (wt) => commandSandbox(wt, spec.writable_paths, t.runner, probed),
      );
    }
    const pre = await preflighted;
    if (pre.refused) return pre.refused;
    const { best, stop } = await roundsStep(t, confined, pre.dod);
    const exportRefused = exportStep(t, best);
    if (exportRefused) return exportRefused;
    const ours = [confined.worktree.path];
    const probed = confined.sandbox.probed;
    work = undefined;
    let verified: { passed: boolean; path: string } | undefined;
    if (best.dod.passed) {
      const made = await proof?.take();
      // The rounds are over. When the proof's commands cannot write anything the after-snapshot's
      // git calls read, those calls run beside the proof's DoD (started right after it, which is
      // what decides "passed"); the snapshot's files are read after the proof, as ever. Not when
      // the patch goes into the source next: there the snapshot is taken as late as it can be.
      const removed = [confined.worktree.path, confined.worktree.git.gitDir];
      const beside =
        made && layout && !spec.apply_to_source && proofLeavesSourceAlone(made, layout, removed)
          ? () => {
              afterReads = startSnapshotReads(spec.cwd, t.runner);
            }
          : undefined;
      // With the proof's worktree already there, the rounds' worktree is removed while the
      // patch is applied and the DoD runs on it; otherwise first (git then makes the next one).
      const removing = made ? removeWork(t, confined) : undefined;
      if (!made) await removeWork(t, confined);
      try {
        verified = await verifyStep(t, best, probed, confined.worktree.base, made, beside);
      } finally {
        await removing;
      }
    } else {
      // the early proof's checkout is over before the last worktree folder can go (see remove)
      await proof?.dispose();
      await removeWork(t, confined);
    }
    if (verified) ours.push(verified.path);
    if (!(await proveSourceUnchanged(t, before, ours, layout, afterReads)))
      return finish(t, "failed", TaskStop.SourceChanged);
    if (!best.dod.passed) return finish(t, "failed", stop);
    if (!verified?.passed) return finish(t, "failed", TaskStop.FreshDodFailed);
    const applyFailed = spec.apply_to_source ? await applyStep(t, best) : undefined;
    return applyFailed ?? finish(t, "passed", stop);
  } catch (err) {
    t.result.error = t.redact((err as Error).message);
    t.art.event("task_error", { message: t.result.error });
    return finish(t, "error", TaskStop.Error);
  } finally {
    await proof?.dispose();
    if (work !== undefined) await removeWork(t, work);
    // the last status written is the final one (rounds' progress writes go in order before it)
    await t.art.settled();
    // a probe or an early read still running when the task failed early is not left unobserved
    await Promise.all([probing?.catch(() => undefined), early?.settled(), afterReads?.settled()]);
  }
}
