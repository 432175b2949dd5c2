/**
 * The reasons area's tables behind one interface (`ReasonStore`), implemented once over the store's
 * SQL door (SQLite and PostgreSQL):
 * change reasons (hash-chained), the trigger log, influence rows, reference links anchored on a
 * reason, and the small reads reason-slots / reason-fill / the close need of reasons. The user's
 * words and the references are read through the words area (`WordStore`, `candidateUtterances`).
 * Every write runs inside the caller's `store.tx()`.
 */
import type { SqlPort } from "../../store/sql.js";
import { inSavepoint, type SqlHome } from "../db.js";
import { insertChained, insertRow } from "../rows.js";

export const Tier = {
  Stated: "stated",
  Asserted: "asserted",
  Derived: "derived",
  Unstated: "unstated",
} as const;
export type Tier = (typeof Tier)[keyof typeof Tier];

/** A `prov_change_reasons` row as stored. */
export interface ReasonRow {
  id: number;
  project: string;
  node_key: string | null;
  run_id: number | null;
  event_id: number | null;
  plan_id: string;
  step_id: string | null;
  kind: string;
  role: string;
  verbatim_utterance_id: number | null;
  verbatim_start: number | null;
  verbatim_end: number | null;
  interpretation: string | null;
  statement: string | null;
  rationale: string | null;
  state: string;
  superseded_by: number | null;
  occurred_at: string;
  recorded_at: string;
  recorded_by: string;
  tier: Tier;
  rule_id: string | null;
}

/** What a writer gives for a new reason (the rest defaults as the migration says). */
export interface NewReason {
  project: string;
  node_key: string | null;
  run_id: number | null;
  plan_id: string;
  step_id: string | null;
  kind: string;
  role: "reason" | "rejected_path" | "constraint";
  tier: Tier;
  state: "active" | "unknown";
  recorded_by: "human" | "agent" | "system";
  at: string;
  verbatim_utterance_id?: number;
  verbatim_start?: number;
  verbatim_end?: number;
  interpretation?: string;
  statement?: string;
  rule_id?: string;
}

export interface NewTrigger {
  project: string;
  plan_id: string;
  node_key: string | null;
  path: "code" | "external";
  rule_id: string | null;
  verdict: "auto" | "ask" | "silent" | "ambiguous";
  basis: string;
  at: string;
}

export interface NewInfluence {
  reason_id: number;
  project: string;
  plan_id: string | null;
  session_id: string | null;
  node_key: string | null;
  via: "reason_because" | "headline_response";
  by: "agent" | "human";
  at: string;
}

export interface ReasonStore {
  /** Every reason row of the plan, oldest first. */
  reasonsOfPlan(planId: string): ReasonRow[];
  reason(id: number): ReasonRow | undefined;
  /** Active constraint rows anchored on the node (R5). */
  activeConstraints(project: string, nodeKey: string): ReasonRow[];
  /** Texts of the plan's rejected paths already recorded (R6 writes each once per plan and text). */
  rejectedPathTexts(planId: string): Set<string>;
  insertReason(r: NewReason): number;
  insertTrigger(t: NewTrigger): number;
  insertInfluence(i: NewInfluence): number;
  /** Links a reference to a reason (`stance` supports). */
  linkReference(reasonId: number, referenceId: number): number;
  /** Points `id`'s one mutable column at its newer row. */
  supersede(id: number, by: number): void;
  /** Runs `fn` in a savepoint of the open transaction: a throw rolls back only what `fn` wrote. */
  savepoint<T>(fn: () => T): T;
}

/** {@link ReasonStore} over the store's SQL door (same transaction as the ledger's rows). */
export class SqlReasonStore implements ReasonStore {
  readonly home: SqlHome;
  readonly sql: SqlPort;

  constructor(home: SqlHome) {
    this.home = home;
    this.sql = home.sql;
  }

  reasonsOfPlan(planId: string): ReasonRow[] {
    return this.sql.all<ReasonRow>("SELECT * FROM prov_change_reasons WHERE plan_id = ? ORDER BY id", [
      planId,
    ]);
  }

  reason(id: number): ReasonRow | undefined {
    return this.sql.get<ReasonRow>("SELECT * FROM prov_change_reasons WHERE id = ?", [id]);
  }

  activeConstraints(project: string, nodeKey: string): ReasonRow[] {
    return this.sql.all<ReasonRow>(
      `SELECT * FROM prov_change_reasons WHERE project = ? AND node_key = ? AND role = 'constraint'
           AND state = 'active' AND superseded_by IS NULL ORDER BY id`,
      [project, nodeKey],
    );
  }

  rejectedPathTexts(planId: string): Set<string> {
    const rows = this.sql.all<{ interpretation: string | null }>(
      "SELECT interpretation FROM prov_change_reasons WHERE plan_id = ? AND role = 'rejected_path'",
      [planId],
    );
    return new Set(rows.map((r) => r.interpretation ?? ""));
  }

  insertReason(r: NewReason): number {
    return insertChained(this.sql, "prov_change_reasons", {
      project: r.project,
      node_key: r.node_key,
      run_id: r.run_id,
      plan_id: r.plan_id,
      step_id: r.step_id,
      kind: r.kind,
      role: r.role,
      verbatim_utterance_id: r.verbatim_utterance_id ?? null,
      verbatim_start: r.verbatim_start ?? null,
      verbatim_end: r.verbatim_end ?? null,
      interpretation: r.interpretation ?? null,
      statement: r.statement ?? null,
      rationale_visibility: "personal",
      statement_visibility: "shareable",
      state: r.state,
      occurred_at: r.at,
      recorded_at: r.at,
      recorded_by: r.recorded_by,
      tier: r.tier,
      rule_id: r.rule_id ?? null,
    });
  }

  insertTrigger(t: NewTrigger): number {
    return insertRow(this.sql, "prov_trigger_log", { ...t });
  }

  insertInfluence(i: NewInfluence): number {
    return insertRow(this.sql, "prov_influence", { ...i });
  }

  linkReference(reasonId: number, referenceId: number): number {
    return insertRow(this.sql, "prov_reference_links", {
      reason_id: reasonId,
      reference_id: referenceId,
      stance: "supports",
    });
  }

  supersede(id: number, by: number): void {
    this.sql.run("UPDATE prov_change_reasons SET superseded_by = ? WHERE id = ?", [by, id]);
  }

  savepoint<T>(fn: () => T): T {
    return inSavepoint(this.sql, "prov_reasons", fn);
  }
}
