// The candidate-utterance rule of drafts and R0 (spec §4.2), over real rows: the reasons area reads
// them through the words area's one reader (`candidateUtterances`).
import { afterEach, describe, expect, it } from "vitest";
import { candidateUtterances, SqlWordStore } from "../words/index.js";
import { PLAN, type ShopFixture, shopFixture } from "./test-kit.js";

let fx: ShopFixture;
afterEach(() => fx?.dispose());

describe("candidateUtterances (the draft and R0 material)", () => {
  it("takes the plan's, the project's inside the plan window, and its sessions' (plans.session_id too)", () => {
    fx = shopFixture({ words: false });
    fx.store.tx(() => fx.db.prepare("UPDATE plans SET session_id = 's-plan' WHERE plan_id = ?").run(PLAN));
    const before = "2026-11-30T00:00:00.000Z";
    const inside = "2026-12-01T10:20:00.000Z";
    const ids = {
      attributed: fx.utterance({ text: "a", session_id: "s-1", at: before }),
      window: fx.utterance({ text: "b", plan_id: null, session_id: "s-x", at: inside }),
      early: fx.utterance({ text: "c", plan_id: null, session_id: "s-y", at: before }),
      sameSession: fx.utterance({ text: "d", plan_id: "other-plan", session_id: "s-1", at: before }),
      planSession: fx.utterance({ text: "e", plan_id: null, session_id: "s-plan", at: before }),
    };
    // another project's words inside the window are not the plan's
    const other = fx.store.tx(() =>
      fx.db
        .prepare(
          "INSERT INTO prov_utterances (session_id, project, text, occurred_at, recorded_at, origin, prev_hash, hash) VALUES ('s-z', 'elsewhere', 'f', ?, ?, 'hook', '', 'h')",
        )
        .run(inside, inside),
    );
    expect(Number(other.lastInsertRowid)).toBeGreaterThan(0);
    const got = candidateUtterances(new SqlWordStore(fx.store), PLAN).map((u) => u.id);
    expect(got).toEqual([ids.attributed, ids.window, ids.sameSession, ids.planSession]);
  });
});
