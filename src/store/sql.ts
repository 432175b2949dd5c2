/**
 * The one SQL door every capability's area store uses (threads, provenance, the server's read
 * queries, …): statements written once in SQLite's placeholder syntax (`?` or `@name`), run on
 * either store. {@link SqlPort.dialect} names the store for the few statements that must differ
 * (JSON functions, upserts); everything else is portable SQL.
 *
 * Rules for portable statements:
 * - placeholders `?` (positional) or `@name` (named, from an object); never `$1` or `:name`;
 * - ids from `INSERT … RETURNING id` through {@link SqlPort.get} (SQLite ≥ 3.35 and PostgreSQL);
 * - `ON CONFLICT (…) DO NOTHING` / `DO UPDATE`, not `INSERT OR IGNORE` / `OR REPLACE`;
 * - booleans are integers 0/1 (`is_error = 1`), times ISO-8601 TEXT or epoch-ms integers;
 * - BLOB/BYTEA columns read back as `Buffer` on both stores.
 */

/** A value a statement parameter may take. `boolean` is stored as 1/0; `undefined` as NULL. */
export type SqlParam = string | number | bigint | boolean | null | undefined | Uint8Array;

/** Positional (`?`) or named (`@name`) parameters. */
export type SqlArgs = readonly SqlParam[] | Readonly<Record<string, SqlParam>>;

export interface SqlRunResult {
  /** Rows inserted, updated or deleted. */
  changes: number;
}

export type SqlDialect = "sqlite" | "postgres";

export interface SqlPort {
  readonly dialect: SqlDialect;
  /** The first row, or undefined. */
  get<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R | undefined;
  all<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R[];
  run(sql: string, args?: SqlArgs): SqlRunResult;
  /** Whether a write transaction (`store.tx`) is open on this connection. */
  readonly inTransaction: boolean;
}

const isNamed = (args: SqlArgs | undefined): args is Readonly<Record<string, SqlParam>> =>
  args !== undefined && !Array.isArray(args);

/** A translated statement: PostgreSQL text and how to order the caller's arguments. */
export interface PgStatement {
  text: string;
  /** Names in `$n` order when the statement uses `@name` placeholders; null for `?`. */
  names: string[] | null;
}

/**
 * Rewrites `?` / `@name` placeholders as `$1…$n`, leaving string literals, quoted identifiers and
 * comments untouched. A statement mixing both kinds is refused. A name used twice maps to one `$n`.
 * @throws Error on a mixed statement.
 */
export function toPgStatement(sql: string): PgStatement {
  let out = "";
  let n = 0;
  const names: string[] = [];
  let sawQ = false;
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === '"') {
      const end = closing(sql, i, ch);
      out += sql.slice(i, end);
      i = end;
      continue;
    }
    if (ch === "-" && sql[i + 1] === "-") {
      const nl = sql.indexOf("\n", i);
      const end = nl < 0 ? sql.length : nl;
      out += sql.slice(i, end);
      i = end;
      continue;
    }
    if (ch === "?") {
      sawQ = true;
      out += `$${++n}`;
      i++;
      continue;
    }
    if (ch === "@" && /[A-Za-z_]/.test(sql[i + 1] ?? "")) {
      let j = i + 1;
      while (j < sql.length && /[A-Za-z0-9_]/.test(sql[j] as string)) j++;
      const name = sql.slice(i + 1, j);
      let at = names.indexOf(name);
      if (at < 0) {
        names.push(name);
        at = names.length - 1;
      }
      out += `$${at + 1}`;
      i = j;
      continue;
    }
    out += ch;
    i++;
  }
  if (sawQ && names.length > 0) throw new Error(`a statement mixes ? and @name placeholders: ${sql}`);
  return { text: out, names: names.length > 0 ? names : null };
}

function closing(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return sql.length;
}

/** A parameter as the drivers take it: booleans as 1/0, undefined as NULL. */
export function normParam(v: SqlParam): Exclude<SqlParam, boolean | undefined> {
  if (v === undefined) return null;
  if (v === true) return 1;
  if (v === false) return 0;
  return v;
}

/**
 * The arguments of a translated statement, in `$n` order.
 * @throws Error naming a `@name` the caller did not give.
 */
export function pgArgs(
  stmt: PgStatement,
  args: SqlArgs | undefined,
): Exclude<SqlParam, boolean | undefined>[] {
  if (stmt.names) {
    if (!isNamed(args)) throw new Error(`statement needs named parameters (${stmt.names.join(", ")})`);
    return stmt.names.map((name) => {
      if (!(name in args)) throw new Error(`missing named parameter @${name}`);
      return normParam(args[name]);
    });
  }
  if (isNamed(args)) throw new Error("statement has ? placeholders but was given named parameters");
  return (args ?? []).map(normParam);
}

/** Arguments for better-sqlite3: a spread list or one object, booleans as 1/0, undefined as NULL. */
export function sqliteArgs(args: SqlArgs | undefined): unknown[] {
  if (args === undefined) return [];
  if (isNamed(args)) {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) o[k] = normParam(v);
    return [o];
  }
  return args.map(normParam);
}

/** Turns a bytea value that crossed a message port (a plain Uint8Array) back into a Buffer. */
function buffersIn<R>(row: R): R {
  if (row === null || typeof row !== "object") return row;
  const r = row as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    const v = r[k];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v))
      r[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return row;
}

/** What {@link PgSqlPort} needs of a session: `$n` queries with their rows and counts. */
export interface PgQueryable {
  query<R>(
    sql: string,
    params: readonly (string | number | null | Uint8Array)[],
  ): {
    rows: R[];
    rowCount: number;
  };
}

/** {@link SqlPort} over a synchronous PostgreSQL session; translations are cached per text. */
export class PgSqlPort implements SqlPort {
  readonly dialect = "postgres" as const;
  readonly #cache = new Map<string, PgStatement>();

  constructor(
    readonly pg: PgQueryable,
    readonly inTx: () => boolean,
  ) {}

  get inTransaction(): boolean {
    return this.inTx();
  }

  #stmt(sql: string): PgStatement {
    let s = this.#cache.get(sql);
    if (!s) {
      s = toPgStatement(sql);
      this.#cache.set(sql, s);
    }
    return s;
  }

  #query<R>(sql: string, args: SqlArgs | undefined) {
    const s = this.#stmt(sql);
    const params = pgArgs(s, args).map((v) => (typeof v === "bigint" ? v.toString() : v));
    return this.pg.query<R>(s.text, params);
  }

  get<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R | undefined {
    const row = this.#query<R>(sql, args).rows[0];
    return row === undefined ? undefined : buffersIn(row);
  }

  all<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R[] {
    return this.#query<R>(sql, args).rows.map(buffersIn);
  }

  run(sql: string, args?: SqlArgs): SqlRunResult {
    return { changes: this.#query(sql, args).rowCount };
  }
}

/** The subset of a better-sqlite3 database {@link SqliteSqlPort} uses. */
export interface SqliteLike {
  prepare(sql: string): {
    get(...a: unknown[]): unknown;
    all(...a: unknown[]): unknown[];
    run(...a: unknown[]): { changes: number };
  };
  readonly inTransaction: boolean;
}

/** {@link SqlPort} over better-sqlite3; statements are prepared once per text. */
export class SqliteSqlPort implements SqlPort {
  readonly dialect = "sqlite" as const;
  readonly #stmts = new Map<string, ReturnType<SqliteLike["prepare"]>>();

  constructor(readonly db: SqliteLike) {}

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  #stmt(sql: string) {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  get<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R | undefined {
    return this.#stmt(sql).get(...sqliteArgs(args)) as R | undefined;
  }

  all<R = Record<string, unknown>>(sql: string, args?: SqlArgs): R[] {
    return this.#stmt(sql).all(...sqliteArgs(args)) as R[];
  }

  run(sql: string, args?: SqlArgs): SqlRunResult {
    return { changes: this.#stmt(sql).run(...sqliteArgs(args)).changes };
  }
}
