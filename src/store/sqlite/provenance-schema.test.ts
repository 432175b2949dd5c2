import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqlite } from "./open.js";

function db() {
  const d = openSqlite(join(mkdtempSync(join(tmpdir(), "ratchet-prov-")), "ratchet.db"), { create: true });
  d.prepare("INSERT INTO projects (name, repo_path, created_at) VALUES ('shop', '/src/shop', 't')").run();
  return d;
}

const utterance = (d: ReturnType<typeof db>) =>
  Number(
    d
      .prepare(
        "INSERT INTO prov_utterances (text, occurred_at, recorded_at, origin, prev_hash, hash) VALUES ('keep fiscal weeks', 't', 't', 'hook', '', 'h')",
      )
      .run().lastInsertRowid,
  );

const reason = (d: ReturnType<typeof db>, cols: Record<string, unknown>) => {
  const row = {
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
  return d
    .prepare(
      `INSERT INTO prov_change_reasons (${keys.join(",")}) VALUES (${keys.map((k) => `@${k}`).join(",")})`,
    )
    .run(row);
};

describe("provenance tables (migration 10)", () => {
  it("are append-only: DELETE and UPDATE are refused", () => {
    const d = db();
    const id = utterance(d);
    expect(() => d.prepare("DELETE FROM prov_utterances WHERE id = ?").run(id)).toThrow(/append-only/);
    expect(() => d.prepare("UPDATE prov_utterances SET text = 'other' WHERE id = ?").run(id)).toThrow(
      /append-only/,
    );
    d.close();
  });

  it("let an UPDATE change the one mutable column only", () => {
    const d = db();
    d.prepare(
      "INSERT INTO prov_references (project, kind, uri, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('shop','ticket','https://t/1','T-1','t','t','linked','','h')",
    ).run();
    d.prepare("UPDATE prov_references SET last_checked = 'later' WHERE id = 1").run();
    expect(() => d.prepare("UPDATE prov_references SET label = 'T-2' WHERE id = 1").run()).toThrow(
      /append-only/,
    );
    expect(() =>
      d.prepare("UPDATE prov_references SET last_checked = 'x', uri = NULL WHERE id = 1").run(),
    ).toThrow(/append-only/);
    reason(d, { tier: "unstated" });
    d.prepare("UPDATE prov_change_reasons SET superseded_by = 2 WHERE id = 1").run();
    expect(() => d.prepare("UPDATE prov_change_reasons SET tier = 'stated' WHERE id = 1").run()).toThrow(
      /append-only/,
    );
    d.close();
  });

  it("derive verifiability from the row: verbal, linked or unreachable; a verbal source has no uri", () => {
    const d = db();
    const add = (kind: string, uri: string | null, verifiability: string) =>
      d
        .prepare(
          "INSERT INTO prov_references (project, kind, uri, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('shop',?,?,'L','t','t',?,'','h')",
        )
        .run(kind, uri, verifiability);
    add("verbal", null, "verbal");
    add("email", "mailto:a", "linked");
    add("meeting", null, "unreachable");
    expect(() => add("email", "mailto:a", "unreachable")).toThrow(/CHECK/);
    expect(() => add("verbal", "https://x", "verbal")).toThrow(/CHECK/);
    d.close();
  });

  it("enforce the tier rules: a tier the row does not support is refused", () => {
    const d = db();
    const u = utterance(d);
    reason(d, { tier: "stated", verbatim_utterance_id: u, verbatim_start: 0, verbatim_end: 4 });
    reason(d, { tier: "asserted", interpretation: "the rollup groups by it" });
    reason(d, { tier: "derived", rule_id: "R4", interpretation: "pure refactor" });
    reason(d, { tier: "unstated" });
    expect(() => reason(d, { tier: "stated" })).toThrow(/CHECK/);
    expect(() =>
      reason(d, { tier: "stated", verbatim_utterance_id: u, verbatim_start: 4, verbatim_end: 4 }),
    ).toThrow(/CHECK/);
    expect(() => reason(d, { tier: "asserted" })).toThrow(/CHECK/);
    expect(() => reason(d, { tier: "derived", interpretation: "x" })).toThrow(/CHECK/);
    expect(() => reason(d, { tier: "unstated", interpretation: "x" })).toThrow(/CHECK/);
    expect(() => reason(d, { tier: "asserted", rationale: "r" })).toThrow(/CHECK/);
    expect(() => reason(d, { tier: "unstated", node_key: null })).toThrow(/CHECK/);
    reason(d, {
      tier: "derived",
      rule_id: "R6",
      role: "rejected_path",
      node_key: null,
      statement: "tried X",
    });
    d.close();
  });

  it("allow one answer per finding of a headline", () => {
    const d = db();
    d.prepare(
      "INSERT INTO prov_headlines (project, plan_id, findings_json, at) VALUES ('shop','p','{}','t')",
    ).run();
    const answer = () =>
      d
        .prepare(
          "INSERT INTO prov_headline_responses (headline_id, finding_id, action, by, at) VALUES (1, 'f1', 'proceed', 'agent', 't')",
        )
        .run();
    answer();
    expect(answer).toThrow(/UNIQUE/);
    d.close();
  });
});
