/**
 * Provenance through the BUILT CLI on PostgreSQL (`RATCHET_DB=postgres://…`, a real server from
 * test/harness/pg.ts) and, for comparison, on a SQLite file: the same commands in the same order
 * on two fresh "machines" — register (analysis run 1), the prompt hook (exit 0, silent), publish
 * (baseline), the edit and the REVIEW.1 refresh, `graph nodes|show`, `note --node`, `reference
 * add|mark`, `reason slots|fill`, the close, a blocking headline (exit 4, nothing written) answered
 * on the next publish, `headline show`, `why` as text and `--json`. Every answer is checked on
 * PostgreSQL, then both machines' answers are compared with times, shas and plan ids masked.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { PgStore } from "../../src/store/index.js";
import { type PgCluster, pgAvailable, startPgCluster } from "../harness/pg.js";
import { assertBuilt, type CliResult, makeTempDir, ratchet, startRatchet } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 240_000, hookTimeout: 120_000 });

let cluster: PgCluster;
const dirs: string[] = [];

beforeAll(async () => {
  assertBuilt();
  if (!pgAvailable()) return;
  cluster = await startPgCluster();
});
afterAll(() => {
  cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const PY =
  "def helper(x):\n    return x + 1\n\n\ndef load_orders(path):\n    return helper(len(open(path).read()))\n";
const PY_EDIT = `${PY}\n\ndef fiscal_week(day):\n    return day.isocalendar()[1]\n`;
const PROMPT = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";

function machine(db: (dir: string) => string) {
  const dir = makeTempDir("ratchet-prov-cli-");
  dirs.push(dir);
  const repo = join(dir, "shop");
  mkdirSync(join(repo, "shop"), { recursive: true });
  writeFileSync(join(repo, "shop", "pipeline.py"), PY);
  const git = (...a: string[]) => execFileSync("git", a, { cwd: repo, stdio: "ignore" });
  git("init", "-q");
  git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".");
  git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "files");
  const env = { RATCHET_DB: db(dir), RATCHET_HOOK_ERRORS: join(dir, "hook-errors.log") };
  return {
    dir,
    repo,
    run: (args: readonly string[], input?: unknown) =>
      ratchet(args, {
        cwd: repo,
        env,
        timeoutMs: 120_000,
        ...(input !== undefined ? { input: typeof input === "string" ? input : JSON.stringify(input) } : {}),
      }),
  };
}
type Machine = ReturnType<typeof machine>;

const ok = (r: CliResult, what: string) => {
  expect(r.status, `${what}: ${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
};
/** The JSON a command printed before its marker line. */
const body = (r: CliResult) => JSON.parse(r.lines.slice(0, -1).join("\n") || r.stdout);

/** Runs the sequence; returns every answer, masked for comparison. */
async function sequence(m: Machine) {
  const out: Record<string, unknown> = {};
  const add = ok(await m.run(["project", "add", "shop", "--repo", m.repo]), "project add");
  out.add = add.marker;
  const hook = await m.run(["hook", "user-prompt"], {
    prompt: PROMPT,
    cwd: m.repo,
    session_id: "s-1",
    hook_event_name: "UserPromptSubmit",
  });
  out.hook = [hook.status, hook.stdout, hook.stderr];
  const pub = ok(
    await m.run(["plan", "publish", "-"], { goal: "fiscal weeks", prefix: "orders", steps: ["edit"] }),
    "publish",
  );
  const plan = pub.marker?.plan_id as string;
  const step = (pub.marker?.step_ids as string[] | undefined)?.[0] ?? `${plan}-1`;
  writeFileSync(join(m.repo, "shop", "pipeline.py"), PY_EDIT);
  ok(await m.run(["step", "start", "-"], { step_id: step }), "start");
  const done = ok(
    await m.run(["step", "complete", "-"], { step_id: step, summary: "added fiscal_week" }),
    "complete",
  );
  const review = `${plan}-REVIEW.1`;
  out.done = done.marker;
  ok(await m.run(["step", "start", "-"], { step_id: review }), "review start");
  const nodes = ok(await m.run(["graph", "nodes", "--project", "shop", "--json"]), "graph nodes");
  out.nodes = JSON.parse(nodes.stdout);
  const show = ok(await m.run(["graph", "show", "shop.pipeline.fiscal_week", "--json"]), "graph show");
  const fiscal = JSON.parse(show.stdout).resolved.node_key as string;
  out.show = JSON.parse(show.stdout);
  const note = ok(
    await m.run([
      "note",
      "the weekly grain is what finance signs off",
      "--at",
      "2026-11-30",
      "--node",
      "shop.pipeline.load_orders",
    ]),
    "note",
  );
  out.note = body(note);
  const ref = ok(
    await m.run([
      "reference",
      "add",
      "--utterance",
      "1",
      "--kind",
      "ticket",
      "--label",
      "FIN-12",
      "--uri",
      "https://t.example/FIN-12",
      "--occurred-at",
      "2026-11-30",
    ]),
    "reference add",
  );
  out.ref = body(ref);
  out.mark = body(ok(await m.run(["reference", "mark", "1", "--ok"]), "reference mark"));
  const slots = ok(await m.run(["reason", "slots", plan, "--draft"]), "reason slots");
  out.slots = slots.stdout;
  const refusedFill = await m.run(["reason", "fill", "-"], {
    plan_id: plan,
    reasons: [{ node_key: fiscal, text: "x" }],
  });
  out.refusedFill = [refusedFill.status, refusedFill.stderr];
  const fill = ok(
    await m.run(["reason", "fill", "-"], {
      plan_id: plan,
      reasons: [{ node_key: fiscal, interpretation: "the rollup groups orders by fiscal week", refs: [1] }],
    }),
    "reason fill",
  );
  out.fill = body(fill);
  const close = ok(await m.run(["step", "complete", "-"], { step_id: review, summary: "reviewed" }), "close");
  out.close = close.marker;
  writeFileSync(
    join(m.repo, "provledger-extensions.json"),
    JSON.stringify({
      version: 1,
      constraints: [{ node: "shop.pipeline.load_orders", statement: "weekly grain stays", block: true }],
    }),
  );
  const next = {
    goal: "calendar weeks",
    prefix: "cal",
    steps: ["edit"],
    declared_targets: ["shop.pipeline.load_orders"],
  };
  const refused = await m.run(["plan", "publish", "-"], next);
  out.refused = [refused.status, refused.marker];
  const fid = /active_constraint:[\w:]+/.exec(refused.stderr + refused.stdout)?.[0];
  const answered = ok(
    await m.run(["plan", "publish", "-"], {
      ...next,
      headline_notes: [{ answer: fid, action: "proceed", rationale: "kept weekly", by: "human" }],
    }),
    "publish answered",
  );
  const plan2 = answered.marker?.plan_id as string;
  out.headline = ok(await m.run(["headline", "show", plan2]), "headline show").stdout;
  out.whyText = ok(await m.run(["why", "shop.pipeline.load_orders"]), "why").stdout;
  out.whyJson = JSON.parse(
    ok(await m.run(["why", "shop.pipeline.load_orders", "--json"]), "why --json").stdout,
  );
  out.search = ok(await m.run(["why", "--search", "fiscal WEEK"]), "why --search").stdout;
  out.pending = ok(await m.run(["why", "--pending"]), "why --pending").stdout;
  out.neverRead = ok(await m.run(["why", "--never-read"]), "why --never-read").stdout;
  out.refPending = ok(await m.run(["reference", "pending", "--json"]), "reference pending").stdout;
  out.refresh = body(ok(await m.run(["graph", "refresh", "--project", "shop", "--json"]), "graph refresh"));
  const masked = JSON.stringify(out)
    .split(plan2)
    .join("<plan2>")
    .split(plan)
    .join("<plan>")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<t>")
    .replace(/\d{4}-\d\d-\d\d \d\d:\d\d/g, "<t>")
    .replace(/\b[0-9a-f]{40}\b/g, "<sha>")
    .replace(/"duration_ms":\d+/g, '"duration_ms":0')
    .replace(/\d+ ms\b/g, "0 ms")
    .split(m.repo)
    .join("<repo>");
  return { out, masked: JSON.parse(masked) as Record<string, unknown>, plan, fiscal };
}

describe.skipIf(!pgAvailable())("provenance through the CLI with RATCHET_DB=postgres://…", () => {
  test("every provenance command works on PostgreSQL and answers as on SQLite", async () => {
    const url = await cluster.createDatabase();
    const pg = machine(() => url);
    const lite = machine((dir) => join(dir, ".ratchet", "ratchet.db"));
    const b = await sequence(pg);
    const o = b.out as Record<string, unknown>;
    expect(o.add).toMatchObject({ ok: true, op: "project-add", graph_run_id: 1 });
    expect(o.hook).toEqual([0, "", ""]);
    expect(o.nodes).toMatchObject({ project: "shop", run_id: 3 });
    expect(JSON.stringify(o.nodes)).toContain("shop.pipeline.fiscal_week");
    expect(o.slots as string).toContain("shop.pipeline.fiscal_week");
    expect(o.refusedFill).toEqual([2, expect.stringContaining('"text" is not accepted')]);
    expect(o.fill).toMatchObject({ filled: 1 });
    expect(o.refused).toEqual([4, expect.objectContaining({ ok: false, code: "headline_blocked" })]);
    expect(o.headline as string).toContain("active_constraint");
    expect(o.whyText as string).toContain("shop.pipeline.load_orders");
    expect(o.whyText as string).toContain("the weekly grain is what finance signs off");
    expect(o.search as string).toMatch(/"fiscal WEEK" · [1-9]/);
    expect(o.refresh).toMatchObject({ project: "shop", run: { trigger: "manual" } });
    const a = await sequence(lite);
    expect(b.masked).toEqual(a.masked);
  });
});

describe.skipIf(!pgAvailable())("the prompt hook on PostgreSQL under attack", () => {
  test("six prompts at once from six processes: six rows on one unforked chain, each with its event", async () => {
    const url = await cluster.createDatabase();
    const m = machine(() => url);
    ok(await m.run(["project", "add", "shop", "--repo", m.repo]), "project add");
    const procs = Array.from({ length: 6 }, (_, i) =>
      startRatchet(["hook", "user-prompt"], {
        cwd: m.repo,
        holdStdin: true,
        input: JSON.stringify({ prompt: `prompt ${i}`, cwd: m.repo, session_id: `s-${i}` }),
        env: { RATCHET_DB: url, RATCHET_HOOK_ERRORS: join(m.dir, "hook-errors.log") },
        timeoutMs: 60_000,
      }),
    );
    for (const p of procs) p.release();
    const results = await Promise.all(procs.map((p) => p.done));
    expect(results.map((r) => [r.status, r.stdout, r.stderr])).toEqual(results.map(() => [0, "", ""]));
    expect(existsSync(join(m.dir, "hook-errors.log"))).toBe(false);
    const store = PgStore.open(url);
    try {
      const rows = store.sql.all<{
        id: number;
        prev_hash: string;
        hash: string;
        text: string;
        project: string;
      }>("SELECT id, prev_hash, hash, text, project FROM prov_utterances ORDER BY id");
      expect(rows.map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(rows.map((r) => r.text).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `prompt ${i}`));
      expect(rows.every((r) => r.project === "shop")).toBe(true);
      expect(rows.map((r) => r.prev_hash)).toEqual(["", ...rows.slice(0, -1).map((r) => r.hash)]);
      expect(new Set(rows.map((r) => r.prev_hash)).size).toBe(6);
      const events = store.listEvents({ entityKind: "utterance", limit: 100 });
      expect(events.map((e) => e.entity_id).sort()).toEqual(["1", "2", "3", "4", "5", "6"]);
    } finally {
      store.close();
    }
  });

  test("an unreachable server or a missing database: exit 0, nothing printed, the error logged with the password masked", async () => {
    const dir = makeTempDir("ratchet-prov-hook-down-");
    dirs.push(dir);
    const log = join(dir, "hook-errors.log");
    const prompt = JSON.stringify({ prompt: "words that cannot be stored", cwd: dir });
    // Port 1: nothing listens there.
    const down = await ratchet(["hook", "user-prompt"], {
      cwd: dir,
      input: prompt,
      env: { RATCHET_DB: "postgres://ratchet:pw-not-for-logs@127.0.0.1:1/none", RATCHET_HOOK_ERRORS: log },
      timeoutMs: 30_000,
    });
    expect([down.status, down.stdout, down.stderr]).toEqual([0, "", ""]);
    const bad = new URL(cluster.url("postgres"));
    bad.password = "pw-not-for-logs";
    bad.pathname = "/no_such_database";
    const wrong = await ratchet(["hook", "user-prompt"], {
      cwd: dir,
      input: prompt,
      env: { RATCHET_DB: bad.toString(), RATCHET_HOOK_ERRORS: log },
      timeoutMs: 30_000,
    });
    expect([wrong.status, wrong.stdout, wrong.stderr]).toEqual([0, "", ""]);
    const text = readFileSync(log, "utf8");
    expect(text.trim().split("\n")).toHaveLength(2);
    expect(text).toContain("hook user-prompt:");
    expect(text).not.toContain("pw-not-for-logs");
    expect(text).toContain("ratchet:***@127.0.0.1:1");
  });
});
