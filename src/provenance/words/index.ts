/**
 * The user's words and their sources (spec §2.3, §3): utterances (the prompt hook, `note`),
 * references with derived verifiability, their links and checks. Readers (`reasons/`, `why`)
 * use {@link WordStore} and {@link candidateUtterances}; writes are the flows in `flows.ts`.
 */
export { candidateUtterances } from "./candidates.js";
export { NOTE_FLOW, REFERENCE_ADD_FLOW, REFERENCE_MARK_FLOW } from "./flows.js";
export type { HookOutcome, PromptPayload } from "./hook.js";
export { recordPrompt } from "./hook.js";
export { parseWhen } from "./inputs.js";
export { HEADLESS_VARS, HOST_PREFIXES, type SkipReason, skipReason, sourceKind } from "./prompt-rules.js";
export { publishSession, recordPlanSession, SESSION_ENV, SESSION_WINDOW_MS } from "./session.js";
export type { LinkedReference, WordStore } from "./store.js";
export { SqlWordStore } from "./store.js";
export type {
  NewLink,
  NewReference,
  NewUtterance,
  Origin,
  PlanWindow,
  ReferenceCheckRow,
  ReferenceKind,
  ReferenceLinkRow,
  ReferenceRow,
  Stance,
  UtteranceRow,
  Verdict,
  Verifiability,
  Visibility,
} from "./types.js";
export { ORIGINS, REFERENCE_KINDS, STANCES, VERDICTS, VISIBILITIES, verifiabilityOf } from "./types.js";
export { type NodeSourceFactory, wordStoreOf } from "./write.js";
