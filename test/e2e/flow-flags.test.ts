/**
 * Flag-style writes (generated from each flow's schema) give the same rows and events as the JSON
 * form; a misspelled flag is refused with a suggestion and nothing written.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { assertBuilt, makeWorkspace, publish, query, snapshot, type TestWorkspace } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const workspaces: TestWorkspace[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** Every row of the ledger tables, with the plan id replaced and times/leases dropped. */
function rows(ws: TestWorkspace, planId: string) {
  const norm = (v: unknown) => (typeof v === "string" ? v.replaceAll(planId, "P") : v);
  const drop = new Set([
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "heartbeat_at",
    "lease_expires_at",
    "lease_holder",
    "duration_ms",
    "at",
    "id",
    "source_cwd",
  ]);
  const clean = (r: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(r)
        .filter(([k]) => !drop.has(k))
        .map(([k, v]) => [k, norm(v)]),
    );
  return {
    steps: query(ws, "SELECT * FROM steps ORDER BY step_id").map(clean),
    logs: query(ws, "SELECT * FROM step_logs ORDER BY id").map(clean),
    deviations: query(ws, "SELECT * FROM deviations ORDER BY id").map(clean),
    events: query<{ type: string; entity_id: string; payload: string }>(
      ws,
      "SELECT type, entity_id, payload FROM events ORDER BY id",
    ).map((e) => {
      const p = JSON.parse(e.payload) as Record<string, unknown>;
      delete p.lease_expires_at;
      delete p.lease_holder;
      return {
        type: e.type,
        entity: norm(e.entity_id),
        payload: JSON.parse(String(norm(JSON.stringify(p)))),
      };
    }),
  };
}

describe("flag-style writes", () => {
  test("start / log / complete / fail / deviate by flags write the same rows and events as by JSON", async () => {
    const result: ReturnType<typeof rows>[] = [];
    for (const form of ["json", "flags"] as const) {
      const ws = await makeWorkspace(`ratchet-e2e-flags-${form}-`);
      workspaces.push(ws);
      const p = await publish(ws, { goal: "same", prefix: "same", steps: ["a", "b"] });
      const [A, B] = p.step_ids as [string, string];
      const out = join(ws.dir, "out.txt");
      writeFileSync(out, "captured output\n");
      const run = async (args: string[], json: Record<string, unknown>) => {
        const r =
          form === "json"
            ? await ws.run([...args, "-"], { input: JSON.stringify(json) })
            : await ws.run(args.concat(flagsOf(json)));
        expect(r.status, `${form} ${args.join(" ")}: ${r.stderr}`).toBe(0);
      };
      const flagsOf = (json: Record<string, unknown>) => {
        const f: string[] = [];
        for (const [k, v] of Object.entries(json)) {
          if (k === "step_id" || k === "parent_step_id") f.unshift(String(v));
          else if (k === "log_context") f.push("--log-context-file", out);
          else f.push(`--${k.replaceAll("_", "-")}`, typeof v === "string" ? v : JSON.stringify(v));
        }
        return f;
      };
      await run(["step", "start"], { step_id: A, type: "ANALYSIS", lease_seconds: 600 });
      await run(["step", "log"], { step_id: A, text: "a line" });
      await run(["step", "complete"], { step_id: A, summary: "done", log_context: "captured output\n" });
      await run(["step", "start"], { step_id: B });
      await run(["step", "fail"], { step_id: B, reason: "broke" });
      await run(["step", "deviate"], { parent_step_id: B, justification: "retry", sub_steps: ["again"] });
      result.push(rows(ws, p.plan_id));
    }
    expect(result[1]).toEqual(result[0]);
    expect(result[0]?.events.map((e) => e.type)).toContain("plan.deviated");
  });

  test("a misspelled flag is refused with a suggestion (exit 2), nothing written", async () => {
    const ws = await makeWorkspace("ratchet-e2e-flags-typo-");
    workspaces.push(ws);
    const p = await publish(ws, { goal: "typo", steps: ["a"] });
    const before = snapshot(ws);
    const r = await ws.run(["step", "fail", p.step_ids[0] as string, "--reasn", "x"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("did you mean --reason?");
    expect(r.marker).toMatchObject({ ok: false, op: "fail-step", code: "usage" });
    expect(snapshot(ws)).toEqual(before);
    const help = await ws.run(["step", "complete", "--help"]);
    expect(help.stdout).toContain("--log-context-file");
    expect(help.stdout).toContain("Example:");
  });
});
