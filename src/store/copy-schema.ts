/**
 * What `store copy` reads of a store's schema at run time, and the one way both sides read and hash
 * rows. Pure SQL through {@link SqlPort}: the dialect decides only where the catalogue lives
 * (`sqlite_master` / `pragma_table_info` on SQLite, `information_schema` on PostgreSQL).
 */
import { lazyBuiltin } from "../core/index.js";
import type { SqlDialect, SqlParam, SqlPort } from "./sql.js";

// node:crypto is loaded when a table is first digested (this module sits behind the store door).
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

/** A column of a table as the catalogue describes it. */
export interface ColumnInfo {
  name: string;
  /** A text column (compared byte-wise by the digest's order, whatever its collation). */
  text: boolean;
  /** PostgreSQL only: an identity column or one whose default is a sequence (`nextval`). */
  sequence: "always" | "default" | null;
}

/** `"name"`: every identifier is quoted (`by`, `trigger` and friends are column names here). */
export const q = (id: string): string => `"${id.replace(/"/g, '""')}"`;

/** The store's own tables (not SQLite's internal `sqlite_*` ones), by name. */
export function tablesOf(sql: SqlPort): Set<string> {
  const rows =
    sql.dialect === "sqlite"
      ? sql.all<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )
      : sql.all<{ name: string }>(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
        );
  return new Set(rows.map((r) => r.name));
}

/** The columns of `table` in their declared order (empty when there is no such table). */
export function columnsOf(sql: SqlPort, table: string): ColumnInfo[] {
  if (sql.dialect === "sqlite")
    return sql
      .all<{ name: string; type: string }>("SELECT name, type FROM pragma_table_info(?) ORDER BY cid", [
        table,
      ])
      .map((r) => ({ name: r.name, text: /CHAR|CLOB|TEXT/i.test(r.type), sequence: null }));
  return sql
    .all<{
      name: string;
      data_type: string;
      is_identity: string;
      identity_generation: string | null;
      dflt: string | null;
    }>(
      `SELECT column_name AS name, data_type, is_identity, identity_generation, column_default AS dflt
         FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`,
      [table],
    )
    .map((r) => ({
      name: r.name,
      text: ["text", "character varying", "character"].includes(r.data_type),
      sequence:
        r.is_identity === "YES"
          ? r.identity_generation === "ALWAYS"
            ? "always"
            : "default"
          : r.dflt?.startsWith("nextval(")
            ? "default"
            : null,
    }));
}

/** The primary-key columns of `table`, in key order (SQLite only: the registry test compares them). */
export function primaryKeyOf(sql: SqlPort, table: string): string[] {
  return sql
    .all<{ name: string }>("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", [table])
    .map((r) => r.name);
}

export const rowCount = (sql: SqlPort, table: string): number =>
  Number(sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q(table)}`)?.n ?? 0);

export const hasRows = (sql: SqlPort, table: string): boolean =>
  sql.get(`SELECT 1 AS one FROM ${q(table)} LIMIT 1`) !== undefined;

/** Whether any row of `table` holds a value in `column`. */
export const columnHasData = (sql: SqlPort, table: string, column: string): boolean =>
  sql.get(`SELECT 1 AS one FROM ${q(table)} WHERE ${q(column)} IS NOT NULL LIMIT 1`) !== undefined;

/** How one side reads a table: physical columns, columns computed by an SQL expression, the order. */
export interface ReadPlan {
  table: string;
  /** Column name → SQL: the column itself (quoted) or an expression standing in for it. */
  columns: ReadonlyMap<string, string>;
  /** A unique order: SQL expressions (`"id"`, `rowid`, `"plan_id" COLLATE "C"`). */
  order: readonly string[];
}

const ORDER_ALIAS = "__copy_o";

/**
 * Reads a table in pages of `pageRows` along `plan.order` (keyset paging with row values, so a page
 * costs the same at the end of a large table as at its start), handing each page to `each`.
 */
export function readPages(
  sql: SqlPort,
  plan: ReadPlan,
  pageRows: number,
  each: (rows: Record<string, unknown>[]) => void,
): void {
  const select = [
    ...[...plan.columns].map(([name, expr]) => `${expr} AS ${q(name)}`),
    ...plan.order.map((o, i) => `${o} AS ${q(`${ORDER_ALIAS}${i}`)}`),
  ].join(", ");
  const order = plan.order.join(", ");
  const first = `SELECT ${select} FROM ${q(plan.table)} ORDER BY ${order} LIMIT ?`;
  const next = `SELECT ${select} FROM ${q(plan.table)} WHERE (${order}) > (${plan.order.map(() => "?").join(", ")}) ORDER BY ${order} LIMIT ?`;
  let after: SqlParam[] | undefined;
  for (;;) {
    const rows = after
      ? sql.all<Record<string, unknown>>(next, [...after, pageRows])
      : sql.all<Record<string, unknown>>(first, [pageRows]);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1] as Record<string, unknown>;
    after = plan.order.map((_, i) => last[`${ORDER_ALIAS}${i}`] as SqlParam);
    for (const r of rows) for (let i = 0; i < plan.order.length; i++) delete r[`${ORDER_ALIAS}${i}`];
    each(rows);
    if (rows.length < pageRows) return;
  }
}

/**
 * The order expression of a key column: text byte-wise on both stores (SQLite's BINARY equals
 * PostgreSQL's "C" on UTF-8), so a digest does not depend on a database's locale or a column's
 * collation.
 */
export function keyOrder(dialect: SqlDialect, col: ColumnInfo): string {
  if (!col.text) return q(col.name);
  return `${q(col.name)} COLLATE ${dialect === "postgres" ? '"C"' : "BINARY"}`;
}

/**
 * A value as both stores hand it over, in one canonical form: bytes as `{"$bytes": base64}`,
 * booleans as 1/0 (SQLite has no boolean), bigints as decimal strings, dates as ISO text.
 */
export function canonicalValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array)
    return { $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "object") return JSON.stringify(v);
  return v;
}

/** A value as a statement parameter on the other store (dates and JSON values as text). */
export function paramValue(v: unknown): SqlParam {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array || typeof v === "string" || typeof v === "number" || typeof v === "bigint")
    return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (v instanceof Date) return v.toISOString();
  return JSON.stringify(v);
}

/** The count and content hash of a table over `columns` (sorted by name), rows in `key` order. */
export interface TableDigest {
  rows: number;
  /** sha256 (hex) over the column list, then one canonical JSON array per row, each + "\n". */
  hash: string;
}

/**
 * Digests a table the same way on either store: rows ordered by the primary key, each row the JSON
 * array of its canonical values in column-name order. Equal digests on two stores mean the same
 * rows with the same values, whatever the column order or driver types.
 */
export function digestTable(
  sql: SqlPort,
  table: string,
  columns: ReadonlyMap<string, string>,
  /** The key's order expressions ({@link keyOrder}). */
  key: readonly string[],
  pageRows: number,
): TableDigest {
  const names = [...columns.keys()].sort();
  const h = crypto().createHash("sha256");
  h.update(`${JSON.stringify(names)}\n`);
  let rows = 0;
  readPages(sql, { table, columns, order: key }, pageRows, (page) => {
    for (const r of page) h.update(`${JSON.stringify(names.map((n) => canonicalValue(r[n])))}\n`);
    rows += page.length;
  });
  return { rows, hash: h.digest("hex") };
}

export type { SqlDialect };
