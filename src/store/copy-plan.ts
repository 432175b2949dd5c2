/**
 * How `store copy` moves one table: what of it both catalogues can hold (refusing data that would
 * be lost), the order it is read in, how its rows are inserted on the target, and the sequences a
 * PostgreSQL target moves past the copied ids.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import type { CopyEnd, CopyTable } from "./copy.js";
import {
  type ColumnInfo,
  columnHasData,
  columnsOf,
  hasRows,
  keyOrder,
  paramValue,
  q,
  type ReadPlan,
  rowCount,
  tablesOf,
} from "./copy-schema.js";
import type { SqlDialect, SqlParam, SqlPort } from "./sql.js";

/** Parameters per statement (below SQLite's 32766 and PostgreSQL's 65535). */
const MAX_PARAMS = 30_000;

/** How one table moves from one store to the other. */
export interface TablePlan {
  table: CopyTable;
  /** Columns inserted on the target, each read from the source by its expression. */
  read: ReadPlan;
  /** Column → expression on each side, for the digest (what both sides can express). */
  digestFrom: Map<string, string>;
  digestTo: Map<string, string>;
  /** The key's order expressions on each side (text byte-wise). */
  keyFrom: string[];
  keyTo: string[];
  /** PostgreSQL target: an identity column the insert must override, sequences to move past the ids. */
  overriding: boolean;
  sequences: string[];
}

export type Planned = { kind: "copy"; plan: TablePlan } | { kind: "skip"; table: string; note: string };

export const refuse = (field: "from" | "to", message: string, details: Record<string, unknown> = {}) =>
  new RatchetError(ErrorCode.InvalidValue, message, { field, ...details });

/** Column name → expression on a side: physical columns quoted, implicit ones as their SQL. */
function sideColumns(cols: readonly ColumnInfo[], t: CopyTable, dialect: SqlDialect): Map<string, string> {
  const m = new Map<string, string>(cols.map((c) => [c.name, q(c.name)]));
  for (const [name, expr] of Object.entries(t.implicit?.[dialect] ?? {})) if (!m.has(name)) m.set(name, expr);
  return m;
}

/**
 * Decides, from both catalogues, what of one table is copied. A source table or column the target
 * cannot hold is refused when it holds data and skipped (with a note) when it does not.
 * @throws invalid_value naming the table (and column) that would lose data.
 */
export function planTable(
  from: CopyEnd,
  to: CopyEnd,
  t: CopyTable,
  here: Set<string>,
  there: Set<string>,
): Planned {
  const src = from.store.sql;
  const dst = to.store.sql;
  if (!here.has(t.name)) return { kind: "skip", table: t.name, note: `not in ${from.label}` };
  if (!there.has(t.name)) {
    const n = rowCount(src, t.name);
    if (n > 0)
      throw refuse(
        "to",
        `store copy: ${to.label} has no table ${t.name} (its migration is not in this version of Ratchet's ${dst.dialect} store), but ${from.label} holds ${n} rows in it: refusing rather than dropping them; nothing was written`,
        { table: t.name },
      );
    return { kind: "skip", table: t.name, note: `no table in ${to.label}; none in ${from.label} either` };
  }
  const srcPhys = columnsOf(src, t.name);
  const dstPhys = columnsOf(dst, t.name);
  const srcCols = sideColumns(srcPhys, t, src.dialect);
  const dstCols = sideColumns(dstPhys, t, dst.dialect);
  const dstNames = new Set(dstPhys.map((c) => c.name));
  const srcNames = new Set(srcPhys.map((c) => c.name));
  for (const [name] of srcCols) {
    if (dstCols.has(name)) continue;
    if (srcNames.has(name) && columnHasData(src, t.name, name))
      throw refuse(
        "to",
        `store copy: ${to.label} has no column ${t.name}.${name}, but ${from.label} holds values in it: refusing rather than dropping them; nothing was written`,
        { table: t.name, column: name },
      );
  }
  for (const k of t.key)
    if (!srcNames.has(k) || !dstNames.has(k))
      throw new RatchetError(
        ErrorCode.Internal,
        `store copy: key column ${t.name}.${k} is missing on a side`,
      );
  const insert = new Map([...srcCols].filter(([name]) => dstNames.has(name)));
  const common = [...srcCols.keys()].filter((n) => dstCols.has(n));
  const keyOf = (cols: readonly ColumnInfo[], dialect: SqlDialect) =>
    t.key.map((k) => keyOrder(dialect, cols.find((c) => c.name === k) as ColumnInfo));
  const keyFrom = keyOf(srcPhys, src.dialect);
  const order =
    src.dialect === "sqlite"
      ? hasRowid(src, t.name)
        ? ["rowid"]
        : keyFrom
      : t.pgOrder?.every((c) => srcNames.has(c))
        ? t.pgOrder.map(q)
        : keyFrom;
  return {
    kind: "copy",
    plan: {
      table: t,
      read: { table: t.name, columns: insert, order },
      digestFrom: new Map(common.map((n) => [n, srcCols.get(n) as string])),
      digestTo: new Map(common.map((n) => [n, dstCols.get(n) as string])),
      keyFrom,
      keyTo: keyOf(dstPhys, dst.dialect),
      overriding: dstPhys.some((c) => c.sequence === "always" && insert.has(c.name)),
      sequences: dstPhys.filter((c) => c.sequence !== null && insert.has(c.name)).map((c) => c.name),
    },
  };
}

/** Whether a SQLite table has a `rowid` (is not `WITHOUT ROWID`): its insertion order. */
const hasRowid = (sql: SqlPort, table: string): boolean =>
  !/without\s+rowid/i.test(
    sql.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table])
      ?.sql ?? "",
  );

/** Plans every registry table; refuses a source table nobody knows when it holds rows. */
export function planAll(
  from: CopyEnd,
  to: CopyEnd,
  registry: { tables: readonly CopyTable[]; skipped: Readonly<Record<string, string>> },
  notes: string[],
): TablePlan[] {
  const here = tablesOf(from.store.sql);
  const there = tablesOf(to.store.sql);
  const known = new Set([...registry.tables.map((t) => t.name), ...Object.keys(registry.skipped)]);
  for (const name of [...here].sort()) {
    if (known.has(name)) continue;
    if (hasRows(from.store.sql, name))
      throw refuse(
        "from",
        `store copy: ${from.label} has a table ${name} that store copy does not know (written by a newer Ratchet?), with rows in it: refusing rather than dropping them; nothing was written`,
        { table: name },
      );
    notes.push(`${name}: unknown table, empty: skipped`);
  }
  const plans: TablePlan[] = [];
  for (const t of registry.tables) {
    const p = planTable(from, to, t, here, there);
    if (p.kind === "copy") plans.push(p.plan);
    else notes.push(`${p.table}: ${p.note}: skipped`);
  }
  return plans;
}

/** A target refusal of rows (a value its column type cannot hold, a constraint): not a bug of ours. */
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string") return false;
  return /^(22|23)/.test(code) || code.startsWith("SQLITE_CONSTRAINT") || code === "SQLITE_MISMATCH";
}

export function insertRows(
  to: CopyEnd,
  plan: TablePlan,
  rows: Record<string, unknown>[],
  batch: number,
): void {
  const cols = [...plan.read.columns.keys()];
  const per = Math.max(1, Math.min(batch, Math.floor(MAX_PARAMS / Math.max(1, cols.length))));
  const head = `INSERT INTO ${q(plan.table.name)} (${cols.map(q).join(", ")})${plan.overriding ? " OVERRIDING SYSTEM VALUE" : ""} VALUES `;
  const tuple = `(${cols.map(() => "?").join(", ")})`;
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    const params: SqlParam[] = [];
    for (const r of chunk) for (const c of cols) params.push(paramValue(r[c]));
    try {
      to.store.sql.run(head + chunk.map(() => tuple).join(", "), params);
    } catch (err) {
      if (!isDataError(err)) throw err;
      const key = (r: Record<string, unknown> | undefined) =>
        plan.table.key.map((k) => `${k}=${JSON.stringify(r?.[k])}`).join(",");
      const msg = String((err as Error).message).split(" (in: ")[0];
      throw refuse(
        "from",
        `store copy: ${to.label} refused rows of ${plan.table.name} (${key(chunk[0])} … ${key(chunk[chunk.length - 1])}): ${msg}; nothing was written`,
        { table: plan.table.name },
      );
    }
  }
}

/** PostgreSQL target: moves each sequence behind a copied column past the largest copied id. */
export function resetSequences(to: CopyEnd, plan: TablePlan): void {
  if (to.store.sql.dialect !== "postgres") return;
  for (const c of plan.sequences)
    to.store.sql.get(
      `SELECT setval(pg_get_serial_sequence(?, ?), COALESCE(MAX(${q(c)}), 0) + 1, false) AS v FROM ${q(plan.table.name)}`,
      [q(plan.table.name), c],
    );
}
