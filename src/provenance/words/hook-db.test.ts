import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hookDbPath, hookErrorLog, recordPrompt } from "./hook.js";
import { pgHookStore } from "./hook-pg.js";

const URL = "postgres://ratchet:pw@db.example:5432/ratchet";

function workspace(config?: unknown): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-hook-db-")));
  mkdirSync(join(dir, ".ratchet"));
  if (config !== undefined) writeFileSync(join(dir, ".ratchet", "config.json"), JSON.stringify(config));
  return dir;
}

describe("the hook's database on PostgreSQL", () => {
  it("is the URL from --db, RATCHET_DB, or store.url of the workspace found from the prompt's folder", () => {
    expect(hookDbPath({ db: URL, env: {}, dirs: [] })).toBe(URL);
    expect(hookDbPath({ env: { RATCHET_DB: URL }, dirs: [] })).toBe(URL);
    const dir = workspace({ store: { url: URL } });
    mkdirSync(join(dir, "sub"));
    expect(hookDbPath({ env: {}, dirs: [join(dir, "sub")] })).toBe(URL);
    // A SQLite workspace without its file yet: no database (nothing to record into).
    expect(hookDbPath({ env: {}, dirs: [workspace()] })).toBeUndefined();
  });

  it("logs to the home log, not beside a URL", () => {
    expect(hookErrorLog({}, URL)).not.toContain("postgres:");
    expect(hookErrorLog({}, "/w/.ratchet/ratchet.db")).toBe("/w/.ratchet/hook-errors.log");
  });

  it("an unreachable server is an error value, never a throw", () => {
    const out = recordPrompt({
      payload: { prompt: "words", cwd: "/tmp" },
      env: {},
      open: () => pgHookStore("postgres://ratchet:pw@127.0.0.1:1/none"),
    });
    expect(out.status).toBe("error");
  });
});
