import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import {
  ErrorCode,
  RatchetError,
  SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_PAGE_SIZE,
  SQLITE_WAL_CHECKPOINT_BYTES,
} from "../../core/index.js";
import { isPostgresUrl } from "../postgres/url.js";
import { sqliteOnly } from "../refusal.js";
import { MIGRATIONS, type Migration } from "./migrations.js";

export type SqliteDb = Database.Database;

/**
 * Opens (creating when asked) a SQLite database in WAL mode with a busy timeout, and applies every
 * pending migration inside one `BEGIN IMMEDIATE` transaction.
 */
export function openSqlite(
  path: string,
  opts: { create?: boolean; migrations?: readonly Migration[] } = {},
): SqliteDb {
  // A PostgreSQL workspace reaches SQLite-only code (runs, threads, the server) through its URL:
  // refuse it, naming the command, instead of creating a file called "postgres:".
  if (isPostgresUrl(path)) throw sqliteOnly();
  if (opts.create) mkdirSync(dirname(path), { recursive: true });
  let db: SqliteDb;
  try {
    db = new Database(path, { fileMustExist: !opts.create });
  } catch (err) {
    throw new RatchetError(
      ErrorCode.WorkspaceNotFound,
      `cannot open database ${path}: ${(err as Error).message}`,
      { path },
      { cause: err },
    );
  }
  db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  refuseForeignLedger(db, path);
  // The page size can only be chosen while the file is empty (before WAL mode writes its header).
  if (db.pragma("page_count", { simple: true }) === 0) db.pragma(`page_size = ${SQLITE_PAGE_SIZE}`);
  db.pragma("journal_mode = WAL");
  db.pragma(`wal_autocheckpoint = ${checkpointFrames(db)}`);
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  migrate(db, opts.migrations ?? MIGRATIONS);
  return db;
}

/** The WAL frames at which the store checkpoints (`SQLITE_WAL_CHECKPOINT_BYTES` in pages). */
export function checkpointFrames(db: SqliteDb): number {
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  return Math.max(1000, Math.floor(SQLITE_WAL_CHECKPOINT_BYTES / pageSize));
}

/**
 * Refuses a database another ledger made (the original's orchestrator.db: a `Steps` table and no
 * `schema_migrations`) before anything is written to it — not even the WAL switch.
 */
function refuseForeignLedger(db: SqliteDb, path: string): void {
  const has = (name: string) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE").get(name) !==
    undefined;
  if (has("steps") && !has("schema_migrations")) {
    db.close();
    throw new RatchetError(
      ErrorCode.WorkspaceNotFound,
      `database ${path} holds another ledger's tables (the original orchestrator.db?), not a Ratchet store: point RATCHET_DB/ORCH_DB at a Ratchet database, and bring the old records over with \`ratchet import provledger ${path}\``,
      { path },
    );
  }
}

/** Applies the migrations not yet recorded. Safe when several processes open the store at once. */
export function migrate(db: SqliteDb, migrations: readonly Migration[]): number[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT id FROM schema_migrations").all() as { id: number }[]).map((r) => r.id),
  );
  const pending = migrations.filter((m) => !applied.has(m.id));
  if (pending.length === 0) return [];
  const done: number[] = [];
  const run = db.transaction(() => {
    // Re-read inside the write lock: another process may have migrated meanwhile.
    const now = new Set(
      (db.prepare("SELECT id FROM schema_migrations").all() as { id: number }[]).map((r) => r.id),
    );
    for (const m of migrations) {
      if (now.has(m.id)) continue;
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)").run(
        m.id,
        m.name,
        new Date().toISOString(),
      );
      done.push(m.id);
    }
  });
  run.immediate();
  return done;
}
