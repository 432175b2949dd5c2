/**
 * Inserts into the provenance tables. Chained tables get their `prev_hash`/`hash` here, from the
 * table's newest row, inside the caller's transaction (the store's `tx`), so two writers can never
 * chain onto the same row.
 */
import type { SqliteDb } from "../store/index.js";
import { chainHash } from "./chain.js";

/** Tables whose rows carry the hash chain. */
export const CHAINED_TABLES = [
  "prov_utterances",
  "prov_references",
  "prov_reference_checks",
  "prov_change_reasons",
] as const;
export type ChainedTable = (typeof CHAINED_TABLES)[number];

type Row = Record<string, string | number | null>;

type Stmt = ReturnType<SqliteDb["prepare"]>;
const statements = new WeakMap<SqliteDb, Map<string, Stmt>>();

function prepared(db: SqliteDb, sql: string): Stmt {
  let m = statements.get(db);
  if (!m) {
    m = new Map();
    statements.set(db, m);
  }
  let s = m.get(sql);
  if (!s) {
    s = db.prepare(sql);
    m.set(sql, s);
  }
  return s;
}

/** Inserts one row and returns its id. Must run inside a write transaction for chained tables. */
export function insertRow(db: SqliteDb, table: string, row: Row): number {
  const keys = Object.keys(row).filter((k) => row[k] !== undefined);
  const sql = `INSERT INTO ${table} (${keys.join(", ")}) VALUES (${keys.map((k) => `@${k}`).join(", ")})`;
  const values: Row = {};
  for (const k of keys) values[k] = row[k] ?? null;
  return Number(prepared(db, sql).run(values).lastInsertRowid);
}

/** Inserts one row of a chained table, computing `prev_hash` and `hash`; returns its id. */
export function insertChained(db: SqliteDb, table: ChainedTable, row: Row): number {
  if (!db.inTransaction) throw new Error(`insertChained(${table}) must run inside a write transaction`);
  const last = prepared(db, `SELECT hash FROM ${table} ORDER BY id DESC LIMIT 1`).get({}) as
    | { hash: string }
    | undefined;
  const prev = last?.hash ?? "";
  return insertRow(db, table, { ...row, prev_hash: prev, hash: chainHash(row, prev) });
}
