import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqlite } from "../store/index.js";
import { chainHash } from "./chain.js";
import { insertChained } from "./rows.js";

describe("insertChained", () => {
  it("chains each row onto the table's newest row, inside the transaction", () => {
    const db = openSqlite(join(mkdtempSync(join(tmpdir(), "ratchet-rows-")), "r.db"), { create: true });
    const u = (text: string) => ({ text, occurred_at: "t", recorded_at: "t", origin: "hook" });
    const ids = db.transaction(() => [
      insertChained(db, "prov_utterances", u("a")),
      insertChained(db, "prov_utterances", u("b")),
    ])();
    const rows = db.prepare("SELECT * FROM prov_utterances ORDER BY id").all() as Record<string, string>[];
    expect(rows.map((r) => r.id)).toEqual(ids);
    expect(rows[0]!.prev_hash).toBe("");
    expect(rows[0]!.hash).toBe(chainHash(u("a"), ""));
    expect(rows[1]!.prev_hash).toBe(rows[0]!.hash);
    expect(rows[1]!.hash).toBe(chainHash(u("b"), rows[0]!.hash!));
    expect(() => insertChained(db, "prov_utterances", u("c"))).toThrow(/inside a write transaction/);
    db.close();
  });
});
