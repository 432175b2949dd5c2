/**
 * The rows of the words area (`prov_utterances`, `prov_references`, `prov_reference_links`,
 * `prov_reference_checks`; migration 10) and their closed enumerations. Pure: no I/O.
 */

/** Where an utterance came from; the weaker claim wins whenever unsure. */
export const ORIGINS = ["hook", "human_cli", "agent_cli", "import", "unknown"] as const;
export type Origin = (typeof ORIGINS)[number];

export const VISIBILITIES = ["personal", "shareable"] as const;
export type Visibility = (typeof VISIBILITIES)[number];

export const REFERENCE_KINDS = [
  "email",
  "meeting",
  "chat",
  "ticket",
  "doc",
  "commit",
  "verbal",
  "other",
] as const;
export type ReferenceKind = (typeof REFERENCE_KINDS)[number];

export const STANCES = ["supports", "contradicts", "context"] as const;
export type Stance = (typeof STANCES)[number];

export const VERDICTS = ["ok", "gone", "moved", "no_access"] as const;
export type Verdict = (typeof VERDICTS)[number];

export type Verifiability = "verbal" | "linked" | "unreachable";

/** The spec's rule (§2.3), also a CHECK on the table: verbal kind ⇒ verbal; a uri ⇒ linked. */
export function verifiabilityOf(kind: ReferenceKind, uri: string | null | undefined): Verifiability {
  if (kind === "verbal") return "verbal";
  return uri ? "linked" : "unreachable";
}

export interface UtteranceRow {
  id: number;
  session_id: string | null;
  project: string | null;
  plan_id: string | null;
  text: string;
  occurred_at: string;
  recorded_at: string;
  visibility: Visibility;
  origin: Origin;
  prev_hash: string;
  hash: string;
}

export interface NewUtterance {
  session_id?: string | null;
  project?: string | null;
  plan_id?: string | null;
  text: string;
  occurred_at: string;
  visibility?: Visibility;
  origin: Origin;
}

export interface ReferenceRow {
  id: number;
  project: string | null;
  kind: ReferenceKind;
  uri: string | null;
  label: string;
  occurred_at: string;
  registered_at: string;
  verifiability: Verifiability;
  visibility: Visibility;
  last_checked: string | null;
  prev_hash: string;
  hash: string;
}

export interface NewReference {
  project?: string | null;
  kind: ReferenceKind;
  uri?: string | null;
  label: string;
  occurred_at: string;
  visibility?: Visibility;
}

export interface ReferenceLinkRow {
  id: number;
  reason_id: number | null;
  reference_id: number;
  utterance_id: number | null;
  stance: Stance;
}

/** A link anchors a reference on exactly one of a reason or an utterance. */
export type NewLink = { reference_id: number; stance?: Stance } & (
  | { reason_id: number; utterance_id?: undefined }
  | { utterance_id: number; reason_id?: undefined }
);

export interface ReferenceCheckRow {
  id: number;
  reference_id: number;
  checked_at: string;
  verdict: Verdict;
  note: string | null;
  prev_hash: string;
  hash: string;
}

/** What the words area needs to know of a plan (its window and attribution). */
export interface PlanWindow {
  plan_id: string;
  project: string | null;
  created_at: string;
  /** Null while the plan is open (the window has an open end). */
  finished_at: string | null;
  session_id: string | null;
}
