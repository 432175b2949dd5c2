/**
 * What headlines and `why` read and write, behind one interface (`WhyStore`), implemented once
 * over the store's SQL door (SQLite and PostgreSQL; the few dialect branches are marked). Change reasons are written by the reasons area; this reader queries
 * `prov_change_reasons` and the words tables directly (their columns are fixed by migration 10).
 * Writes: `read_hit`, `influence` (via `headline_response`), `headline`, `headline_response`,
 * and the constraint rows the extensions file declares.
 */
import type { SqlArgs, SqlPort } from "../../store/sql.js";
import { insertChained, insertRow } from "../rows.js";
import type { ReasonRow as StoredReasonRow } from "./store.js";

export type Role = "reason" | "rejected_path" | "constraint";
export type Moment = "plan" | "edit" | "close" | "why";

/** One `prov_change_reasons` row (the reasons area's row type, with its role narrowed). */
export type ReasonRow = Omit<StoredReasonRow, "role"> & { role: Role };

export interface UtteranceRow {
  id: number;
  text: string;
  origin: string;
  occurred_at: string;
}

export interface SourceRow {
  reason_id: number;
  reference_id: number;
  kind: string;
  label: string;
  uri: string | null;
  verifiability: string;
  stance: string;
  last_checked: string | null;
}

export type Shown = Record<Moment, number>;

export interface HeadlineRow {
  id: number;
  project: string;
  plan_id: string | null;
  findings_json: string;
  at: string;
}

export interface ResponseRow {
  id: number;
  headline_id: number;
  finding_id: string;
  action: string;
  rationale: string | null;
  by: string;
  cites_json: string;
  at: string;
}

export interface NodeCounts {
  constraints: number;
  active_constraints: number;
  rejected: number;
  reasons: number;
  pending: number;
}

export interface WhyStore {
  /** Rows of one role on a node (current rows only: superseded ones are left out), newest first. */
  onNode(
    project: string,
    nodeKey: string,
    role: Role,
    opts?: { limit?: number; activeOnly?: boolean },
  ): ReasonRow[];
  counts(project: string, nodeKey: string): NodeCounts;
  reasons(ids: readonly number[]): ReasonRow[];
  utterance(id: number): UtteranceRow | undefined;
  sources(reasonIds: readonly number[]): SourceRow[];
  shown(reasonIds: readonly number[]): Map<number, Shown>;
  adoptedBy(reasonIds: readonly number[]): Map<number, string[]>;
  /** reason id → ids of the rows it supersedes (`superseded_by` points at it). */
  corrects(reasonIds: readonly number[]): Map<number, number[]>;
  hasReadHit(reasonId: number, planId: string, moment: Moment): boolean;
  insertReadHit(row: {
    reason_id: number;
    project: string;
    plan_id: string | null;
    session_id?: string | null;
    step_id?: string | null;
    moment: Moment;
    at: string;
  }): number;
  /** `unstated` reason rows, of one node or the whole project, oldest first. */
  pending(project: string, nodeKey?: string): ReasonRow[];
  /** Active constraints never shown (no read_hit at any moment). */
  neverRead(project: string): ReasonRow[];
  search(project: string, words: string, limit: number): ReasonRow[];
  /** Earlier plans of the project whose `expectations` name the node (its key or qualified name). */
  priorClaims(
    project: string,
    names: readonly string[],
    exceptPlan?: string,
  ): { plan_id: string; claim: string; target: string }[];
  insertConstraint(row: { project: string; node_key: string; statement: string; at: string }): number;
  findConstraint(project: string, nodeKey: string, statement: string): ReasonRow | undefined;
  insertHeadline(row: {
    project: string;
    plan_id: string;
    session_id: string | null;
    findings_json: string;
    at: string;
  }): number;
  setPlanHeadline(planId: string, json: string): void;
  latestHeadline(planId: string): HeadlineRow | undefined;
  responses(headlineId: number): ResponseRow[];
  insertResponse(row: Omit<ResponseRow, "id">): number;
  insertInfluence(row: {
    reason_id: number;
    project: string;
    plan_id: string;
    session_id: string | null;
    node_key: string | null;
    by: string;
    at: string;
  }): number;
  /** The plan's `headline_response` influence rows. */
  adoptedCount(planId: string): number;
  /** Every current row the plan recorded, oldest first. */
  planReasons(planId: string): ReasonRow[];
}

const inList = (ids: readonly number[]) => ids.map(() => "?").join(",") || "NULL";

export class SqlWhyStore implements WhyStore {
  readonly #pg: boolean;

  constructor(private readonly sql: SqlPort) {
    this.#pg = sql.dialect === "postgres";
  }

  /** better-sqlite3's call shape over the door: positional arguments, or one named object. */
  private q(text: string) {
    const sql = this.sql;
    const args = (a: unknown[]): SqlArgs =>
      (a.length === 1 && a[0] !== null && typeof a[0] === "object" ? a[0] : a) as SqlArgs;
    return {
      get: (...a: unknown[]): unknown => sql.get(text, args(a)),
      all: (...a: unknown[]): unknown[] => sql.all(text, args(a)),
      run: (...a: unknown[]) => sql.run(text, args(a)),
    };
  }

  /** `project` as a filter the planner should not pick an index for: SQLite's unary `+`, plain on PostgreSQL. */
  private get plus(): string {
    return this.#pg ? "" : "+";
  }

  /** SQLite's LIKE ignores ASCII case; PostgreSQL's same match is ILIKE. */
  private get like(): string {
    return this.#pg ? "ILIKE" : "LIKE";
  }

  onNode(
    project: string,
    nodeKey: string,
    role: Role,
    opts: { limit?: number; activeOnly?: boolean } = {},
  ): ReasonRow[] {
    const active = opts.activeOnly ? "AND state = 'active'" : "";
    const notUnstated = role === "reason" ? "AND tier <> 'unstated'" : "";
    return this.q(
      `SELECT * FROM prov_change_reasons WHERE node_key = ? AND ${this.plus}project = ? AND ${this.plus}role = ? AND superseded_by IS NULL
         ${active} ${notUnstated} ORDER BY id DESC LIMIT ?`,
    ).all(nodeKey, project, role, opts.limit ?? (this.#pg ? null : -1)) as ReasonRow[];
  }

  counts(project: string, nodeKey: string): NodeCounts {
    return this.q(
      `SELECT
           coalesce(sum(CASE WHEN role = 'constraint' THEN 1 ELSE 0 END), 0) AS constraints,
           coalesce(sum(CASE WHEN role = 'constraint' AND state = 'active' THEN 1 ELSE 0 END), 0) AS active_constraints,
           coalesce(sum(CASE WHEN role = 'rejected_path' THEN 1 ELSE 0 END), 0) AS rejected,
           coalesce(sum(CASE WHEN role = 'reason' AND tier <> 'unstated' THEN 1 ELSE 0 END), 0) AS reasons,
           coalesce(sum(CASE WHEN role = 'reason' AND tier = 'unstated' THEN 1 ELSE 0 END), 0) AS pending
         FROM prov_change_reasons WHERE node_key = ? AND ${this.plus}project = ? AND superseded_by IS NULL`,
    ).get(nodeKey, project) as NodeCounts;
  }

  reasons(ids: readonly number[]): ReasonRow[] {
    if (!ids.length) return [];
    return this.q(`SELECT * FROM prov_change_reasons WHERE id IN (${inList(ids)})`).all(
      ...ids,
    ) as ReasonRow[];
  }

  utterance(id: number): UtteranceRow | undefined {
    return this.q("SELECT id, text, origin, occurred_at FROM prov_utterances WHERE id = ?").get(id) as
      | UtteranceRow
      | undefined;
  }

  sources(reasonIds: readonly number[]): SourceRow[] {
    if (!reasonIds.length) return [];
    return this.q(
      `SELECT l.reason_id, r.id AS reference_id, r.kind, r.label, r.uri, r.verifiability, l.stance, r.last_checked
         FROM prov_reference_links l JOIN prov_references r ON r.id = l.reference_id
         WHERE l.reason_id IN (${inList(reasonIds)}) ORDER BY l.reason_id, r.id`,
    ).all(...reasonIds) as SourceRow[];
  }

  shown(reasonIds: readonly number[]): Map<number, Shown> {
    const m = new Map<number, Shown>();
    for (const id of reasonIds) m.set(id, { plan: 0, edit: 0, close: 0, why: 0 });
    if (!reasonIds.length) return m;
    const rows = this.q(
      `SELECT reason_id, moment, count(*) AS n FROM prov_read_hits WHERE reason_id IN (${inList(reasonIds)}) GROUP BY reason_id, moment`,
    ).all(...reasonIds) as { reason_id: number; moment: Moment; n: number }[];
    for (const r of rows) {
      const s = m.get(r.reason_id);
      if (s) s[r.moment] = r.n;
    }
    return m;
  }

  adoptedBy(reasonIds: readonly number[]): Map<number, string[]> {
    const m = new Map<number, string[]>();
    if (!reasonIds.length) return m;
    const rows = this.q(
      `SELECT reason_id, plan_id FROM prov_influence WHERE reason_id IN (${inList(reasonIds)}) AND plan_id IS NOT NULL
         GROUP BY reason_id, plan_id ORDER BY min(id)`,
    ).all(...reasonIds) as { reason_id: number; plan_id: string }[];
    for (const r of rows) m.set(r.reason_id, [...(m.get(r.reason_id) ?? []), r.plan_id]);
    return m;
  }

  corrects(reasonIds: readonly number[]): Map<number, number[]> {
    const m = new Map<number, number[]>();
    if (!reasonIds.length) return m;
    const rows = this.q(
      `SELECT id, superseded_by FROM prov_change_reasons WHERE superseded_by IN (${inList(reasonIds)}) ORDER BY id`,
    ).all(...reasonIds) as { id: number; superseded_by: number }[];
    for (const r of rows) m.set(r.superseded_by, [...(m.get(r.superseded_by) ?? []), r.id]);
    return m;
  }

  hasReadHit(reasonId: number, planId: string, moment: Moment): boolean {
    return (
      this.q("SELECT 1 FROM prov_read_hits WHERE reason_id = ? AND plan_id = ? AND moment = ? LIMIT 1").get(
        reasonId,
        planId,
        moment,
      ) !== undefined
    );
  }

  insertReadHit(row: Parameters<WhyStore["insertReadHit"]>[0]): number {
    return insertRow(this.sql, "prov_read_hits", {
      reason_id: row.reason_id,
      project: row.project,
      plan_id: row.plan_id,
      session_id: row.session_id ?? null,
      step_id: row.step_id ?? null,
      moment: row.moment,
      at: row.at,
    });
  }

  pending(project: string, nodeKey?: string): ReasonRow[] {
    const node = nodeKey !== undefined ? "AND node_key = @nodeKey" : "";
    return this.q(
      `SELECT * FROM prov_change_reasons WHERE project = @project AND role = 'reason' AND tier = 'unstated'
         AND superseded_by IS NULL ${node} ORDER BY id`,
    ).all({ project, nodeKey }) as ReasonRow[];
  }

  neverRead(project: string): ReasonRow[] {
    return this.q(
      `SELECT c.* FROM prov_change_reasons c WHERE c.project = ? AND c.role = 'constraint' AND c.state = 'active'
         AND c.superseded_by IS NULL AND NOT EXISTS (SELECT 1 FROM prov_read_hits h WHERE h.reason_id = c.id) ORDER BY c.id`,
    ).all(project) as ReasonRow[];
  }

  search(project: string, words: string, limit: number): ReasonRow[] {
    // No full-text index in migration 10: a LIKE over statement, interpretation and quoted words.
    const terms = words.split(/\s+/).filter(Boolean);
    if (!terms.length) return [];
    const cond = terms
      .map(
        (_, i) =>
          `(coalesce(c.statement,'') || ' ' || coalesce(c.interpretation,'') || ' ' || coalesce(u.text,'')) ${this.like} @t${i} ESCAPE '\\'`,
      )
      .join(" AND ");
    const params: Record<string, string | number> = { project, limit };
    terms.forEach((t, i) => {
      params[`t${i}`] = `%${t.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    });
    return this.q(
      `SELECT c.* FROM prov_change_reasons c LEFT JOIN prov_utterances u ON u.id = c.verbatim_utterance_id
         WHERE c.project = @project AND c.superseded_by IS NULL AND ${cond} ORDER BY c.id DESC LIMIT @limit`,
    ).all(params) as ReasonRow[];
  }

  priorClaims(project: string, names: readonly string[], exceptPlan?: string) {
    const rows = this.q(
      `SELECT plan_id, extensions FROM plans WHERE project = ? AND plan_id IS DISTINCT FROM CAST(? AS TEXT) AND extensions ${this.like} '%"expectations"%' ORDER BY created_at DESC`,
    ).all(project, exceptPlan ?? null) as { plan_id: string; extensions: string }[];
    const out: { plan_id: string; claim: string; target: string }[] = [];
    for (const r of rows) {
      let ex: unknown;
      try {
        ex = (JSON.parse(r.extensions) as { expectations?: unknown }).expectations;
      } catch {
        continue;
      }
      if (!Array.isArray(ex)) continue;
      for (const e of ex) {
        if (e === null || typeof e !== "object") continue;
        const { target, claim } = e as { target?: unknown; claim?: unknown };
        if (typeof target === "string" && names.includes(target))
          out.push({
            plan_id: r.plan_id,
            target,
            claim: typeof claim === "string" ? claim : JSON.stringify(e),
          });
      }
    }
    return out;
  }

  insertConstraint(row: { project: string; node_key: string; statement: string; at: string }): number {
    return insertChained(this.sql, "prov_change_reasons", {
      project: row.project,
      node_key: row.node_key,
      plan_id: "extensions",
      kind: "organizational",
      role: "constraint",
      statement: row.statement,
      state: "active",
      occurred_at: row.at,
      recorded_at: row.at,
      recorded_by: "human",
      tier: "asserted",
    });
  }

  findConstraint(project: string, nodeKey: string, statement: string): ReasonRow | undefined {
    return this.q(
      "SELECT * FROM prov_change_reasons WHERE project = ? AND node_key = ? AND role = 'constraint' AND statement = ? ORDER BY id DESC LIMIT 1",
    ).get(project, nodeKey, statement) as ReasonRow | undefined;
  }

  insertHeadline(row: Parameters<WhyStore["insertHeadline"]>[0]): number {
    return insertRow(this.sql, "prov_headlines", row);
  }

  setPlanHeadline(planId: string, json: string): void {
    this.q("UPDATE plans SET headline_json = ? WHERE plan_id = ?").run(json, planId);
  }

  latestHeadline(planId: string): HeadlineRow | undefined {
    return this.q(
      "SELECT id, project, plan_id, findings_json, at FROM prov_headlines WHERE plan_id = ? ORDER BY id DESC LIMIT 1",
    ).get(planId) as HeadlineRow | undefined;
  }

  responses(headlineId: number): ResponseRow[] {
    return this.q("SELECT * FROM prov_headline_responses WHERE headline_id = ? ORDER BY id").all(
      headlineId,
    ) as ResponseRow[];
  }

  insertResponse(row: Omit<ResponseRow, "id">): number {
    return insertRow(this.sql, "prov_headline_responses", { ...row });
  }

  insertInfluence(row: Parameters<WhyStore["insertInfluence"]>[0]): number {
    return insertRow(this.sql, "prov_influence", { ...row, via: "headline_response" });
  }

  planReasons(planId: string): ReasonRow[] {
    return this.q(
      "SELECT * FROM prov_change_reasons WHERE plan_id = ? AND superseded_by IS NULL ORDER BY id",
    ).all(planId) as ReasonRow[];
  }

  adoptedCount(planId: string): number {
    return (
      this.q("SELECT count(*) AS n FROM prov_influence WHERE plan_id = ? AND via = 'headline_response'").get(
        planId,
      ) as { n: number }
    ).n;
  }
}
