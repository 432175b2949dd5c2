/** The ledger moments that take runs, through the flows every edge uses (applyOp). */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { applyOp } from "../../ledger/index.js";
import { makeLedgerFixture } from "../../testing/ledger-fixtures.js";
import { NodeEventType } from "./index.js";

function setup(withRepo = true) {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  const repo = join(fx.dir, "repo");
  mkdirSync(repo);
  execFileSync("git", ["init", "-q", repo]);
  writeFileSync(join(repo, "m.py"), "def f(x):\n    return x\n");
  fx.addProject("shop", withRepo ? repo : null);
  const runs = () =>
    fx.store.db.prepare("SELECT plan_id, step_id, trigger FROM prov_analysis_runs ORDER BY id").all() as {
      plan_id: string | null;
      step_id: string | null;
      trigger: string;
    }[];
  const publish = async () => {
    const r = await applyOp(fx.ledger, "publish-plan", {
      goal: "g",
      project: "shop",
      steps: [{ title: "a", type: "CODE" }],
    });
    expect(r.ok, r.error?.message).toBe(true);
    return r.result as { plan_id: string; notice?: string };
  };
  const toReview = async (planId: string) => {
    for (const op of ["start-step", "complete-step"] as const)
      expect((await applyOp(fx.ledger, op, { step_id: `${planId}-A` })).ok).toBe(true);
    return applyOp(fx.ledger, "start-step", { step_id: `${planId}-REVIEW.1` });
  };
  return { fx, repo, runs, publish, toReview };
}

describe("runs taken by the ledger", () => {
  it("publish takes a baseline run; starting REVIEW.1 takes the review run; regular steps take none", async () => {
    const t = setup();
    const p = await t.publish();
    expect(t.runs()).toEqual([{ plan_id: p.plan_id, step_id: null, trigger: "publish" }]);
    const r = await t.toReview(p.plan_id);
    expect(r.ok, r.error?.message).toBe(true);
    expect(t.runs()).toEqual([
      { plan_id: p.plan_id, step_id: null, trigger: "publish" },
      { plan_id: p.plan_id, step_id: `${p.plan_id}-REVIEW.1`, trigger: "review" },
    ]);
  });

  it("a plan without a repo, or of no project, takes no run", async () => {
    const t = setup(false);
    await t.publish();
    const none = await applyOp(t.fx.ledger, "publish-plan", { goal: "g", steps: ["x"] });
    expect(none.ok).toBe(true);
    expect(t.runs()).toEqual([]);
  });

  it("a failing analysis never fails publish or the review start: a notice, a step log line", async () => {
    const t = setup();
    rmSync(t.repo, { recursive: true, force: true });
    const p = await t.publish();
    expect(p.notice).toMatch(/state graph baseline not taken: no state graph/);
    const r = await t.toReview(p.plan_id);
    expect(r.ok, r.error?.message).toBe(true);
    expect(t.fx.store.getStep(`${p.plan_id}-REVIEW.1`)?.status).toBe("IN_PROGRESS");
    const logs = t.fx.store.db
      .prepare("SELECT kind, text FROM step_logs WHERE step_id = ?")
      .all(`${p.plan_id}-REVIEW.1`) as { kind: string; text: string }[];
    expect(logs).toEqual([
      {
        kind: "graph",
        text: expect.stringMatching(
          /^\[GRAPH\] state graph refresh failed, review goes on without it: no state graph/,
        ),
      },
    ]);
    expect(t.runs()).toEqual([]);
  });

  it("a refused start (not PENDING) takes no run", async () => {
    const t = setup();
    const p = await t.publish();
    await t.toReview(p.plan_id);
    const again = await applyOp(t.fx.ledger, "start-step", { step_id: `${p.plan_id}-REVIEW.1` });
    expect(again.exitStatus).toBe(4);
    expect(t.runs().length).toBe(2);
  });
});

describe("pinned names", () => {
  it("identity event types", () => {
    expect(NodeEventType).toEqual({
      Matched: "node_matched",
      Renamed: "node_renamed",
      Moved: "node_moved",
      Changed: "node_changed",
      Added: "node_added",
      Removed: "node_removed",
      Ambiguous: "identity_ambiguous",
    });
  });
});
