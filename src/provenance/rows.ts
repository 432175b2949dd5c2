/**
 * Inserts into the provenance tables, through the store's SQL door on either store. Chained tables
 * get their `prev_hash`/`hash` here, from the table's newest row, inside the caller's transaction
 * (the store's `tx`), so two writers can never chain onto the same row; the hash is computed from
 * the values given, so identical rows give identical hashes on SQLite and PostgreSQL.
 *
 * Ids: SQLite's `INTEGER PRIMARY KEY` hands out `max(id) + 1`; on PostgreSQL a BEFORE INSERT
 * trigger of migration 5 computes the same `MAX(id) + 1` (under the workspace write lock every
 * `store.tx` holds), so one portable `INSERT … RETURNING id` gives the same dense ids on both
 * stores for the same writes, rollbacks included.
 */
import { type SqliteLike, SqliteSqlPort, type SqlPort } from "../store/sql.js";
import { chainHash } from "./chain.js";

/** Tables whose rows carry the hash chain. */
export const CHAINED_TABLES = [
  "prov_utterances",
  "prov_references",
  "prov_reference_checks",
  "prov_change_reasons",
] as const;
export type ChainedTable = (typeof CHAINED_TABLES)[number];

/** Provenance tables keyed otherwise than by an `id` (composite or text keys). */
const NO_ID = new Set(["prov_node_snapshots", "prov_node_events", "prov_node_cache"]);

type Row = Record<string, string | number | null>;

/** Where a row goes: a store's SQL door, or a bare better-sqlite3 handle (test fixtures, the bench). */
export type RowTarget = SqlPort | SqliteLike;

const ports = new WeakMap<SqliteLike, SqlPort>();
function portOf(t: RowTarget): SqlPort {
  if ("dialect" in t) return t;
  let p = ports.get(t);
  if (!p) {
    p = new SqliteSqlPort(t);
    ports.set(t, p);
  }
  return p;
}

/** Inserts one row and returns its id (0 for a table without one). Chained tables need a write transaction. */
export function insertRow(target: RowTarget, table: string, row: Row): number {
  const sql = portOf(target);
  const keys = Object.keys(row).filter((k) => row[k] !== undefined);
  const values: Row = {};
  for (const k of keys) values[k] = row[k] ?? null;
  const cols = keys.join(", ");
  const params = keys.map((k) => `@${k}`).join(", ");
  if (NO_ID.has(table)) {
    sql.run(`INSERT INTO ${table} (${cols}) VALUES (${params})`, values);
    return 0;
  }
  const text = `INSERT INTO ${table} (${cols}) VALUES (${params}) RETURNING id`;
  const r = sql.get<{ id: number | bigint }>(text, values);
  return Number(r?.id);
}

/** Inserts one row of a chained table, computing `prev_hash` and `hash`; returns its id. */
export function insertChained(target: RowTarget, table: ChainedTable, row: Row): number {
  const sql = portOf(target);
  if (!sql.inTransaction) throw new Error(`insertChained(${table}) must run inside a write transaction`);
  const last = sql.get<{ hash: string }>(`SELECT hash FROM ${table} ORDER BY id DESC LIMIT 1`);
  const prev = last?.hash ?? "";
  return insertRow(sql, table, { ...row, prev_hash: prev, hash: chainHash(row, prev) });
}
