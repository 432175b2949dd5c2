/**
 * The spec's worked example (§8) as real rows, for the reasons tests: project `shop`, plan
 * `orders-fiscal-20261201101500` handed off to `-REVIEW.1`, runs 3 and 7 of the node source with
 * their snapshots and events, utterance #42, reference #9 and constraint #118. Real migrations, a
 * real SQLite file, the real ledger, a real git repo holding `load_orders` where the runs say; the
 * node source is the analyser's (`nodeSourceFor`), reading runs 3 and 7 recorded as the analyser
 * records them (fixed keys and run ids, so the worked example's numbers hold; the column node
 * `fiscal_week` is a data node the analyser does not produce yet).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { iso } from "../../core/index.js";
import type { SqliteDb } from "../../store/index.js";
import { type LedgerFixture, makeLedgerFixture } from "../../testing/ledger-fixtures.js";
import { insertChained, insertRow } from "../rows.js";
import { writeRepo } from "./why-fixture.js";

export const PLAN = "orders-fiscal-20261201101500";
export const REVIEW1 = `${PLAN}-REVIEW.1`;
export const LOAD_ORDERS = "nk_34676ea5f1d4";
export const FISCAL_WEEK = "nk_a72a091c8cc2";
export const WORDS = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";

export interface ShopFixture extends LedgerFixture {
  repo: string;
  db: SqliteDb;
  /** Row counts of every table a reason write could touch. */
  counts(): Record<string, number>;
  /** Completes `-REVIEW.1` (start + complete): the roll-up closes the plan. */
  closeReview(): Record<string, unknown>;
  /** Writes the project's provledger-extensions.json. */
  extensions(doc: unknown): void;
  utterance(row: {
    id?: number;
    text: string;
    plan_id?: string | null;
    session_id?: string | null;
    at?: string;
  }): number;
}

const TABLES = [
  "prov_change_reasons",
  "prov_trigger_log",
  "prov_influence",
  "prov_reference_links",
  "prov_read_hits",
  "events",
];

/** The worked example up to the hand-off (`graph: false` leaves the node source empty). */
export function shopFixture(
  opts: { graph?: boolean; words?: boolean; constraintOn?: string } = {},
): ShopFixture {
  const fx = makeLedgerFixture({ startMs: Date.UTC(2026, 11, 1, 10, 15, 0) });
  const repo = join(fx.dir, "shop");
  writeRepo(repo, [
    {
      node_key: LOAD_ORDERS,
      qualified_name: "shop.pipeline.load_orders",
      file_path: "shop/pipeline.py",
      line_start: 10,
      line_end: 34,
    },
  ]);
  fx.addProject("shop", repo);
  const db = fx.store.db;
  const p = fx.publish("Keep fiscal weeks in the orders pipeline", ["CODE"], {
    project: "shop",
    prefix: "orders-fiscal",
  });
  if (p.plan_id !== PLAN) throw new Error(`test kit: plan id ${p.plan_id}`);
  const at = (min: number) => iso(Date.UTC(2026, 11, 1, 10, 15 + min, 0));
  const utterance: ShopFixture["utterance"] = (u) =>
    fx.store.tx(() =>
      insertChained(db, "prov_utterances", {
        ...(u.id !== undefined ? { id: u.id } : {}),
        session_id: u.session_id ?? "s-1",
        project: "shop",
        plan_id: u.plan_id === undefined ? PLAN : u.plan_id,
        text: u.text,
        occurred_at: u.at ?? at(1),
        recorded_at: u.at ?? at(1),
        origin: "hook",
      }),
    );
  fx.store.tx(() => {
    insertChained(db, "prov_change_reasons", {
      id: 118,
      project: "shop",
      node_key: opts.constraintOn ?? LOAD_ORDERS,
      plan_id: "note",
      kind: "organizational",
      role: "constraint",
      statement: "weekly grain stays; finance reconciles by fiscal week",
      state: "active",
      occurred_at: at(-50),
      recorded_at: at(-50),
      recorded_by: "human",
      tier: "asserted",
    });
    insertChained(db, "prov_references", {
      id: 9,
      project: "shop",
      kind: "doc",
      uri: "https://wiki.example/finance/fiscal-calendar",
      label: "finance fiscal calendar",
      occurred_at: at(-40),
      registered_at: at(-40),
      verifiability: "linked",
    });
  });
  if (opts.graph !== false) {
    fx.store.tx(() => {
      // Run 3 minted load_orders' key; run 7 is the review refresh attributed to the plan.
      insertRow(db, "prov_analysis_runs", {
        id: 3,
        project: "shop",
        plan_id: null,
        step_id: null,
        trigger: "register",
        commit_sha: "aaa",
        created_at: at(-60),
      });
      const snap = (run: number, key: string, type: string, qn: string, a: number, b: number, sig: string) =>
        insertRow(db, "prov_node_snapshots", {
          run_id: run,
          node_key: key,
          node_type: type,
          qualified_name: qn,
          file_path: "shop/pipeline.py",
          line_start: a,
          line_end: b,
          struct_sig: sig,
          dataflow_sig: "trivial",
        });
      snap(3, LOAD_ORDERS, "function", "shop.pipeline.load_orders", 10, 30, "s1");
    });
  }
  if (opts.words !== false) utterance({ id: 42, text: WORDS });
  fx.clock.advance(10 * 60_000);
  const a = p.step_ids[0] as string;
  fx.ledger.start({ step_id: a });
  const done = fx.ledger.complete({ step_id: a, summary: "weeks are fiscal" });
  if (done.review_child_step_id !== REVIEW1) throw new Error("test kit: no hand-off");
  fx.ledger.start({ step_id: REVIEW1 });
  if (opts.graph !== false) {
    fx.store.tx(() => {
      insertRow(db, "prov_analysis_runs", {
        id: 7,
        project: "shop",
        plan_id: PLAN,
        step_id: REVIEW1,
        trigger: "review",
        commit_sha: "bbb",
        created_at: at(11),
      });
      insertRow(db, "prov_node_snapshots", {
        run_id: 7,
        node_key: LOAD_ORDERS,
        node_type: "function",
        qualified_name: "shop.pipeline.load_orders",
        file_path: "shop/pipeline.py",
        line_start: 10,
        line_end: 34,
        struct_sig: "s2",
        dataflow_sig: "d2",
      });
      insertRow(db, "prov_node_snapshots", {
        run_id: 7,
        node_key: FISCAL_WEEK,
        node_type: "column",
        qualified_name: "shop.pipeline.load_orders:df.fiscal_week",
        file_path: "shop/pipeline.py",
        line_start: 20,
        line_end: 20,
        struct_sig: null,
        dataflow_sig: null,
      });
      const ev = (seq: number, type: string, key: string, payload: unknown) =>
        insertRow(db, "prov_node_events", {
          run_id: 7,
          seq,
          event_type: type,
          node_key: key,
          payload: JSON.stringify(payload),
        });
      ev(1, "node_changed", LOAD_ORDERS, { changed: ["struct_sig"] });
      ev(2, "node_added", FISCAL_WEEK, {});
    });
  }
  return {
    ...fx,
    repo,
    db,
    utterance,
    counts() {
      return Object.fromEntries(
        TABLES.map((t) => [t, (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n]),
      );
    },
    closeReview() {
      return fx.ledger.complete({ step_id: REVIEW1, summary: "graph refreshed, reasons filled" });
    },
    extensions(doc) {
      writeFileSync(join(repo, "provledger-extensions.json"), JSON.stringify(doc));
    },
  };
}
