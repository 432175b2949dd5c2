/**
 * A write transaction whose wait for the workspace write lock outlasts `statement_timeout` (a busy
 * database: another writer holds the lock) fails with 57014 — and leaves the session usable. Before
 * the fix, BEGIN had already run, the aborted block was never left, and every later statement of
 * the process failed with "current transaction is aborted": a queue worker that hit this once
 * failed every job it took afterwards (test/e2e/queue-workers.test.ts under full-suite load).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../../test/harness/pg.js";
import { WORKSPACE_WRITE_LOCK } from "./open.js";
import { PgStore } from "./pg-store.js";

let cluster: PgCluster;
let url: string;

beforeAll(async () => {
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
  url = cluster.createDatabase();
}, 120_000);
afterAll(() => cluster?.stop());

describe.runIf(pgAvailable())("PgStore.tx and the write lock", () => {
  test("a lock wait cut by statement_timeout fails that transaction only; the session writes again", () => {
    const holder = PgStore.open(url);
    const store = PgStore.open(url, { statementTimeoutMs: 300 });
    try {
      store.tx(() => store.sql.run("CREATE TABLE t (v TEXT)"));
      holder.pg.exec(`BEGIN; SELECT pg_advisory_xact_lock(${WORKSPACE_WRITE_LOCK})`);
      let ran = false;
      expect(() =>
        store.tx(() => {
          ran = true;
          store.sql.run("INSERT INTO t (v) VALUES ('never')");
        }),
      ).toThrow(expect.objectContaining({ code: "57014" }));
      expect(ran).toBe(false);
      // Still blocked by the holder: the same clear timeout again, not "transaction is aborted".
      expect(() => store.tx(() => store.sql.run("INSERT INTO t (v) VALUES ('never')"))).toThrow(
        expect.objectContaining({ code: "57014" }),
      );
      holder.pg.exec("COMMIT");
      store.tx(() => store.sql.run("INSERT INTO t (v) VALUES ('after')"));
      expect(store.sql.all<{ v: string }>("SELECT v FROM t")).toEqual([{ v: "after" }]);
      expect(store.pg.query<{ s: string }>("SELECT now()::text AS s").rows).toHaveLength(1);
    } finally {
      holder.close();
      store.close();
    }
  });
});
