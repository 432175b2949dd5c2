/**
 * `threads/`: agent threads driven by a versioned Python orchestrator in a sandboxed interpreter
 * (Monty), with host functions, one action checkpoint (leases, policy, approvals), skills and
 * learning missions. See ARCHITECTURE.md and docs/threads.md.
 */

export { argsHash, canonicalJson } from "./action-keys.js";
export type { ActionDef, ActionProvider } from "./actions.js";
export { bridgeActions, effectFor } from "./actions.js";
export type { ThreadsConfig } from "./config.js";
export { compileThreadsConfig, DEFAULT_SYSTEM_PROMPT, loadThreadsConfig } from "./config.js";
export type { DocumentRow, NewDocument } from "./documents.js";
export { DocKind, Documents } from "./documents.js";
export type { DriveEvent, DriveOutcome, DriveResult, EngineDeps } from "./engine.js";
export { Driver, driverAlive, thisDriver } from "./engine.js";
export { ThreadEvent } from "./events.js";
export type { ThreadRoutesOptions } from "./http.js";
export { registerThreadRoutes } from "./http.js";
export {
  DEFAULT_APPROVAL_WAIT_MS,
  ORCHESTRATOR_MAX_ALLOCATIONS,
  ORCHESTRATOR_MAX_CONSECUTIVE_FAILURES,
  ORCHESTRATOR_MAX_DURATION_SECS,
  ORCHESTRATOR_MAX_MEMORY_BYTES,
} from "./limits.js";
export type { MissionReport } from "./missions.js";
export { dispatchMissions, Mission, missionsFor } from "./missions.js";
export { DEFAULT_ORCHESTRATOR, DEFAULT_ORCHESTRATOR_VERSION } from "./orchestrator-default.js";
export type { Policy, PolicyRule, PolicyVerdict } from "./policy.js";
export { DEFAULT_POLICY, Decision, EffectType, evaluatePolicy, globMatch } from "./policy.js";
export { acceptProposal, listProposals, rejectProposal, selfTestOrchestrator } from "./proposals.js";
export type { StartOptions, ThreadDetail, ThreadServiceOptions } from "./service.js";
export { newThreadId, ThreadService } from "./service.js";
export type { SkillInput, SkillView } from "./skills.js";
export { addSkill, listSkills, showSkill, skillView } from "./skills.js";
export {
  canTransition,
  isResumable,
  isTerminal,
  isThreadState,
  RESUMABLE_STATES,
  recoveryTarget,
  THREAD_TRANSITIONS,
  ThreadState,
} from "./states.js";
export type { ActionRow, ApprovalRow, MessageRow, ThreadBudget, ThreadRow } from "./thread-store.js";
export { ThreadStore } from "./thread-store.js";
export type { OrchestratorVersion } from "./versions.js";
export { ORCHESTRATOR_TAG, ORCHESTRATOR_TITLE, OrchestratorVersions } from "./versions.js";
export type { PausedVm, VmFactory, VmLimits, VmProgress } from "./vm.js";
export { montyVm, VmError } from "./vm.js";
