/**
 * The user's words and sources through the BUILT `ratchet` (bin/ratchet.js), fed Claude Code's
 * real `UserPromptSubmit` hook JSON on stdin: skip rules, silence, exit 0 whatever happens,
 * attribution, `hook install`, `note`, `reference add | pending | mark`, `plans.session_id`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  makeTempDir,
  makeWorkspace,
  query,
  ratchet,
  startRatchet,
  type TestWorkspace,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const workspaces: TestWorkspace[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** A workspace with project `shop` whose repo (a real git repo) sits inside it. */
async function shop(): Promise<TestWorkspace & { repo: string; errors: string }> {
  const ws = await makeWorkspace("ratchet-e2e-words-");
  workspaces.push(ws);
  const repo = join(ws.dir, "shop");
  mkdirSync(join(repo, "src"), { recursive: true });
  execFileSync("git", ["init", "-q", repo]);
  expect((await ws.run(["project", "add", "shop", "--repo", repo])).status).toBe(0);
  return Object.assign(ws, { repo, errors: join(ws.dir, "hook-errors.log") });
}

const QUIET = {
  RATCHET_HEADLESS: undefined,
  PROVLEDGER_HEADLESS: undefined,
  PROVLEDGER_HOOK_ERRORS: undefined,
};

function payload(ws: { repo: string }, prompt: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    session_id: "0b1c2d3e-sess",
    transcript_path: "/home/u/.claude/projects/shop/0b1c2d3e-sess.jsonl",
    cwd: join(ws.repo, "src"),
    hook_event_name: "UserPromptSubmit",
    permission_mode: "default",
    prompt,
    ...extra,
  });
}

function hook(
  ws: TestWorkspace & { repo: string; errors: string },
  input: string,
  env: Record<string, string | undefined> = {},
  cwd = ws.repo,
) {
  return ratchet(["hook", "user-prompt"], {
    cwd,
    input,
    env: { ...QUIET, RATCHET_HOOK_ERRORS: ws.errors, ...env },
  });
}

const utterances = (ws: TestWorkspace) =>
  query<{
    id: number;
    text: string;
    origin: string;
    project: string | null;
    plan_id: string | null;
    session_id: string | null;
  }>(ws, "SELECT id, text, origin, project, plan_id, session_id FROM prov_utterances ORDER BY id");
const errorLines = (ws: { errors: string }) =>
  existsSync(ws.errors) ? readFileSync(ws.errors, "utf8").trim().split("\n") : [];

describe("ratchet hook user-prompt", () => {
  test("records a prompt verbatim, attributed by cwd to the project and its newest IN_PROGRESS plan, silently", async () => {
    const ws = await shop();
    const plan = await ws.run(["plan", "publish", "-"], {
      cwd: ws.repo,
      input: JSON.stringify({ goal: "Fiscal weeks", steps: ["do it"] }),
    });
    const planId = plan.marker?.plan_id as string;
    const words = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";
    const r = await hook(ws, payload(ws, words));
    expect(r.status).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("");
    expect(utterances(ws)).toEqual([
      { id: 1, text: words, origin: "hook", project: "shop", plan_id: planId, session_id: "0b1c2d3e-sess" },
    ]);
    expect(errorLines(ws)).toEqual([]);
  });

  test("prints exactly one plain line when the prompt names an outside source", async () => {
    const ws = await shop();
    const r = await hook(ws, payload(ws, "As the CFO wrote in her email, keep the weekly grain."));
    expect(r.status).toBe(0);
    expect(r.lines).toHaveLength(1);
    expect(r.stdout.endsWith("\n")).toBe(true);
    expect(r.lines[0]).toContain("ratchet reference add --utterance 1 --kind email");
    expect(r.stderr).toBe("");
  });

  test("skips slash commands, host-injected text, empty prompts and headless mode: nothing stored, nothing printed", async () => {
    const ws = await shop();
    const skipped = [
      payload(ws, "/compact"),
      payload(ws, "   /clear"),
      payload(ws, ""),
      payload(ws, "  \n "),
      payload(ws, "<task-notification>agent done</task-notification>"),
      payload(ws, "\n<system-reminder>remember</system-reminder>"),
      payload(ws, "<local-command-caveat>Caveat</local-command-caveat>"),
      payload(ws, "<command-name>/model</command-name>"),
      payload(ws, '<agent-message from="x">hi</agent-message>'),
      JSON.stringify({ session_id: "s", cwd: ws.repo, hook_event_name: "UserPromptSubmit" }),
    ];
    for (const input of skipped) {
      const r = await hook(ws, input);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe("");
    }
    for (const env of [{ PROVLEDGER_HEADLESS: "1" }, { RATCHET_HEADLESS: "1" }]) {
      const r = await hook(ws, payload(ws, "the email says so"), env);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe("");
    }
    expect(utterances(ws)).toEqual([]);
    expect(errorLines(ws)).toEqual([]);
  });

  test("exits 0 and prints nothing on garbage stdin, no workspace, a corrupt or a locked database — and logs one line each", async () => {
    const ws = await shop();
    for (const input of ["", "not json at all", "[1,2,3]", '{"prompt": 42}', "\u0000\u0001\u0002"]) {
      const r = await hook(ws, input);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("");
    }
    expect(errorLines(ws)).toHaveLength(5);
    const nowhere = makeTempDir("ratchet-e2e-words-nows-");
    const lonely = { ...ws, repo: nowhere };
    const r1 = await hook(ws, payload(lonely, "hello"), {}, nowhere);
    expect([r1.status, r1.stdout]).toEqual([0, ""]);
    expect(errorLines(ws).at(-1)).toContain("no Ratchet workspace");
    const garbage = join(ws.dir, "garbage.db");
    writeFileSync(garbage, "SQLite format 3\u0000 but not really ".repeat(300));
    const r2 = await hook(ws, payload(ws, "hello"), { RATCHET_DB: garbage });
    expect([r2.status, r2.stdout, r2.stderr]).toEqual([0, "", ""]);
    expect(errorLines(ws)).toHaveLength(7);
    const locker = new Database(ws.dbPath);
    locker.exec("BEGIN EXCLUSIVE");
    try {
      const r3 = await hook(ws, payload(ws, "while locked"));
      expect([r3.status, r3.stdout, r3.stderr]).toEqual([0, "", ""]);
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
    expect(errorLines(ws).at(-1)).toMatch(/locked|busy/i);
    expect(utterances(ws)).toEqual([]);
    // With no RATCHET_HOOK_ERRORS the log sits beside the database.
    await hook(ws, "garbage", { RATCHET_HOOK_ERRORS: undefined, RATCHET_DB: ws.dbPath });
    expect(readFileSync(join(ws.ratchetDir, "hook-errors.log"), "utf8")).toContain("not JSON");
  });

  test("chains hook and note rows into one hash chain", async () => {
    const ws = await shop();
    await hook(ws, payload(ws, "one"));
    await ws.run(["note", "two", "--at", "2026-11-30"], { cwd: ws.repo });
    await hook(ws, payload(ws, "three"));
    const rows = query<{ prev_hash: string; hash: string }>(
      ws,
      "SELECT prev_hash, hash FROM prov_utterances ORDER BY id",
    );
    expect(rows).toHaveLength(3);
    expect(rows.map((r) => r.prev_hash)).toEqual(["", rows[0]?.hash, rows[1]?.hash]);
  });
});

describe("ratchet hook user-prompt under attack", () => {
  test("six prompts at once: six rows on one unforked chain", async () => {
    const ws = await shop();
    const procs = Array.from({ length: 6 }, (_, i) =>
      startRatchet(["hook", "user-prompt"], {
        cwd: ws.repo,
        holdStdin: true,
        input: payload(ws, `prompt ${i}`),
        env: { ...QUIET, RATCHET_HOOK_ERRORS: ws.errors },
      }),
    );
    for (const p of procs) p.release();
    const results = await Promise.all(procs.map((p) => p.done));
    expect(results.map((r) => [r.status, r.stdout])).toEqual(results.map(() => [0, ""]));
    const rows = query<{ prev_hash: string; hash: string; text: string }>(
      ws,
      "SELECT prev_hash, hash, text FROM prov_utterances ORDER BY id",
    );
    expect(rows.map((r) => r.text).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `prompt ${i}`));
    expect(rows.map((r) => r.prev_hash)).toEqual(["", ...rows.slice(0, -1).map((r) => r.hash)]);
    expect(new Set(rows.map((r) => r.prev_hash)).size).toBe(6);
  });

  test("a secret in the prompt is masked; a stdin that never closes, or is huge, still ends in exit 0", async () => {
    const ws = await shop();
    const secret = "hunter2-very-secret-value";
    const r = await hook(ws, payload(ws, `the password is ${secret}, keep it`), {
      SECRET_DB_PASSWORD: secret,
    });
    expect(r.status).toBe(0);
    expect(utterances(ws).map((u) => u.text)).toEqual([
      "the password is [REDACTED:SECRET_DB_PASSWORD], keep it",
    ]);
    const open = startRatchet(["hook", "user-prompt"], {
      cwd: ws.repo,
      holdStdin: true,
      env: { ...QUIET, RATCHET_HOOK_ERRORS: ws.errors },
      timeoutMs: 30_000,
    });
    const waited = await open.done;
    open.release();
    expect([waited.status, waited.stdout]).toEqual([0, ""]);
    expect(errorLines(ws).at(-1)).toContain("no complete hook JSON");
    const huge = await hook(ws, payload(ws, "x".repeat(5 * 1024 * 1024)));
    expect([huge.status, huge.stdout]).toEqual([0, ""]);
    expect(errorLines(ws).at(-1)).toContain("larger than");
    expect(utterances(ws)).toHaveLength(1);
  });
});

describe("ratchet hook install", () => {
  test("shows the change, refuses to write without a terminal or --yes, writes once, and the installed command works from anywhere", async () => {
    const ws = await shop();
    mkdirSync(join(ws.repo, ".claude"));
    const settings = join(ws.repo, ".claude", "settings.json");
    const before = JSON.stringify(
      { model: "opus", hooks: { Stop: [{ hooks: [{ type: "command", command: "echo stop" }] }] } },
      null,
      2,
    );
    writeFileSync(settings, before);
    const refused = await ws.run(["hook", "install"], { cwd: ws.repo });
    expect(refused.status).toBe(2);
    expect(refused.stdout).toContain("+ ");
    expect(refused.stdout).toContain("hook user-prompt");
    expect(refused.stderr).toContain("--yes");
    expect(readFileSync(settings, "utf8")).toBe(before);
    const printed = await ws.run(["hook", "install", "--print"], { cwd: ws.repo });
    expect([printed.status, printed.marker?.written]).toEqual([0, false]);
    expect(readFileSync(settings, "utf8")).toBe(before);
    const written = await ws.run(["hook", "install", "--yes"], { cwd: ws.repo });
    expect(written.marker).toMatchObject({ ok: true, changed: true, written: true });
    const after = readFileSync(settings, "utf8");
    const parsed = JSON.parse(after);
    expect(parsed.model).toBe("opus");
    expect(parsed.hooks.Stop).toHaveLength(1);
    const again = await ws.run(["hook", "install", "--yes"], { cwd: ws.repo });
    expect(again.marker).toMatchObject({ ok: true, changed: false });
    expect(readFileSync(settings, "utf8")).toBe(after);
    // Run the command exactly as Claude Code would (a shell, from some other folder).
    const command = parsed.hooks.UserPromptSubmit[0].hooks[0].command as string;
    const elsewhere = makeTempDir("ratchet-e2e-words-cwd-");
    const run = spawnSync("bash", ["-c", command], {
      cwd: elsewhere,
      input: payload(ws, "recorded through the installed command"),
      encoding: "utf8",
      env: {
        ...process.env,
        RATCHET_DB: undefined,
        RATCHET_HEADLESS: undefined,
        PROVLEDGER_HEADLESS: undefined,
      },
    });
    expect([run.status, run.stdout]).toEqual([0, ""]);
    expect(utterances(ws).map((u) => [u.text, u.project])).toEqual([
      ["recorded through the installed command", "shop"],
    ]);
  });
});

describe("note and references through the CLI", () => {
  test("note → reference add → mark → pending; session_id at publish", async () => {
    const ws = await shop();
    const note = await ws.run(
      [
        "note",
        "Finance reconciles by fiscal week",
        "--at",
        "2026-11-30 14:00",
        "--ref",
        "kind=meeting,label=finance sync",
        "--ref",
        "kind=email,label=CFO, re: weeks,uri=https://mail.example/t/1",
      ],
      { cwd: ws.repo },
    );
    expect(note.status).toBe(0);
    expect(note.marker).toMatchObject({
      ok: true,
      op: "note",
      project: "shop",
      origin: "agent_cli",
      occurred_at: "2026-11-30T14:00:00.000Z",
    });
    const add = await ws.run(
      [
        "reference",
        "add",
        "--utterance",
        String(note.marker?.utterance_id),
        "--kind",
        "doc",
        "--label",
        "spec",
        "--occurred-at",
        "2026-11-01",
        "--uri",
        "https://docs.example/spec",
        "--json",
      ],
      { cwd: ws.repo },
    );
    expect(add.marker).toMatchObject({
      ok: true,
      op: "reference-add",
      verifiability: "linked",
      stance: "supports",
    });
    const pending = await ws.run(["reference", "pending", "--json"], { cwd: ws.repo });
    const listed = JSON.parse(pending.stdout).references as { reference_id: number; mark: string }[];
    expect(listed.map((r) => r.reference_id)).toEqual([2, 3]);
    expect(listed[0]?.mark).toContain("ratchet reference mark 2 --ok");
    const mark = await ws.run(["reference", "mark", "2", "--gone", "--note", "thread deleted"], {
      cwd: ws.repo,
    });
    expect(mark.marker).toMatchObject({ ok: true, verdict: "gone", checks: 1, reference_id: 2 });
    const text = await ws.run(["reference", "pending"], { cwd: ws.repo });
    expect(text.lines[0]).toContain("· 1");
    // The hook saw a prompt of this repo's session: the plan published next carries it.
    await hook(ws, payload(ws, "now publish the plan"));
    const plan = await ws.run(["plan", "publish", "-"], {
      cwd: ws.repo,
      input: JSON.stringify({ goal: "Weeks", steps: ["a"] }),
    });
    expect(plan.marker?.session_id).toBe("0b1c2d3e-sess");
    expect(query(ws, "SELECT session_id FROM plans WHERE plan_id = ?", plan.marker?.plan_id)).toEqual([
      { session_id: "0b1c2d3e-sess" },
    ]);
  });

  test("bad input: clear error naming the field, exit status, nothing written", async () => {
    const ws = await shop();
    const count = () =>
      query<{ n: number }>(
        ws,
        "SELECT (SELECT count(*) FROM prov_utterances) + (SELECT count(*) FROM prov_references) + (SELECT count(*) FROM prov_reference_checks) AS n",
      )[0]?.n;
    const cases: [string[], number, string][] = [
      [["note", "", "--at", "2026-11-30"], 2, "text"],
      [["note", "words"], 2, "at"],
      [["note", "words", "--at", "last tuesday"], 2, "at"],
      [["note", "words", "--at", "2026-11-30", "--ref", "kind=email"], 2, "label"],
      [["note", "words", "--at", "2026-11-30", "--ref", "label=x"], 2, "kind"],
      [["note", "words", "--at", "2026-11-30", "--ref", "kind=verbal,label=x,uri=https://x"], 2, "uri"],
      [["note", "words", "--at", "2026-11-30", "--ref", "kind=email,lable=x"], 2, "label"],
      [["note", "words", "--at", "2026-11-30", "--frobnicate", "x"], 2, "frobnicate"],
      [["note", "words", "--at", "2026-11-30", "--project", "nope"], 3, "project"],
      [
        ["reference", "add", "--kind", "email", "--label", "x", "--occurred-at", "2026-11-30"],
        2,
        "utterance",
      ],
      [
        [
          "reference",
          "add",
          "--utterance",
          "7",
          "--kind",
          "email",
          "--label",
          "x",
          "--occurred-at",
          "2026-11-30",
        ],
        2,
        "utterance 7",
      ],
      [
        [
          "reference",
          "add",
          "--reason",
          "7",
          "--kind",
          "email",
          "--label",
          "x",
          "--occurred-at",
          "2026-11-30",
        ],
        2,
        "reason 7",
      ],
      [["reference", "mark", "7", "--ok"], 3, "reference 7"],
      [["reference", "mark", "7"], 2, "verdict"],
      [["reference", "pending", "--older-than-days", "soon"], 2, "older-than-days"],
    ];
    for (const [args, status, field] of cases) {
      const r = await ws.run(args, { cwd: ws.repo });
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(status);
      expect(r.stderr, args.join(" ")).toContain(field);
    }
    // --node without a project: run from a folder outside every registered repo.
    const r = await ws.run(["note", "words", "--at", "2026-11-30", "--node", "shop.x"], { cwd: ws.dir });
    expect([r.status, r.marker?.field]).toEqual([2, "node"]);
    expect(count()).toBe(0);
  });
});
