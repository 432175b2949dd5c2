/** Event types threads write to the one event log (`entity_kind` "thread"). Pinned by a test. */
export const ThreadEvent = {
  Created: "thread.created",
  StateChanged: "thread.state_changed",
  Message: "thread.message",
  LlmCompleted: "thread.llm_completed",
  ActionCompleted: "thread.action_completed",
  ApprovalRequested: "thread.approval_requested",
  ApprovalDecided: "thread.approval_decided",
  SkillActivated: "thread.skill_activated",
  StepCompleted: "thread.step_completed",
  CodeStep: "thread.code_step",
  Emitted: "thread.event",
  CancelRequested: "thread.cancel_requested",
  MessageInjected: "thread.message_injected",
  TransitionRequested: "thread.transition_requested",
  SkillsActive: "thread.skills_active",
  OrchestratorFallback: "orchestrator.fallback",
  OrchestratorSaved: "orchestrator.saved",
  MissionFired: "mission.fired",
  DocumentSaved: "document.saved",
  ProposalDecided: "proposal.decided",
} as const;
export type ThreadEvent = (typeof ThreadEvent)[keyof typeof ThreadEvent];
