/**
 * The door of the headline and `why` part of `reasons/` (the reasons area's own `index.ts` may
 * re-export it): what the CLI, the server and the bench use.
 */

export { FILE_LINE } from "../nodes/index.js";
export type { Finding, HeadlineDoc, HeadlineSummary } from "./headline.js";
export { publishHeadline, summarize, UNAVAILABLE_KINDS } from "./headline.js";
export type { DeclaredConstraint } from "./headline-extensions.js";
export { declaredConstraints, extensionsPath, syncConstraints } from "./headline-extensions.js";
export { headlineAtPublish } from "./headline-publish.js";
export type { HeadlineRespondInput } from "./headline-respond.js";
export { HEADLINE_RESPOND_FLOW, headlineRespond, latestHeadline, whyStoreOf } from "./headline-respond.js";
export { nodeSourceFor, useNodeSource } from "./node-source.js";
export type { BoundedRead, EvidenceLevel, ReadRecord } from "./read.js";
export {
  boundedRead,
  CHARS_PER_TOKEN,
  DEFAULT_BUDGET_TOKENS,
  evidenceLevel,
  markSpan,
  READ_CAPS,
  writeReadHits,
} from "./read.js";
export type { PendingRow, WhyQuery, WhyResult } from "./why.js";
export { why } from "./why.js";
export type { PlanChecklist } from "./why-checklist.js";
export { planChecklist } from "./why-checklist.js";
export { renderHeadline, renderWhy } from "./why-format.js";
export type { WhyStore } from "./why-store.js";
export { SqlWhyStore } from "./why-store.js";
