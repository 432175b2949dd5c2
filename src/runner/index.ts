/**
 * `runner/`: a bounded code change proven in a disposable git worktree against a definition of
 * done, exported as an allowlist-scoped patch (specs/code-runner.md, docs/runner.md).
 */
export type { SourceApplyResult } from "./apply.js";
export { applyToSource, rollbackPaths } from "./apply.js";
export type { TaskEvent } from "./artifacts.js";
export { TaskArtifacts, TaskState, TERMINAL_STATES, taskIdsIn, writeAtomic } from "./artifacts.js";
export type { DodRun } from "./dod.js";
export { commandEnv, runDod, SCRUBBED_ENV } from "./dod.js";
export { normaliseDodOutput } from "./dod-normalise.js";
export type { TestSummary } from "./dod-summary.js";
export { parseDodSummary, SummaryRunner } from "./dod-summary.js";
export type { GuardContext, GuardVerdict } from "./guard.js";
export { checkCommand, parseCommandLine } from "./guard.js";
export {
  DEFAULT_DOD_TIMEOUT_SECONDS,
  DEFAULT_MAX_ROUNDS,
  DOCTOR_HTTP_TIMEOUT_MS,
  TASK_MAX_TOKENS,
  WORKTREE_PREFIX,
} from "./limits.js";
export { diffAllowlisted, patchPaths, pathsOutside } from "./patch.js";
export type { DryRunReport, RefusalItem, RiskReport, StaticPreflight } from "./preflight.js";
export { dryRun, explainRisk, preflightDod, preflightRepo, Refusal } from "./preflight.js";
export { assertionHolds, parseTestCounts, scoreRound } from "./score.js";
export type { DodAssertion, TaskSpec } from "./spec.js";
export { loadTaskSpec, normaliseRepoPath, parseAssertion, parseTaskSpec } from "./spec.js";
export { runTask } from "./task.js";
export type { RunTaskOptions, TaskResult } from "./task-run.js";
export { TaskStop } from "./task-run.js";
export type { ToolContext } from "./tools.js";
export { runnerTools } from "./tools.js";
export type { SourceSnapshot, Worktree, Worktrees } from "./worktree.js";
export { compareSnapshots, gitWorktrees, snapshotSource } from "./worktree.js";
