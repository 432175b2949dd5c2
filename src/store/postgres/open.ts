/** Migrations on open, and the advisory lock ids the PostgreSQL store takes. */
import type { PgMigration } from "./migrations.js";
import type { SyncPg } from "./sync-client.js";

/**
 * The transaction-level advisory lock every write transaction takes first (`pg_advisory_xact_lock`):
 * one ledger writer at a time per database. Advisory locks are per database, so two workspaces in
 * two databases of one server never wait on each other. ('RTCH' as a 32-bit number.)
 */
export const WORKSPACE_WRITE_LOCK = 0x52544348;

/** The session-level advisory lock held while migrations run (several processes may open at once). */
export const MIGRATION_LOCK = 0x52544d47;

/**
 * Applies the migrations not yet recorded, each in its own transaction, under
 * {@link MIGRATION_LOCK}. Safe when several processes open the store at once: the second waits for
 * the lock, re-reads `schema_migrations` and finds nothing to do. Returns the ids it applied.
 */
export function migratePg(pg: SyncPg, migrations: readonly PgMigration[]): number[] {
  const known = () =>
    new Set(pg.query<{ id: number }>("SELECT id FROM schema_migrations").rows.map((r) => r.id));
  // Fast path: a migrated database needs no lock (one round trip when the table exists).
  const exists = pg.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t").rows[0]
    ?.t;
  if (exists) {
    const applied = known();
    if (migrations.every((m) => applied.has(m.id))) return [];
  }
  const done: number[] = [];
  pg.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
  try {
    pg.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    const applied = known();
    for (const m of migrations) {
      if (applied.has(m.id)) continue;
      pg.exec("BEGIN");
      try {
        pg.exec(m.sql);
        pg.query("INSERT INTO schema_migrations (id, name, applied_at) VALUES ($1, $2, $3)", [
          m.id,
          m.name,
          new Date().toISOString(),
        ]);
        pg.exec("COMMIT");
      } catch (err) {
        try {
          pg.exec("ROLLBACK");
        } catch {
          // connection lost: the server rolled back
        }
        throw err;
      }
      done.push(m.id);
    }
  } finally {
    try {
      pg.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`);
    } catch {
      // the lock ends with the session
    }
  }
  return done;
}
