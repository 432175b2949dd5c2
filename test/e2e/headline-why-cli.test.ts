/**
 * Headlines and `why` through the built CLI (`bin/ratchet.js`): a real git repository registered
 * as a project, node rows as a node source records them, the extensions file's `block: true`
 * constraint refusing publish with nothing written, `headline show|respond|ack`, the second
 * answer refused, `why` by name, key and file:line, `--pending`, `--json`, and `step apply`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { assertBuilt, makeWorkspace, query, type TestWorkspace } from "../helpers/cli.js";

/** The key the analyser gave load_orders at the first run. */
let LOAD = "";
const LOAD_QN = "shop.pipeline.load_orders";
/** Finding ids carry the key's first 12 characters (set once the analyser has minted it). */
let FID = "";
let SIM = "";

let ws: TestWorkspace;
let repo: string;
let constraintId: number;
let reasonId: number;

const counts = () =>
  [
    "plans",
    "prov_headlines",
    "prov_headline_responses",
    "prov_influence",
    "prov_read_hits",
    "prov_change_reasons",
  ].map((t) => (query<{ n: number }>(ws, `SELECT count(*) AS n FROM ${t}`)[0] as { n: number }).n);

const publish = (plan: Record<string, unknown>) =>
  ws.run(["plan", "publish", "-"], {
    cwd: repo,
    input: JSON.stringify({ goal: "orders fiscal", prefix: "orders", steps: ["edit"], ...plan }),
  });

beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-why-e2e-");
  repo = join(ws.dir, "shop");
  mkdirSync(join(repo, "shop"), { recursive: true });
  writeFileSync(join(repo, "shop", "pipeline.py"), "def load_orders():\n    return 1\n");
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const add = await ws.run(["project", "add", "shop", "--repo", repo]);
  expect(add.status, add.stderr).toBe(0);
  // The first analysis run of the repo, by the real analyser.
  const refresh = await ws.run(["graph", "refresh", "--project", "shop", "--trigger", "register"]);
  expect(refresh.status, refresh.stderr).toBe(0);
  const show = await ws.run(["graph", "show", LOAD_QN, "--project", "shop", "--json"]);
  expect(show.status, show.stderr).toBe(0);
  LOAD = JSON.parse(show.stdout).resolved.node_key;
  expect(LOAD).toMatch(/^nk_[0-9a-f]{12}$/);
  FID = `active_constraint:${LOAD.slice(0, 12)}:1`;
  SIM = `similar_intent:${LOAD.slice(0, 12)}:1`;
  const db = new Database(ws.dbPath);
  const t = "2026-11-20T09:12:00.000Z";
  const reason = (cols: string, vals: unknown[]) =>
    Number(
      db
        .prepare(
          `INSERT INTO prov_change_reasons (project, node_key, plan_id, occurred_at, recorded_at, prev_hash, hash, ${cols}) VALUES ('shop', '${LOAD}', 'old-20261120', '${t}', '${t}', '', 'h', ${vals.map(() => "?").join(",")})`,
        )
        .run(...vals).lastInsertRowid,
    );
  reasonId = reason("tier, recorded_by, interpretation", [
    "asserted",
    "agent",
    "finance reconciles by fiscal week",
  ]);
  reason("tier, recorded_by, state", ["unstated", "system", "unknown"]);
  db.close();
  writeFileSync(
    join(repo, "provledger-extensions.json"),
    JSON.stringify({
      version: 1,
      constraints: [{ node: LOAD_QN, statement: "weekly grain stays", block: true }],
    }),
  );
});

afterAll(() => ws?.remove());

describe("headline through the CLI", () => {
  let planId: string;

  test("a block: true human constraint refuses publish: exit 4, headline_blocked, nothing written", async () => {
    const before = counts();
    const r = await publish({ declared_targets: [LOAD_QN] });
    expect(r.status).toBe(4);
    expect(r.marker).toMatchObject({ ok: false, code: "headline_blocked", exit_status: 4 });
    expect(r.stderr).toContain(FID);
    expect(counts()).toEqual(before);
  });

  test("a note citing no reason refuses publish: exit 2, nothing written", async () => {
    const before = counts();
    const r = await publish({
      declared_targets: [LOAD_QN],
      headline_notes: [{ text: "same as last time", cites: [9999] }],
    });
    expect(r.status).toBe(2);
    expect(r.marker).toMatchObject({ ok: false, field: "headline_notes[0].cites" });
    expect(counts()).toEqual(before);
  });

  test("answered in headline_notes, publish prints the headline under `headline`", async () => {
    const r = await publish({
      declared_targets: [LOAD_QN],
      headline_notes: [
        { answer: FID, action: "proceed", rationale: "weekly grain kept", by: "human" },
        { text: "an earlier plan moved to fiscal weeks too", cites: [reasonId] },
      ],
    });
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout.slice(0, r.stdout.lastIndexOf("\n{"))) as {
      plan_id: string;
      headline: { findings: { id: string; response: unknown }[]; summary: Record<string, number> };
    };
    planId = result.plan_id;
    expect(result.headline.findings.map((f) => f.id)).toEqual([FID, SIM]);
    expect(result.headline.summary).toMatchObject({
      blocking: 1,
      unanswered: 0,
      hard_unanswered: 0,
      adopted: 1,
    });
    constraintId = (
      query<{ id: number }>(ws, "SELECT id FROM prov_change_reasons WHERE role = 'constraint'")[0] as {
        id: number;
      }
    ).id;
    expect(
      query(ws, "SELECT recorded_by, tier, statement FROM prov_change_reasons WHERE role = 'constraint'"),
    ).toEqual([{ recorded_by: "human", tier: "asserted", statement: "weekly grain stays" }]);
  });

  test("headline show renders the findings; respond answers, a second answer exits 2 with nothing written", async () => {
    const show = await ws.run(["headline", "show", planId]);
    expect(show.status).toBe(0);
    expect(show.stdout).toMatch(/^headline #\d+ · orders-/);
    expect(show.stdout).toContain(`! ${FID} · blocking · hard · asserted · ${LOAD_QN}`);
    expect(show.stdout).toContain(`unanswered: ratchet headline respond ${planId} ${SIM}`);
    const r = await ws.run([
      "headline",
      "respond",
      planId,
      SIM,
      "--action",
      "revise",
      "--rationale",
      "split the change",
      "--cite",
      String(constraintId),
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.marker).toMatchObject({
      ok: true,
      op: "headline-respond",
      plan_id: planId,
      finding_id: SIM,
      action: "revise",
      by: "agent",
      adopted: 3,
    });
    const before = counts();
    const again = await ws.run(["headline", "ack", planId, SIM]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already answered on the latest headline of/);
    const badAction = await ws.run(["headline", "respond", planId, FID, "--action", "maybe"]);
    expect(badAction.status).toBe(2);
    const unknown = await ws.run(["headline", "respond", planId, "rejected_path:x:1", "--action", "proceed"]);
    expect(unknown.status).toBe(2);
    expect(counts()).toEqual(before);
    const json = await ws.run(["headline", "show", planId, "--json"]);
    expect(JSON.parse(json.stdout).summary).toMatchObject({ unanswered: 0, adopted: 3 });
  });

  test("ack = proceed by human; step apply reaches headline-respond; show without a headline exits 3", async () => {
    rmSync(join(repo, "provledger-extensions.json"));
    const r = await publish({ declared_targets: [LOAD, "shop/pipeline.py:2"] });
    expect(r.status, r.stderr).toBe(0);
    const p2 = String(r.marker?.plan_id);
    const ack = await ws.run(["headline", "ack", p2, FID, "--rationale", "fine"]);
    expect(ack.marker).toMatchObject({ ok: true, action: "proceed", by: "human", finding_id: FID });
    const p3 = String((await publish({ declared_targets: [LOAD] })).marker?.plan_id);
    const ops = ws.input(
      "ops.jsonl",
      `${JSON.stringify({ op: "headline-respond", plan_id: p3, finding_id: FID, action: "proceed" })}\n`,
    );
    const applied = await ws.run(["step", "apply", ops]);
    expect(applied.status, applied.stdout).toBe(0);
    expect(applied.lines[0]).toContain('"op":"headline-respond"');
    const bare = await ws.run(["plan", "publish", "-"], {
      input: JSON.stringify({ goal: "no targets", steps: ["a"] }),
    });
    const none = await ws.run(["headline", "show", String(bare.marker?.plan_id)]);
    expect(none.status).toBe(3);
    expect(none.stderr).toMatch(/has no headline/);
  });
});

describe("headline-respond under concurrency", () => {
  test("four processes answer one finding at once: exactly one wins, the others exit 2; events recorded", async () => {
    const r = await publish({ declared_targets: [LOAD_QN] });
    expect(r.status, r.stderr).toBe(0);
    const p = String(r.marker?.plan_id);
    const results = await Promise.all([0, 1, 2, 3].map(() => ws.run(["headline", "ack", p, FID])));
    expect(results.map((x) => x.status).sort()).toEqual([0, 2, 2, 2]);
    const rows = query(
      ws,
      "SELECT r.finding_id FROM prov_headline_responses r JOIN prov_headlines h ON h.id = r.headline_id WHERE h.plan_id = ?",
      p,
    );
    expect(rows).toHaveLength(1);
    const events = query<{ type: string }>(
      ws,
      "SELECT type FROM events WHERE plan_id = ? AND type LIKE 'plan.headline%' ORDER BY id",
      p,
    );
    expect(events.map((e) => e.type)).toEqual(["plan.headline", "plan.headline_responded"]);
  });
});

describe("why through the CLI", () => {
  test("by qualified name inside the repo: header, sections, records with tier and counts", async () => {
    const r = await ws.run(["why", LOAD_QN], { cwd: repo });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe(
      `${LOAD_QN} · downstream 0 · history 1 · constraints 1 (1 active) · rejected 0 · pending 1`,
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `#${constraintId} · asserted · task context · \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d · shown plan \\d+ · adopted by `,
      ),
    );
    expect(r.stdout).toContain("── reasons · 1");
    expect(r.stdout).toContain("finance reconciles by fiscal week");
  });

  test("file:line with --json; every record printed writes read_hit(moment=why)", async () => {
    const before = (
      query<{ n: number }>(ws, "SELECT count(*) AS n FROM prov_read_hits WHERE moment = 'why'")[0] as {
        n: number;
      }
    ).n;
    const r = await ws.run(["why", "shop/pipeline.py:1", "--project", "shop", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as {
      project: string;
      target: string;
      resolved: { node_key: string };
      summary: Record<string, unknown>;
      records: { id: number; evidence_level: string }[];
    };
    expect(j).toMatchObject({ project: "shop", target: "shop/pipeline.py:1", resolved: { node_key: LOAD } });
    expect(j.records.map((x) => x.id).sort()).toEqual([constraintId, reasonId].sort());
    const after = (
      query<{ n: number }>(ws, "SELECT count(*) AS n FROM prov_read_hits WHERE moment = 'why'")[0] as {
        n: number;
      }
    ).n;
    expect(after - before).toBe(2);
  });

  test("--pending lists the project's unstated rows; unknown node is one line exit 0; bad calls exit 2/3", async () => {
    const p = await ws.run(["why", "--pending", "--project", "shop"]);
    expect(p.status).toBe(0);
    expect(p.stdout.split("\n")[0]).toBe("pending reasons (unstated) · 1");
    expect(p.stdout).toMatch(new RegExp(` #\\d+ · ${LOAD} · old-20261120 · 2026-11-20 09:12`));
    const unknown = await ws.run(["why", "shop.nope", "--project", "shop"]);
    expect(unknown.status).toBe(0);
    expect(unknown.stdout.trim()).toBe("nothing on record for shop.nope in project shop");
    expect((await ws.run(["why", "--project", "shop"])).status).toBe(2);
    const noProject = await ws.run(["why", LOAD_QN]);
    expect(noProject.status).toBe(2);
    expect(noProject.stderr).toMatch(/no project/);
    expect((await ws.run(["why", LOAD_QN, "--project", "nope"])).status).toBe(3);
    expect((await ws.run(["why", LOAD_QN, "--project", "shop", "--budget", "0"])).status).toBe(2);
  });
});
