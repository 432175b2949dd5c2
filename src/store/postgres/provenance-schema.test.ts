/**
 * PostgreSQL migration 5 (provenance) pins the same rules as SQLite's migration 10
 * (../sqlite/provenance-schema.test.ts), on a real server: append-only triggers with the one
 * mutable column, derived verifiability, the tier rules, one answer per finding — plus what only
 * PostgreSQL needs pinned: ids handed out as MAX(id) + 1 (dense, reused after a rollback, as
 * SQLite's rowid), and a mutable-column UPDATE that sneaks another column in is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PgCluster, startPgCluster } from "../../../test/harness/pg.js";
import { PgStore } from "./pg-store.js";

let cluster: PgCluster;
const stores: PgStore[] = [];

beforeAll(async () => {
  cluster = await startPgCluster();
}, 120_000);
afterAll(() => {
  for (const s of stores) s.close();
  cluster?.stop();
});

async function db(): Promise<PgStore> {
  const s = PgStore.open(await cluster.createDatabase());
  stores.push(s);
  s.tx(() =>
    s.sql.run("INSERT INTO projects (name, repo_path, created_at) VALUES ('shop', '/src/shop', 't')"),
  );
  return s;
}

/** One statement in its own write transaction (a refused one rolls back). */
const run = (s: PgStore, sql: string, args: readonly (string | number | null)[] = []) =>
  s.tx(() => s.sql.run(sql, args));

const utterance = (s: PgStore) =>
  s.tx(
    () =>
      s.sql.get<{ id: number }>(
        "INSERT INTO prov_utterances (text, occurred_at, recorded_at, origin, prev_hash, hash) VALUES ('keep fiscal weeks', 't', 't', 'hook', '', 'h') RETURNING id",
      )?.id as number,
  );

const reason = (s: PgStore, cols: Record<string, string | number | null>) => {
  const row: Record<string, string | number | null> = {
    project: "shop",
    node_key: "nk_1",
    plan_id: "p",
    occurred_at: "t",
    recorded_at: "t",
    recorded_by: "agent",
    prev_hash: "",
    hash: "h",
    ...cols,
  };
  const keys = Object.keys(row);
  return s.tx(() =>
    s.sql.run(
      `INSERT INTO prov_change_reasons (${keys.join(",")}) VALUES (${keys.map((k) => `@${k}`).join(",")})`,
      row,
    ),
  );
};

describe("provenance tables on PostgreSQL (migration 5)", () => {
  it("are append-only: DELETE and UPDATE are refused", async () => {
    const s = await db();
    const id = utterance(s);
    expect(() => run(s, "DELETE FROM prov_utterances WHERE id = ?", [id])).toThrow(/append-only/);
    expect(() => run(s, "UPDATE prov_utterances SET text = 'other' WHERE id = ?", [id])).toThrow(
      /append-only/,
    );
    // A no-op UPDATE is still an UPDATE: refused, as SQLite's trigger refuses it.
    expect(() => run(s, "UPDATE prov_utterances SET text = text WHERE id = ?", [id])).toThrow(/append-only/);
    expect(s.sql.get<{ text: string }>("SELECT text FROM prov_utterances WHERE id = ?", [id])?.text).toBe(
      "keep fiscal weeks",
    );
    for (const t of [
      "prov_analysis_runs",
      "prov_node_snapshots",
      "prov_node_events",
      "prov_references",
      "prov_reference_links",
      "prov_reference_checks",
      "prov_change_reasons",
      "prov_trigger_log",
      "prov_read_hits",
      "prov_influence",
      "prov_headlines",
      "prov_headline_responses",
    ]) {
      const triggers = s.sql.all<{ tgname: string }>(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = CAST(? AS regclass) AND NOT tgisinternal ORDER BY tgname",
        [t],
      );
      expect(triggers.map((r) => r.tgname)).toEqual(
        expect.arrayContaining([`${t}_no_delete`, `${t}_no_update`]),
      );
    }
  });

  it("let an UPDATE change the one mutable column only", async () => {
    const s = await db();
    run(
      s,
      "INSERT INTO prov_references (project, kind, uri, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('shop','ticket','https://t/1','T-1','t','t','linked','','h')",
    );
    run(s, "UPDATE prov_references SET last_checked = 'later' WHERE id = 1");
    expect(
      s.sql.get<{ last_checked: string }>("SELECT last_checked FROM prov_references")?.last_checked,
    ).toBe("later");
    expect(() => run(s, "UPDATE prov_references SET label = 'T-2' WHERE id = 1")).toThrow(
      /append-only except last_checked/,
    );
    expect(() => run(s, "UPDATE prov_references SET last_checked = 'x', uri = NULL WHERE id = 1")).toThrow(
      /append-only/,
    );
    // The id is a column too: renumbering a row is refused.
    expect(() => run(s, "UPDATE prov_references SET id = 9, last_checked = 'y' WHERE id = 1")).toThrow(
      /append-only/,
    );
    expect(() => run(s, "DELETE FROM prov_references")).toThrow(/append-only/);
    reason(s, { tier: "unstated" });
    run(s, "UPDATE prov_change_reasons SET superseded_by = 2 WHERE id = 1");
    expect(() => run(s, "UPDATE prov_change_reasons SET tier = 'stated' WHERE id = 1")).toThrow(
      /append-only/,
    );
    expect(() =>
      run(s, "UPDATE prov_change_reasons SET superseded_by = 3, hash = 'forged' WHERE id = 1"),
    ).toThrow(/append-only except superseded_by/);
    expect(
      s.sql.get<{ hash: string; superseded_by: number }>(
        "SELECT hash, superseded_by FROM prov_change_reasons",
      ),
    ).toEqual({
      hash: "h",
      superseded_by: 2,
    });
  });

  it("derive verifiability from the row: verbal, linked or unreachable; a verbal source has no uri", async () => {
    const s = await db();
    const add = (kind: string, uri: string | null, verifiability: string) =>
      run(
        s,
        "INSERT INTO prov_references (project, kind, uri, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('shop',?,?,'L','t','t',?,'','h')",
        [kind, uri, verifiability],
      );
    add("verbal", null, "verbal");
    add("email", "mailto:a", "linked");
    add("meeting", null, "unreachable");
    expect(() => add("email", "mailto:a", "unreachable")).toThrow(/check constraint/);
    expect(() => add("verbal", "https://x", "verbal")).toThrow(/check constraint/);
    expect(() => add("fax", null, "unreachable")).toThrow(/check constraint/);
  });

  it("enforce the tier rules: a tier the row does not support is refused", async () => {
    const s = await db();
    const u = utterance(s);
    reason(s, { tier: "stated", verbatim_utterance_id: u, verbatim_start: 0, verbatim_end: 4 });
    reason(s, { tier: "asserted", interpretation: "the rollup groups by it" });
    reason(s, { tier: "derived", rule_id: "R4", interpretation: "pure refactor" });
    reason(s, { tier: "unstated" });
    expect(() => reason(s, { tier: "stated" })).toThrow(/check constraint/);
    expect(() =>
      reason(s, { tier: "stated", verbatim_utterance_id: u, verbatim_start: 4, verbatim_end: 4 }),
    ).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "asserted" })).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "derived", interpretation: "x" })).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "unstated", interpretation: "x" })).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "asserted", rationale: "r" })).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "unstated", node_key: null })).toThrow(/check constraint/);
    expect(() => reason(s, { tier: "wishful" })).toThrow(/check constraint/);
    expect(() =>
      reason(s, { tier: "stated", verbatim_utterance_id: 999, verbatim_start: 0, verbatim_end: 4 }),
    ).toThrow(/foreign key/);
    reason(s, {
      tier: "derived",
      rule_id: "R6",
      role: "rejected_path",
      node_key: null,
      statement: "tried X",
    });
    expect(s.sql.get<{ n: number }>("SELECT count(*) AS n FROM prov_change_reasons")?.n).toBe(5);
  });

  it("allow one answer per finding of a headline", async () => {
    const s = await db();
    run(s, "INSERT INTO prov_headlines (project, plan_id, findings_json, at) VALUES ('shop','p','{}','t')");
    const answer = () =>
      run(
        s,
        "INSERT INTO prov_headline_responses (headline_id, finding_id, action, by, at) VALUES (1, 'f1', 'proceed', 'agent', 't')",
      );
    answer();
    expect(answer).toThrow(/duplicate key/);
    expect(() =>
      run(s, "INSERT INTO prov_headlines (project, findings_json, at) VALUES ('shop','{}','t')"),
    ).toThrow(/check constraint/);
  });

  it("hand out ids as MAX(id) + 1: dense, and reused after a rollback, as SQLite's rowid", async () => {
    const s = await db();
    expect([utterance(s), utterance(s)]).toEqual([1, 2]);
    expect(() =>
      s.tx(() => {
        utterance(s);
        throw new Error("roll back");
      }),
    ).toThrow(/roll back/);
    expect(utterance(s)).toBe(3);
    // A savepoint rolled back inside a transaction leaves no gap either.
    const id = s.tx(() => {
      s.sql.run("SAVEPOINT sp");
      utterance(s);
      s.sql.run("ROLLBACK TO SAVEPOINT sp");
      s.sql.run("RELEASE SAVEPOINT sp");
      return utterance(s);
    });
    expect(id).toBe(4);
  });

  it("keep the parse cache as a cache: a second insert of a key is ignored, rows may be deleted", async () => {
    const s = await db();
    const put = (facts: string) =>
      run(
        s,
        "INSERT INTO prov_node_cache (cache_key, facts, created_at) VALUES ('k', ?, 't') ON CONFLICT (cache_key) DO NOTHING",
        [facts],
      );
    put("{}");
    put('{"x":1}');
    expect(s.sql.get<{ facts: string }>("SELECT facts FROM prov_node_cache")?.facts).toBe("{}");
    expect(run(s, "DELETE FROM prov_node_cache").changes).toBe(1);
  });
});
