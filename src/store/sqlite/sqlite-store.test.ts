// The SQLite store's hot-path reads and writes (bench/ledger): rows built from raw-mode statements,
// the status-only fast paths and the cached positional updates must give exactly what the plain
// object-mode `SELECT *` gives and write exactly the columns asked.
import { describe, expect, it, onTestFinished } from "vitest";
import { type LedgerFixture, makeLedgerFixture } from "../../testing/ledger-fixtures.js";
import { STEP_COLUMNS } from "../columns.js";

function setup(): LedgerFixture {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  return fx;
}

/** A plan with a handed-off review, a deviation and a closed plan beside it: every row shape. */
function fill(fx: LedgerFixture) {
  fx.addProject("proj");
  const p = fx.publish("rows", ["THINKING", "ANALYSIS"], { project: "proj" });
  const [a, b] = p.step_ids;
  fx.ledger.start({ step_id: a as string, agent_input: "in" });
  fx.ledger.complete({ step_id: a as string, summary: "done", agent_output: "out" });
  fx.ledger.start({ step_id: b as string });
  fx.ledger.fail({ step_id: b as string, reason: "broke" });
  fx.ledger.deviate({
    parent_step_id: b as string,
    justification: "retry it",
    sub_steps: [{ title: "again", type: "THINKING" }],
  });
  const closed = fx.publish("closed", ["THINKING"]);
  fx.ledger.start({ step_id: closed.step_ids[0] as string });
  fx.ledger.complete({ step_id: closed.step_ids[0] as string });
  return { open: p.plan_id, closed: closed.plan_id };
}

describe("SqliteStore row reads", () => {
  it("builds the same rows as object-mode SELECT *: keys, key order, values and types", () => {
    const fx = setup();
    const ids = fill(fx);
    const db = fx.store.db;
    for (const planId of [ids.open, ids.closed, "ghost"]) {
      const plain = db.prepare("SELECT * FROM plans WHERE plan_id = ?").get(planId);
      const built = fx.store.getPlan(planId);
      expect(built).toStrictEqual(plain);
      expect(JSON.stringify(built)).toBe(JSON.stringify(plain));
      // Every StepRow column; migration 13's `reserve` is the one column reads leave out.
      const cols = STEP_COLUMNS.join(", ");
      const steps = db.prepare(`SELECT ${cols} FROM steps WHERE plan_id = ? ORDER BY depth, seq`).all(planId);
      expect(JSON.stringify(fx.store.stepsOfPlan(planId))).toBe(JSON.stringify(steps));
      for (const s of steps as { step_id: string }[]) {
        const one = fx.store.getStep(s.step_id);
        expect(one).toStrictEqual(s);
        expect(Object.keys(one ?? {})).toEqual([...STEP_COLUMNS]);
        const kids = db
          .prepare(`SELECT ${cols} FROM steps WHERE parent_step_id = ? ORDER BY seq`)
          .all(s.step_id);
        expect(JSON.stringify(fx.store.childrenOf(s.step_id))).toBe(JSON.stringify(kids));
      }
    }
    expect(fx.store.getStep("ghost")).toBeUndefined();
    expect(fx.store.childrenOf("ghost")).toEqual([]);
  });

  it("keeps numbers beyond 32 bits and NULLs as they are", () => {
    const fx = setup();
    const p = fx.publish("big", ["THINKING"]);
    const id = p.step_ids[0] as string;
    fx.store.tx(() => fx.store.updateStep(id, { duration_ms: 12_345_678_901, exit_code: null, tokens: 7 }));
    const s = fx.store.getStep(id);
    expect(s?.duration_ms).toBe(12_345_678_901);
    expect(s?.exit_code).toBeNull();
    expect(s?.tokens).toBe(7);
  });
});

describe("SqliteStore status fast paths", () => {
  it("hasOpenSteps agrees with countOpenSteps > 0 at every point of a plan's life", () => {
    const fx = setup();
    fx.addProject("proj");
    const p = fx.publish("open", ["THINKING", "THINKING"], { project: "proj" });
    const [a, b] = p.step_ids as [string, string];
    const agree = () => {
      expect(fx.store.hasOpenSteps(p.plan_id)).toBe(fx.store.countOpenSteps(p.plan_id) > 0);
      return fx.store.hasOpenSteps(p.plan_id);
    };
    expect(agree()).toBe(true);
    fx.ledger.start({ step_id: a });
    expect(agree()).toBe(true);
    fx.ledger.complete({ step_id: a });
    expect(agree()).toBe(true);
    fx.ledger.start({ step_id: b });
    const last = fx.ledger.complete({ step_id: b });
    // The hand-off: the review step is NEEDS_REVIEW but it is not a regular step; its child is.
    expect(last.review_status).toBe("NEEDS_REVIEW");
    expect(fx.store.stepStatus(p.review_step_id)).toBe("NEEDS_REVIEW");
    expect(agree()).toBe(false);
    expect(fx.store.hasOpenSteps("ghost")).toBe(false);
  });

  it("hasOpenSteps finds an open step wherever it sits: first, middle or last of a plan worked out of order", () => {
    const fx = setup();
    const p = fx.publish("order", ["THINKING", "THINKING", "THINKING"]);
    const [a, b, c] = p.step_ids as [string, string, string];
    for (const id of [c, b]) {
      fx.ledger.start({ step_id: id });
      fx.ledger.complete({ step_id: id });
    }
    // Only the first step is open; the newest rows (the review step, c, b) are not.
    expect(fx.store.hasOpenSteps(p.plan_id)).toBe(true);
    fx.ledger.start({ step_id: a });
    expect(fx.store.hasOpenSteps(p.plan_id)).toBe(true);
    const sub = fx.ledger.deviate({
      parent_step_id: a,
      justification: "split it",
      sub_steps: [{ title: "part", type: "THINKING" }],
    });
    expect(fx.store.hasOpenSteps(p.plan_id)).toBe(fx.store.countOpenSteps(p.plan_id) > 0);
    expect(sub).toBeDefined();
    fx.ledger.complete({ step_id: a });
    expect(fx.store.hasOpenSteps(p.plan_id)).toBe(fx.store.countOpenSteps(p.plan_id) > 0);
  });

  it("stepStatus and planStatus read what getStep and getPlan read; undefined for unknown ids", () => {
    const fx = setup();
    const p = fx.publish("st", ["THINKING"]);
    const id = p.step_ids[0] as string;
    fx.ledger.start({ step_id: id });
    expect(fx.store.stepStatus(id)).toBe(fx.store.getStep(id)?.status);
    expect(fx.store.planStatus(p.plan_id)).toBe(fx.store.getPlan(p.plan_id)?.status);
    fx.ledger.complete({ step_id: id });
    expect(fx.store.stepStatus(id)).toBe("COMPLETED");
    expect(fx.store.planStatus(p.plan_id)).toBe("COMPLETED");
    expect(fx.store.stepStatus("ghost")).toBeUndefined();
    expect(fx.store.planStatus("ghost")).toBeUndefined();
  });
});

describe("SqliteStore updates (cached positional statements)", () => {
  it("writes only the given columns, skips undefined, writes null, stamps updated_at unless given", () => {
    const fx = setup();
    const p = fx.publish("up", ["THINKING", "THINKING"]);
    const [a, b] = p.step_ids as [string, string];
    const before = fx.store.getStep(a);
    fx.clock.advance(1000);
    fx.store.tx(() => fx.store.updateStep(a, { summary: "s1", agent_output: undefined }));
    const after = fx.store.getStep(a);
    expect(after).toEqual({ ...before, summary: "s1", updated_at: "2026-01-01T00:00:01.000Z" });
    // The same column set again (the cached statement) with other values and another row.
    fx.store.tx(() => fx.store.updateStep(b, { summary: "s2" }));
    expect(fx.store.getStep(b)?.summary).toBe("s2");
    expect(fx.store.getStep(a)?.summary).toBe("s1");
    fx.store.tx(() => fx.store.updateStep(a, { summary: null, updated_at: "2030-01-01T00:00:00.000Z" }));
    expect(fx.store.getStep(a)).toMatchObject({ summary: null, updated_at: "2030-01-01T00:00:00.000Z" });
    fx.store.tx(() => fx.store.updatePlan(p.plan_id, { review_state: "skipped" }));
    expect(fx.store.getPlan(p.plan_id)).toMatchObject({
      review_state: "skipped",
      updated_at: "2026-01-01T00:00:01.000Z",
    });
  });

  it("refuses an update of a missing row and an update outside a transaction", () => {
    const fx = setup();
    expect(() => fx.store.tx(() => fx.store.updateStep("ghost", { summary: "x" }))).toThrow(
      /update of steps ghost changed 0 rows/,
    );
    const p = fx.publish("tx", ["THINKING"]);
    expect(() => fx.store.updateStep(p.step_ids[0] as string, { summary: "x" })).toThrow(
      /must run inside a store transaction/,
    );
    expect(fx.store.getStep(p.step_ids[0] as string)?.summary).toBeNull();
  });
});

describe("SqliteStore: the move's update finds its step by the rowid its read took", () => {
  it("updates exactly the step read, only inside the transaction of the read", () => {
    const fx = setup();
    const p = fx.publish("rowid", ["THINKING", "THINKING"]);
    const [a, b] = p.step_ids as [string, string];
    const db = fx.store.db;
    const row = (id: string) =>
      db.prepare(`SELECT ${STEP_COLUMNS.join(", ")} FROM steps WHERE step_id = ?`).get(id);
    const bBefore = row(b);
    // The read of a, then an update of a and one of b in the same transaction: each row gets its own.
    fx.store.tx(() => {
      fx.store.stepForMove(a, true);
      fx.store.updateStep(a, { status: "IN_PROGRESS", summary: "moved" });
      fx.store.updateStep(b, { summary: "beside" });
    });
    expect(fx.store.getStep(a)).toMatchObject({ status: "IN_PROGRESS", summary: "moved" });
    expect(fx.store.getStep(b)).toMatchObject({ status: "PENDING", summary: "beside" });
    expect(row(b)).toMatchObject({
      ...(bBefore as object),
      summary: "beside",
      updated_at: expect.any(String),
    });
    // A read outside the transaction records nothing for a later one.
    fx.store.stepForMove(b, false);
    fx.store.tx(() => fx.store.updateStep(b, { summary: "again" }));
    expect(fx.store.getStep(b)?.summary).toBe("again");
    // A row renumbered between the read and the update (only raw SQL can, inside the write lock) is
    // never written through the stale rowid: no other row changes and the update is refused.
    const others = () =>
      db.prepare("SELECT step_id, summary, status, updated_at FROM steps WHERE step_id <> ?").all(a);
    const before = others();
    expect(() =>
      fx.store.tx(() => {
        fx.store.stepForMove(a, false);
        db.prepare("UPDATE steps SET rowid = (SELECT max(rowid) + 100 FROM steps) WHERE step_id = ?").run(a);
        fx.store.updateStep(a, { summary: "stale" });
      }),
    ).toThrow(/changed 0 rows/);
    expect(others()).toEqual(before);
    expect(fx.store.getStep(a)?.summary).toBe("moved");
  });
});
