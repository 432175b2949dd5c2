import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { chainHash } from "../chain.js";
import { candidateUtterances } from "./candidates.js";
import { recordPrompt, sqliteHookStore } from "./hook.js";
import { SqlWordStore } from "./store.js";
import { type Kit, makeKit, publishIn } from "./test-kit.js";

const kits: Kit[] = [];
function kit(): Kit {
  const k = makeKit();
  kits.push(k);
  return k;
}
afterEach(() => {
  for (const k of kits.splice(0)) k.close();
});

const words = (k: Kit) => new SqlWordStore(k.store, () => k.ledger.now());

/** One hook prompt through the real hook function on its own connection (as the hook process does). */
function hook(
  k: Kit,
  prompt: string,
  extra: { cwd?: string; session?: string; env?: Record<string, string> } = {},
) {
  return recordPrompt({
    payload: {
      session_id: extra.session ?? "sess-1",
      cwd: extra.cwd ?? k.repo,
      hook_event_name: "UserPromptSubmit",
      prompt,
    },
    env: extra.env ?? {},
    open: () => sqliteHookStore(new Database(k.dbPath, { fileMustExist: true, timeout: 2000 })),
  });
}

describe("WordStore on SQLite", () => {
  it("chains utterances, references and checks across writers (hook connection and ledger)", () => {
    const k = kit();
    const w = words(k);
    expect(hook(k, "first words").status).toBe("recorded");
    w.write(() =>
      w.recordUtterance({ text: "second", occurred_at: "2026-11-30T00:00:00.000Z", origin: "agent_cli" }),
    );
    expect(hook(k, "third words").status).toBe("recorded");
    const rows = k.store.db.prepare("SELECT * FROM prov_utterances ORDER BY id").all() as Record<
      string,
      unknown
    >[];
    expect(rows).toHaveLength(3);
    let prev = "";
    for (const r of rows) {
      const { id: _id, hash, prev_hash, ...content } = r;
      expect(prev_hash).toBe(prev);
      expect(hash).toBe(chainHash(content, prev));
      prev = hash as string;
    }
    const ref = w.write(() =>
      w.addReference({
        kind: "email",
        label: "CFO",
        uri: "https://m/1",
        occurred_at: "2026-11-01T00:00:00.000Z",
      }),
    );
    const c1 = w.write(() => w.addCheck(ref, "ok", null));
    const c2 = w.write(() => w.addCheck(ref, "gone", "deleted"));
    expect(c2.prev_hash).toBe(c1.hash);
    expect(w.getReference(ref)?.last_checked).toBe(c2.checked_at);
    expect(w.checksOf(ref).map((c) => c.verdict)).toEqual(["ok", "gone"]);
  });

  it("derives verifiability, and the table refuses a row that claims another", () => {
    const k = kit();
    const w = words(k);
    const ids = w.write(() => [
      w.addReference({ kind: "verbal", label: "said at lunch", occurred_at: "2026-11-01T00:00:00.000Z" }),
      w.addReference({
        kind: "doc",
        label: "spec",
        uri: "https://d",
        occurred_at: "2026-11-01T00:00:00.000Z",
      }),
      w.addReference({ kind: "email", label: "no link", occurred_at: "2026-11-01T00:00:00.000Z" }),
    ]);
    expect(ids.map((id) => w.getReference(id)?.verifiability)).toEqual(["verbal", "linked", "unreachable"]);
    const forged = () =>
      k.store.db
        .prepare(
          "INSERT INTO prov_references (kind, label, occurred_at, registered_at, verifiability, prev_hash, hash) VALUES ('email', 'x', 't', 't', 'linked', '', '')",
        )
        .run();
    expect(forged).toThrow(/CHECK/);
    expect(() =>
      k.store.db.prepare("UPDATE prov_references SET label = 'changed' WHERE id = ?").run(ids[1]),
    ).toThrow(/append-only/);
    w.write(() =>
      w.recordUtterance({ text: "words", occurred_at: "2026-11-01T00:00:00.000Z", origin: "agent_cli" }),
    );
    expect(() => k.store.db.prepare("UPDATE prov_utterances SET text = 'x'").run()).toThrow(/append-only/);
    // The one mutable column of a reference is last_checked.
    k.store.db.prepare("UPDATE prov_references SET last_checked = 'now' WHERE id = ?").run(ids[1]);
  });

  it("finds the project by the deepest repo holding a path, through symlinks, never by a name prefix", () => {
    const k = kit();
    const w = words(k);
    const nested = join(k.repo, "vendor", "lib");
    mkdirSync(nested, { recursive: true });
    k.store.tx(() => k.store.addProject({ name: "lib", repo_path: nested, created_at: k.ledger.now() }));
    const sibling = `${k.repo}2`;
    mkdirSync(sibling);
    const link = join(k.dir, "link-to-shop");
    symlinkSync(k.repo, link);
    expect(w.projectForPath(join(k.repo, "src"))).toBe("shop");
    expect(w.projectForPath(k.repo)).toBe("shop");
    expect(w.projectForPath(join(nested, "x"))).toBe("lib");
    expect(w.projectForPath(sibling)).toBeUndefined();
    expect(w.projectForPath(link)).toBe("shop");
    expect(w.projectForPath(k.dir)).toBeUndefined();
  });
});

describe("the prompt hook's writes", () => {
  it("attributes a prompt to the project by cwd and to its newest IN_PROGRESS plan", () => {
    const k = kit();
    expect(hook(k, "before any plan")).toMatchObject({ status: "recorded", project: "shop", planId: null });
    const older = publishIn(k, "older plan");
    k.clock.advance(60_000);
    const newer = publishIn(k, "newer plan");
    k.clock.advance(60_000);
    k.ledger.abandon({ plan_id: newer, reason: "not needed" });
    const r = hook(k, "Keep fiscal weeks", { cwd: join(k.repo, "src") });
    expect(r).toMatchObject({ status: "recorded", project: "shop", planId: older });
    const outside = hook(k, "elsewhere", { cwd: k.dir });
    expect(outside).toMatchObject({ status: "recorded", project: null, planId: null });
  });

  it("stores the words verbatim except known secret shapes, and skips what is not the user's", () => {
    const k = kit();
    const r = hook(k, "use token sk-ant-abcdefghijklmnopqrstuvwxyz and keep the rest ✓");
    expect(r.status).toBe("recorded");
    const text = (k.store.db.prepare("SELECT text FROM prov_utterances").get() as { text: string }).text;
    expect(text).toBe("use token sk-ant-[REDACTED] and keep the rest ✓");
    expect(hook(k, "/compact").status).toBe("skipped");
    expect(hook(k, "<system-reminder>x").status).toBe("skipped");
    expect(hook(k, "real words", { env: { RATCHET_HEADLESS: "1" } }).status).toBe("skipped");
    expect(k.count("prov_utterances")).toBe(1);
  });

  it("reports a corrupt or locked database as a value, never a throw", () => {
    const k = kit();
    const locker = new Database(k.dbPath);
    locker.exec("BEGIN IMMEDIATE");
    const locked = recordPrompt({
      payload: { prompt: "words", cwd: k.repo },
      env: {},
      open: () => sqliteHookStore(new Database(k.dbPath, { fileMustExist: true, timeout: 50 })),
    });
    expect(locked.status).toBe("error");
    locker.exec("ROLLBACK");
    locker.close();
    const bad = join(k.dir, "garbage.db");
    writeFileSync(bad, "this is not a database, just text ".repeat(200));
    const corrupt = recordPrompt({
      payload: { prompt: "words", cwd: k.repo },
      env: {},
      open: () => sqliteHookStore(new Database(bad, { fileMustExist: true, timeout: 50 })),
    });
    expect(corrupt.status).toBe("error");
    expect(k.count("prov_utterances")).toBe(0);
  });
});

describe("candidateUtterances", () => {
  it("takes the plan's own, the project's inside the window, and every utterance of the plan's sessions", () => {
    const k = kit();
    const w = words(k);
    const at = (iso: string, o: Partial<Parameters<typeof w.recordUtterance>[0]>) =>
      w.write(() => w.recordUtterance({ text: o.text ?? "w", occurred_at: iso, origin: "agent_cli", ...o }));
    const before = at("2026-11-30T00:00:00.000Z", { project: "shop", text: "before the window" });
    const planId = publishIn(k); // created 2026-12-01T10:00:00Z, open
    const inWindow = at("2026-12-01T11:00:00.000Z", { project: "shop", text: "in the window" });
    const otherProject = at("2026-12-01T11:00:00.000Z", { project: "else", text: "other project" });
    const own = at("2026-11-01T00:00:00.000Z", { plan_id: planId, session_id: "s-own", text: "attributed" });
    const sameSession = at("2026-10-01T00:00:00.000Z", {
      session_id: "s-own",
      text: "same session, long ago",
    });
    const otherSession = at("2026-10-01T00:00:00.000Z", { session_id: "s-other", text: "other session" });
    k.store.db.prepare("UPDATE plans SET session_id = 's-plan' WHERE plan_id = ?").run(planId);
    const planSession = at("2026-09-01T00:00:00.000Z", { session_id: "s-plan", text: "the plan's session" });
    const ids = candidateUtterances(w, planId).map((u) => u.id);
    expect(ids).toEqual([inWindow, own, sameSession, planSession].sort((a, b) => a - b));
    for (const id of [before, otherProject, otherSession]) expect(ids).not.toContain(id);
    // A closed plan's window ends at finished_at.
    k.clock.set(Date.UTC(2026, 11, 1, 12, 0, 0));
    k.ledger.abandon({ plan_id: planId, reason: "done elsewhere" });
    const after = at("2026-12-01T13:00:00.000Z", { project: "shop", text: "after the close" });
    expect(candidateUtterances(w, planId).map((u) => u.id)).not.toContain(after);
    expect(candidateUtterances(w, "no-such-plan")).toEqual([]);
  });
});
