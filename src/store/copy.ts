/**
 * `ratchet store copy`: every Ratchet table of one store into another (SQLite ⇄ PostgreSQL), ids
 * kept, then checked by row counts and content hashes; the blobs with them. One registry
 * ({@link COPY_TABLES}) names the tables in dependency order; the columns come from each side's
 * catalogue at run time, so a column or table added by a later migration is copied without an edit
 * here as long as both sides have it — and refused, never dropped, when only the source does.
 *
 * Atomicity: the whole copy — the emptiness check, every row, every blob of a table target, the
 * sequence reset and the verification — runs in ONE transaction of the target (`store.tx`: on
 * PostgreSQL it also holds the workspace write lock, so no ledger write interleaves). Any refusal,
 * mismatch or crash (kill -9) rolls it back: the target holds either the whole verified copy or no
 * rows at all, and the next `store copy` starts again from the beginning. Blob files written into a
 * folder target are the one thing a rollback leaves: content-addressed, valid, reused by the next
 * copy. The source is read inside one read-only snapshot, so a writer on it during the copy changes
 * nothing in what is copied.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import { type BlobDigest, type BlobHome, copyBlobs, digestBlobs } from "./copy-blobs.js";
import { insertRows, planAll, planTable, refuse, resetSequences, type TablePlan } from "./copy-plan.js";
import { digestTable, hasRows, readPages, rowCount, tablesOf } from "./copy-schema.js";
import { PgStore } from "./postgres/pg-store.js";
import type { SqlDialect } from "./sql.js";
import { SqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./types.js";

/** One copyable table. */
export interface CopyTable {
  /** The table's name on both stores. */
  name: string;
  /** Which capability writes it (for the report). */
  area: "ledger" | "runs" | "threads" | "provenance";
  /** Its primary key: rows are digested in this order on both sides. */
  key: readonly string[];
  /**
   * The order a PostgreSQL source is read (and a SQLite target therefore written) in, when
   * insertion order means something on SQLite (its `rowid` breaks ties); default `key`. A SQLite
   * source is always read in `rowid` order. Used only when every column exists on the source.
   */
  pgOrder?: readonly string[];
  /**
   * Columns one store keeps only implicitly, as an SQL expression over the table: PostgreSQL's
   * `workflow_step_runs.seq` is SQLite's `rowid` order within the run.
   */
  implicit?: Partial<Record<SqlDialect, Readonly<Record<string, string>>>>;
}

/**
 * Every table `store copy` copies, parents before children (foreign keys hold at every insert).
 * The thread tables (PostgreSQL migration 4) and the provenance tables (migration 5) are listed
 * already: while the target lacks one, a source with rows in it is refused naming it, and an empty
 * one is skipped with a note.
 */
export const COPY_TABLES: readonly CopyTable[] = [
  // ledger (PostgreSQL migration 1)
  { name: "projects", area: "ledger", key: ["name"], pgOrder: ["created_at", "name"] },
  { name: "plans", area: "ledger", key: ["plan_id"], pgOrder: ["created_at", "plan_id"] },
  // Parents have the smaller depth: depth order keeps `parent_step_id` pointing at a copied row.
  { name: "steps", area: "ledger", key: ["step_id"], pgOrder: ["depth", "seq", "created_at", "step_id"] },
  { name: "step_logs", area: "ledger", key: ["id"] },
  { name: "deviations", area: "ledger", key: ["id"] },
  { name: "skills", area: "ledger", key: ["id"] },
  { name: "metrics", area: "ledger", key: ["id"] },
  { name: "events", area: "ledger", key: ["id"] },
  // runs (migration 2)
  { name: "workflow_runs", area: "runs", key: ["run_id"], pgOrder: ["started_at", "run_id"] },
  {
    name: "workflow_step_runs",
    area: "runs",
    key: ["run_id", "step_id"],
    pgOrder: ["run_id", "seq", "step_id"],
    implicit: {
      sqlite: {
        seq: "(SELECT COUNT(*) FROM workflow_step_runs AS o WHERE o.run_id = workflow_step_runs.run_id AND o.rowid < workflow_step_runs.rowid)",
      },
    },
  },
  // threads, approvals, missions, documents (migration 4)
  { name: "threads", area: "threads", key: ["thread_id"], pgOrder: ["created_at", "thread_id"] },
  { name: "thread_messages", area: "threads", key: ["id"] },
  { name: "thread_checkpoints", area: "threads", key: ["thread_id"] },
  { name: "thread_vms", area: "threads", key: ["thread_id"] },
  { name: "thread_journal", area: "threads", key: ["thread_id", "seq"] },
  { name: "thread_actions", area: "threads", key: ["thread_id", "call_id"] },
  { name: "thread_approvals", area: "threads", key: ["approval_id"] },
  { name: "thread_leases", area: "threads", key: ["lease_id"] },
  { name: "thread_inbox", area: "threads", key: ["id"] },
  { name: "action_grants", area: "threads", key: ["action", "project"] },
  { name: "documents", area: "threads", key: ["doc_id"] },
  { name: "orchestrator_failures", area: "threads", key: ["version"] },
  { name: "mission_runs", area: "threads", key: ["id"] },
  // provenance (migration 5)
  { name: "prov_analysis_runs", area: "provenance", key: ["id"] },
  { name: "prov_node_snapshots", area: "provenance", key: ["run_id", "node_key"] },
  { name: "prov_node_events", area: "provenance", key: ["run_id", "seq"] },
  { name: "prov_utterances", area: "provenance", key: ["id"] },
  { name: "prov_references", area: "provenance", key: ["id"] },
  { name: "prov_change_reasons", area: "provenance", key: ["id"] },
  { name: "prov_reference_links", area: "provenance", key: ["id"] },
  { name: "prov_reference_checks", area: "provenance", key: ["id"] },
  { name: "prov_trigger_log", area: "provenance", key: ["id"] },
  { name: "prov_read_hits", area: "provenance", key: ["id"] },
  { name: "prov_influence", area: "provenance", key: ["id"] },
  { name: "prov_headlines", area: "provenance", key: ["id"] },
  { name: "prov_headline_responses", area: "provenance", key: ["id"] },
];

/** Tables `store copy` leaves out on purpose, and why (a test fails on a table in neither list). */
export const COPY_SKIPPED: Readonly<Record<string, string>> = {
  schema_migrations: "each store records its own migrations (the openers apply them)",
  blobs: "copied as blobs, by hash, to the target's blob home (folder or table)",
  prov_node_cache:
    "a parse cache keyed by content (migration 11): rebuilt by the next `graph refresh`, losing nothing but time",
};

/** One side of a copy: an open store, where its blobs live, and how to name it (no password). */
export interface CopyEnd {
  label: string;
  store: Store;
  blobs: BlobHome;
}

export interface CopyOptions {
  /** Rows read and written per statement (default 500; fewer when a table has many columns). */
  batchRows?: number;
  /** A line per step of the copy (the CLI prints them on stderr). */
  onProgress?: (line: string) => void;
  /** The `created_at` of blobs that come from a folder without a time (default: now). */
  now?: () => string;
}

/** The verdict on one table. */
export interface TableCheck {
  table: string;
  rows: number;
  targetRows: number;
  hash: string;
  targetHash: string;
  ok: boolean;
  /** Why the table was skipped or differs. */
  note?: string;
}

export interface BlobCheck {
  count: number;
  targetCount: number;
  bytes: number;
  hash: string;
  targetHash: string;
  ok: boolean;
}

export interface CopyReport {
  ok: boolean;
  /** Whether the target transaction committed (false: nothing was written). */
  committed: boolean;
  from: string;
  to: string;
  tables: TableCheck[];
  blobs: BlobCheck;
  notes: string[];
}

const DEFAULT_BATCH_ROWS = 500;
/** The first table of `end` with rows (registry tables, then the blobs table), or undefined. */
function firstNonEmpty(end: CopyEnd): string | undefined {
  const tables = tablesOf(end.store.sql);
  for (const t of COPY_TABLES) if (tables.has(t.name) && hasRows(end.store.sql, t.name)) return t.name;
  if (end.blobs.kind === "table" && tables.has("blobs") && hasRows(end.store.sql, "blobs")) return "blobs";
  return undefined;
}

/** Runs `fn` inside a read-only snapshot of the source (SQLite deferred transaction / REPEATABLE READ). */
function inSnapshot<T>(store: Store, fn: () => T): T {
  let end = () => {};
  if (store instanceof SqliteStore) {
    if (!store.db.inTransaction) {
      store.db.exec("BEGIN DEFERRED");
      end = () => store.db.exec("ROLLBACK");
    }
  } else if (store instanceof PgStore) {
    store.pg.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    end = () => store.pg.exec("ROLLBACK");
  }
  let result: T;
  try {
    result = fn();
  } catch (err) {
    try {
      end();
    } catch {
      // the session is gone: its snapshot went with it
    }
    throw err;
  }
  end();
  return result;
}

/** Compares every planned table and the blobs of two ends (both read in their current snapshot). */
function compare(
  from: CopyEnd,
  to: CopyEnd,
  plans: readonly TablePlan[],
  batch: number,
  blobsFrom: BlobDigest,
): { tables: TableCheck[]; blobs: BlobCheck } {
  const tables = plans.map((p): TableCheck => {
    const a = digestTable(from.store.sql, p.table.name, p.digestFrom, p.keyFrom, batch);
    const b = digestTable(to.store.sql, p.table.name, p.digestTo, p.keyTo, batch);
    const ok = a.rows === b.rows && a.hash === b.hash;
    return {
      table: p.table.name,
      rows: a.rows,
      targetRows: b.rows,
      hash: a.hash,
      targetHash: b.hash,
      ok,
      ...(ok
        ? {}
        : { note: a.rows !== b.rows ? `${a.rows} rows vs ${b.rows}` : "same rows, different content" }),
    };
  });
  const b = digestBlobs(to.blobs, to.label, "to");
  return {
    tables,
    blobs: {
      count: blobsFrom.count,
      targetCount: b.count,
      bytes: blobsFrom.bytes,
      hash: blobsFrom.hash,
      targetHash: b.hash,
      ok: b.count === blobsFrom.count && b.hash === blobsFrom.hash,
    },
  };
}

class Mismatch extends Error {
  constructor(readonly result: { tables: TableCheck[]; blobs: BlobCheck }) {
    super("store copy: verification failed");
  }
}

/** The first table (or "blobs") that differs, for the error and the exit status. */
export function firstMismatch(r: Pick<CopyReport, "tables" | "blobs">): string | undefined {
  return r.tables.find((t) => !t.ok)?.table ?? (r.blobs.ok ? undefined : "blobs");
}

/**
 * Copies every Ratchet table and blob of `from` into `to` and verifies the copy, in one transaction
 * of the target (see the module comment). Returns the report; `ok:false, committed:false` when the
 * verification found a difference (nothing was written).
 * @throws invalid_value (field `to`) when the target already holds Ratchet data, naming the first
 *   non-empty table; (field `from`/`to`) when a table or column with data has no place on the
 *   target, a value is refused by the target, or a blob's bytes do not match its hash.
 */
export function copyStore(from: CopyEnd, to: CopyEnd, opts: CopyOptions = {}): CopyReport {
  if (from.label === to.label)
    throw refuse("to", `store copy: from and to are the same store (${to.label})`, { to: to.label });
  const batch = Math.max(1, Math.floor(opts.batchRows ?? DEFAULT_BATCH_ROWS));
  const say = opts.onProgress ?? (() => {});
  const now = opts.now ?? (() => new Date().toISOString());
  const notes: string[] = [];
  try {
    return inSnapshot(from.store, () =>
      to.store.tx(() => {
        // Checked under the target's write lock: two copies into one empty store cannot both pass.
        const busy = firstNonEmpty(to);
        if (busy)
          throw refuse(
            "to",
            `store copy: ${to.label} already holds Ratchet data (table ${busy} has rows): store copy writes only into an empty store; nothing was written`,
            { table: busy, to: to.label },
          );
        const plans = planAll(from, to, { tables: COPY_TABLES, skipped: COPY_SKIPPED }, notes);
        for (const p of plans) {
          const n = rowCount(from.store.sql, p.table.name);
          if (n > 0) say(`copying ${p.table.name} (${n} rows)`);
          readPages(from.store.sql, p.read, batch, (rows) => insertRows(to, p, rows, batch));
          resetSequences(to, p);
        }
        const blobs = copyBlobs(from.blobs, to.blobs, { from: from.label, to: to.label }, now);
        say(`copied ${blobs.count} blobs; verifying`);
        const result = compare(from, to, plans, batch, blobs);
        if (firstMismatch(result)) throw new Mismatch(result);
        return { ok: true, committed: true, from: from.label, to: to.label, ...result, notes };
      }),
    );
  } catch (err) {
    if (err instanceof Mismatch)
      return { ok: false, committed: false, from: from.label, to: to.label, ...err.result, notes };
    throw err;
  }
}

/**
 * Compares two stores the way `copyStore` verifies a copy, writing nothing: per registry table the
 * row count and content hash, and the blob sets. A table or column holding data on one side only
 * is a difference.
 */
export function verifyStores(a: CopyEnd, b: CopyEnd, opts: Pick<CopyOptions, "batchRows"> = {}): CopyReport {
  const batch = Math.max(1, Math.floor(opts.batchRows ?? DEFAULT_BATCH_ROWS));
  const notes: string[] = [];
  return inSnapshot(a.store, () =>
    inSnapshot(b.store, () => {
      const plans: TablePlan[] = [];
      const missing: TableCheck[] = [];
      const here = tablesOf(a.store.sql);
      const there = tablesOf(b.store.sql);
      for (const t of COPY_TABLES) {
        const one = (x: CopyEnd, hx: Set<string>, hy: Set<string>) =>
          hx.has(t.name) && !hy.has(t.name) ? rowCount(x.store.sql, t.name) : undefined;
        const onlyA = one(a, here, there);
        const onlyB = one(b, there, here);
        if (onlyA !== undefined || onlyB !== undefined || (!here.has(t.name) && !there.has(t.name))) {
          const ok = !onlyA && !onlyB;
          if (ok) notes.push(`${t.name}: not on both sides, no rows: skipped`);
          else
            missing.push({
              table: t.name,
              rows: onlyA ?? 0,
              targetRows: onlyB ?? 0,
              hash: "",
              targetHash: "",
              ok,
              note: `no table ${t.name} in ${onlyA !== undefined ? b.label : a.label}`,
            });
          continue;
        }
        try {
          const p = planTable(a, b, t, here, there);
          const back = planTable(b, a, t, there, here);
          if (p.kind === "copy" && back.kind === "copy") plans.push(p.plan);
        } catch (err) {
          if (!(err instanceof RatchetError) || err.code !== ErrorCode.InvalidValue) throw err;
          missing.push({
            table: t.name,
            rows: rowCount(a.store.sql, t.name),
            targetRows: rowCount(b.store.sql, t.name),
            hash: "",
            targetHash: "",
            ok: false,
            note: err.message,
          });
        }
      }
      const blobsA = digestBlobs(a.blobs, a.label, "from");
      const result = compare(a, b, plans, batch, blobsA);
      const byName = new Map([...result.tables, ...missing].map((t) => [t.table, t]));
      const tables = COPY_TABLES.map((t) => byName.get(t.name)).filter((t): t is TableCheck => !!t);
      const report = { from: a.label, to: b.label, tables, blobs: result.blobs, notes };
      return { ok: !firstMismatch(report), committed: false, ...report };
    }),
  );
}
