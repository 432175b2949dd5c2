/**
 * The synchronous bridge against a real PostgreSQL server: values and errors cross intact, the
 * session's statement timeout holds, a dead worker never hangs the caller, close() is clean.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../../test/harness/pg.js";
import { isRatchetError } from "../../core/index.js";
import { PgError, SyncPg, storeBroken } from "./sync-client.js";

let cluster: PgCluster;
let url: string;

beforeAll(async () => {
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
  url = cluster.createDatabase();
  console.log(`pg harness: initdb + start ${cluster.startSeconds.toFixed(2)} s`);
}, 120_000);
afterAll(() => cluster?.stop());

describe.runIf(pgAvailable())("SyncPg", () => {
  test("returns rows synchronously, with BIGINT and NUMERIC as numbers and NULL as null", () => {
    const pg = new SyncPg(url);
    try {
      const r = pg.query<{ n: number; big: number; num: number; t: string; z: null }>(
        "SELECT 1 AS n, $1::bigint AS big, 2.5::numeric AS num, $2::text AS t, NULL AS z",
        [1_700_000_000_123, "héllo"],
      );
      expect(r.rows).toEqual([{ n: 1, big: 1_700_000_000_123, num: 2.5, t: "héllo", z: null }]);
      expect(r.rowCount).toBe(1);
      pg.exec("CREATE TABLE x (id INT PRIMARY KEY, v TEXT); INSERT INTO x VALUES (1, 'a'), (2, 'b')");
      expect(pg.query("SELECT COUNT(*) AS n FROM x").rows).toEqual([{ n: 2 }]);
      expect(pg.query("UPDATE x SET v = 'c' WHERE id > $1", [0]).rowCount).toBe(2);
    } finally {
      pg.close();
    }
  });

  test("a server error crosses with its SQLSTATE and message, and the session stays usable", () => {
    const pg = new SyncPg(url);
    try {
      pg.exec("CREATE TABLE u (id INT PRIMARY KEY)");
      pg.query("INSERT INTO u VALUES ($1)", [1]);
      let caught: unknown;
      try {
        pg.query("INSERT INTO u VALUES ($1)", [1]);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(PgError);
      expect((caught as PgError).code).toBe("23505");
      expect((caught as PgError).constraint).toBe("u_pkey");
      expect((caught as PgError).message).toMatch(/duplicate key/);
      expect(() => pg.query("SELEC nonsense")).toThrow(expect.objectContaining({ code: "42601" }));
      expect(pg.query("SELECT 2 AS n").rows).toEqual([{ n: 2 }]);
    } finally {
      pg.close();
    }
  });

  test("statement_timeout cancels a statement that runs too long (57014), then the session goes on", () => {
    const pg = new SyncPg(url, { statementTimeoutMs: 200 });
    try {
      expect(() => pg.query("SELECT pg_sleep(5)")).toThrow(expect.objectContaining({ code: "57014" }));
      expect(pg.query("SELECT 3 AS n").rows).toEqual([{ n: 3 }]);
    } finally {
      pg.close();
    }
  });

  test("an unreachable server is a clear workspace_not_found naming the URL without its password", () => {
    let caught: unknown;
    try {
      new SyncPg(`postgres://postgres:s3cret@127.0.0.1:${cluster.port}/no_such_db`);
    } catch (e) {
      caught = e;
    }
    expect(isRatchetError(caught, "workspace_not_found")).toBe(true);
    expect((caught as Error).message).toMatch(
      /cannot connect to PostgreSQL at postgres:\/\/postgres:\*\*\*@/,
    );
    expect((caught as Error).message).not.toContain("s3cret");
    expect((caught as Error).message).toMatch(/no_such_db/);
  });

  test("a server that ends the session gives an error, not a hang, and the session is broken for good (store_lost, broken)", () => {
    const pg = new SyncPg(url);
    const killer = new SyncPg(url);
    try {
      const [me] = pg.query<{ pid: number }>("SELECT pg_backend_pid() AS pid").rows;
      expect(pg.broken).toBeUndefined();
      killer.query("SELECT pg_terminate_backend($1)", [me?.pid ?? 0]);
      let caught: unknown;
      try {
        pg.query("SELECT 1");
      } catch (e) {
        caught = e;
      }
      expect(isRatchetError(caught, "store_lost")).toBe(true);
      expect(storeBroken(caught)).toBe(true);
      expect((caught as Error).message).toMatch(/terminating connection due to administrator command/);
      expect(pg.broken).toMatch(/is lost .*this session is unusable/);
      // Every later call refuses at once, flagged the same way.
      let again: unknown;
      try {
        pg.exec("SELECT 1");
      } catch (e) {
        again = e;
      }
      expect(isRatchetError(again, "store_lost")).toBe(true);
      expect(storeBroken(again)).toBe(true);
      // A plain SQL error is not a broken session.
      let plain: unknown;
      try {
        killer.query("SELEC nonsense");
      } catch (e) {
        plain = e;
      }
      expect(plain).toBeInstanceOf(PgError);
      expect(storeBroken(plain)).toBe(false);
      expect(killer.broken).toBeUndefined();
    } finally {
      pg.close();
      killer.close();
    }
  });

  test("a worker that never answers (no statement timeout, a stuck statement) fails the call with timeout instead of hanging; the session then refuses", () => {
    const pg = new SyncPg(url, { statementTimeoutMs: 0, waitMarginMs: 300 });
    try {
      let caught: unknown;
      try {
        pg.query("SELECT pg_sleep(20)");
      } catch (e) {
        caught = e;
      }
      expect(isRatchetError(caught, "timeout")).toBe(true);
      expect(storeBroken(caught)).toBe(true);
      expect((caught as Error).message).toMatch(/did not answer within 300 ms/);
      expect(pg.broken).toMatch(/did not answer/);
      expect(() => pg.query("SELECT 1")).toThrow(/unusable/);
    } finally {
      pg.close();
    }
  });

  test("after close() every call refuses at once; close() twice is fine", () => {
    const pg = new SyncPg(url);
    pg.close();
    pg.close();
    expect(pg.closed).toBe(true);
    expect(() => pg.query("SELECT 1")).toThrow(/closed/);
  });
});
