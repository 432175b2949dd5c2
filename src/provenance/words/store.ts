/**
 * `WordStore`: the words area's tables behind one interface (utterances, references, their links
 * and checks), implemented once over a store's SQL door (SQLite or PostgreSQL). Writes run inside
 * the caller's write transaction (the ledger's `store.tx`, or {@link SqlWordStore.write} for
 * the prompt hook) so the hash chain never forks. Kept free of the ledger and of the CLI: the
 * prompt hook loads this file, `rows.ts`, the chain and the SQL door, and nothing else of Ratchet.
 */
import type { SqlArgs, SqlParam, SqlPort } from "../../store/sql.js";
import type { SqlHome } from "../db.js";
import { projectHolding } from "../project-of.js";
import { insertChained, insertRow } from "../rows.js";
import {
  type NewLink,
  type NewReference,
  type NewUtterance,
  type PlanWindow,
  type ReferenceCheckRow,
  type ReferenceLinkRow,
  type ReferenceRow,
  type Stance,
  type UtteranceRow,
  type Verdict,
  verifiabilityOf,
} from "./types.js";

/** A reference as linked to one anchor, with the link's stance. */
export type LinkedReference = ReferenceRow & { stance: Stance };

export interface WordStore {
  // ── writes (inside a write transaction) ──
  /** Appends one utterance (chained); `recorded_at` is the store's clock. Returns its id. */
  recordUtterance(u: NewUtterance): number;
  /** Appends one reference (chained, verifiability derived). Returns its id. */
  addReference(r: NewReference): number;
  /** Links a reference to a reason or an utterance. Returns the link's id. */
  link(l: NewLink): number;
  /** Appends a check and sets the reference's `last_checked`. */
  addCheck(referenceId: number, verdict: Verdict, note: string | null): ReferenceCheckRow;

  // ── reads ──
  getUtterance(id: number): UtteranceRow | undefined;
  getReference(id: number): ReferenceRow | undefined;
  /** True when a `prov_change_reasons` row has this id (an anchor of a reference). */
  reasonExists(id: number): boolean;
  utterancesOfPlan(planId: string): UtteranceRow[];
  /** The project's utterances with `from ≤ occurred_at ≤ to` (`to` null: open end). */
  utterancesOfProject(project: string, from: string, to: string | null): UtteranceRow[];
  utterancesOfSession(sessionId: string): UtteranceRow[];
  /** Distinct session ids of the utterances attributed to the plan. */
  sessionsOfPlan(planId: string): string[];
  /** The plan's window and attribution, or undefined for an unknown plan. */
  planWindow(planId: string): PlanWindow | undefined;
  referencesOfUtterance(utteranceId: number): LinkedReference[];
  referencesOfReason(reasonId: number): LinkedReference[];
  linksOfReference(referenceId: number): ReferenceLinkRow[];
  checksOf(referenceId: number): ReferenceCheckRow[];
  /** Linked references never checked, or last checked before `cutoff` (oldest first). */
  pendingReferences(cutoff: string): ReferenceRow[];
  /** The session of the newest hook utterance of the project at or after `since`. */
  recentHookSession(project: string, since: string): string | undefined;
  /** The registered project whose repo contains `path` (realpath; the deepest repo wins). */
  projectForPath(path: string): string | undefined;
  /** The project's newest IN_PROGRESS plan. */
  newestOpenPlan(project: string): string | undefined;
}

/** The implementation of {@link WordStore} over a store's SQL door. */
export class SqlWordStore implements WordStore {
  readonly home: SqlHome;
  readonly #sql: SqlPort;
  readonly #now: () => string;

  constructor(home: SqlHome, now: () => string = () => new Date().toISOString()) {
    this.home = home;
    this.#sql = home.sql;
    this.#now = now;
  }

  /** One statement with better-sqlite3's call shape: positional arguments, or one named object. */
  #s(text: string) {
    const sql = this.#sql;
    const args = (a: SqlParam[] | [Record<string, SqlParam>]): SqlArgs =>
      a.length === 1 && a[0] !== null && typeof a[0] === "object" && !(a[0] instanceof Uint8Array)
        ? (a[0] as Record<string, SqlParam>)
        : (a as SqlParam[]);
    return {
      get: (...a: SqlParam[] | [Record<string, SqlParam>]): unknown => sql.get(text, args(a)),
      all: (...a: SqlParam[] | [Record<string, SqlParam>]): unknown[] => sql.all(text, args(a)),
    };
  }

  /** Runs `fn` in a write transaction (`store.tx`), or inside the caller's open one. */
  write<T>(fn: () => T): T {
    if (this.#sql.inTransaction) return fn();
    return this.home.tx(fn);
  }

  recordUtterance(u: NewUtterance): number {
    return insertChained(this.#sql, "prov_utterances", {
      session_id: u.session_id ?? null,
      project: u.project ?? null,
      plan_id: u.plan_id ?? null,
      text: u.text,
      occurred_at: u.occurred_at,
      recorded_at: this.#now(),
      visibility: u.visibility ?? "personal",
      origin: u.origin,
    });
  }

  addReference(r: NewReference): number {
    const uri = r.uri ?? null;
    return insertChained(this.#sql, "prov_references", {
      project: r.project ?? null,
      kind: r.kind,
      uri,
      label: r.label,
      occurred_at: r.occurred_at,
      registered_at: this.#now(),
      verifiability: verifiabilityOf(r.kind, uri),
      visibility: r.visibility ?? "shareable",
    });
  }

  link(l: NewLink): number {
    return insertRow(this.#sql, "prov_reference_links", {
      reason_id: l.reason_id ?? null,
      reference_id: l.reference_id,
      utterance_id: l.utterance_id ?? null,
      stance: l.stance ?? "supports",
    });
  }

  addCheck(referenceId: number, verdict: Verdict, note: string | null): ReferenceCheckRow {
    const checkedAt = this.#now();
    const id = insertChained(this.#sql, "prov_reference_checks", {
      reference_id: referenceId,
      checked_at: checkedAt,
      verdict,
      note,
    });
    this.#sql.run("UPDATE prov_references SET last_checked = ? WHERE id = ?", [checkedAt, referenceId]);
    return this.#sql.get<ReferenceCheckRow>("SELECT * FROM prov_reference_checks WHERE id = ?", [
      id,
    ]) as ReferenceCheckRow;
  }

  getUtterance(id: number): UtteranceRow | undefined {
    return this.#s("SELECT * FROM prov_utterances WHERE id = ?").get(id) as UtteranceRow | undefined;
  }

  getReference(id: number): ReferenceRow | undefined {
    return this.#s("SELECT * FROM prov_references WHERE id = ?").get(id) as ReferenceRow | undefined;
  }

  reasonExists(id: number): boolean {
    return this.#s("SELECT 1 FROM prov_change_reasons WHERE id = ?").get(id) !== undefined;
  }

  utterancesOfPlan(planId: string): UtteranceRow[] {
    return this.#s("SELECT * FROM prov_utterances WHERE plan_id = ? ORDER BY id").all(
      planId,
    ) as UtteranceRow[];
  }

  utterancesOfProject(project: string, from: string, to: string | null): UtteranceRow[] {
    return this.#s(
      "SELECT * FROM prov_utterances WHERE project = @project AND occurred_at >= @from AND (CAST(@to AS TEXT) IS NULL OR occurred_at <= @to) ORDER BY id",
    ).all({ project, from, to }) as UtteranceRow[];
  }

  utterancesOfSession(sessionId: string): UtteranceRow[] {
    return this.#s("SELECT * FROM prov_utterances WHERE session_id = ? ORDER BY id").all(
      sessionId,
    ) as UtteranceRow[];
  }

  sessionsOfPlan(planId: string): string[] {
    return (
      this.#s(
        "SELECT DISTINCT session_id FROM prov_utterances WHERE plan_id = ? AND session_id IS NOT NULL ORDER BY session_id",
      ).all(planId) as { session_id: string }[]
    ).map((r) => r.session_id);
  }

  planWindow(planId: string): PlanWindow | undefined {
    return this.#s(
      "SELECT plan_id, project, created_at, finished_at, session_id FROM plans WHERE plan_id = ?",
    ).get(planId) as PlanWindow | undefined;
  }

  referencesOfUtterance(utteranceId: number): LinkedReference[] {
    return this.#s(
      "SELECT r.*, l.stance FROM prov_reference_links l JOIN prov_references r ON r.id = l.reference_id WHERE l.utterance_id = ? ORDER BY r.id",
    ).all(utteranceId) as LinkedReference[];
  }

  referencesOfReason(reasonId: number): LinkedReference[] {
    return this.#s(
      "SELECT r.*, l.stance FROM prov_reference_links l JOIN prov_references r ON r.id = l.reference_id WHERE l.reason_id = ? ORDER BY r.id",
    ).all(reasonId) as LinkedReference[];
  }

  linksOfReference(referenceId: number): ReferenceLinkRow[] {
    return this.#s("SELECT * FROM prov_reference_links WHERE reference_id = ? ORDER BY id").all(
      referenceId,
    ) as ReferenceLinkRow[];
  }

  checksOf(referenceId: number): ReferenceCheckRow[] {
    return this.#s("SELECT * FROM prov_reference_checks WHERE reference_id = ? ORDER BY id").all(
      referenceId,
    ) as ReferenceCheckRow[];
  }

  pendingReferences(cutoff: string): ReferenceRow[] {
    return this.#s(
      "SELECT * FROM prov_references WHERE verifiability = 'linked' AND (last_checked IS NULL OR last_checked < ?) ORDER BY coalesce(last_checked, ''), id",
    ).all(cutoff) as ReferenceRow[];
  }

  recentHookSession(project: string, since: string): string | undefined {
    const r = this.#s(
      "SELECT session_id FROM prov_utterances WHERE project = ? AND origin = 'hook' AND session_id IS NOT NULL AND recorded_at >= ? ORDER BY id DESC LIMIT 1",
    ).get(project, since) as { session_id: string } | undefined;
    return r?.session_id;
  }

  projectForPath(path: string): string | undefined {
    const rows = this.#s("SELECT name, repo_path FROM projects WHERE repo_path IS NOT NULL").all() as {
      name: string;
      repo_path: string;
    }[];
    return projectHolding(rows, path);
  }

  newestOpenPlan(project: string): string | undefined {
    // Ties on created_at: SQLite's insertion order (rowid); PostgreSQL has none, plan_id decides.
    const tie = this.#sql.dialect === "postgres" ? "plan_id" : "rowid";
    const r = this.#s(
      `SELECT plan_id FROM plans WHERE project = ? AND status = 'IN_PROGRESS' ORDER BY created_at DESC, ${tie} DESC LIMIT 1`,
    ).get(project) as { plan_id: string } | undefined;
    return r?.plan_id;
  }
}
