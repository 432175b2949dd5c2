import { describe, expect, it } from "vitest";
import {
  charLength,
  checklistText,
  containsLiteral,
  draftFor,
  localName,
  namesNode,
  r0Literals,
  scoreUtterance,
  slotKeys,
  splitSentences,
  tokens,
} from "./text.js";

const WORDS = "Keep fiscal weeks in load_orders. Finance reconciles weekly, not by calendar week.";
const LOAD_ORDERS = { qualified_name: "shop.pipeline.load_orders", file_path: "shop/pipeline.py" };
const FISCAL_WEEK = {
  qualified_name: "shop.pipeline.load_orders:df.fiscal_week",
  file_path: "shop/pipeline.py",
};

describe("tokens and slot keys", () => {
  it("keeps identifiers of ≥ 3 characters, lower-cased, minus stopwords", () => {
    expect([...tokens("Please fix the Load_Orders function so it works, ok? x1 ab abc")]).toEqual([
      "load_orders",
      "works",
      "abc",
    ]);
  });
  it("takes the local name, the local name split on _, and the parent segment", () => {
    expect(localName(FISCAL_WEEK.qualified_name)).toBe("fiscal_week");
    expect([...slotKeys(FISCAL_WEEK.qualified_name)].sort()).toEqual([
      "fiscal",
      "fiscal_week",
      "load_orders",
      "week",
    ]);
    expect([...slotKeys(LOAD_ORDERS.qualified_name)].sort()).toEqual([
      "load",
      "load_orders",
      "orders",
      "pipeline",
    ]);
    expect([...slotKeys("main")]).toEqual(["main"]);
  });
});

describe("splitSentences", () => {
  it("splits after . + space, after !?。！？ and at newlines; keeps rollup.py whole; trims", () => {
    const s = splitSentences("Edit rollup.py now.  Why? 因为这样。再来！ok\n  last line  ");
    expect(s.map((x) => x.text)).toEqual([
      "Edit rollup.py now.",
      "Why?",
      "因为这样。",
      "再来！",
      "ok",
      "last line",
    ]);
  });
  it("gives code-point offsets (an emoji is one character) that slice back to the sentence", () => {
    const text = "😀 keep load_orders. 🚀 next 𠮷 one.";
    const cps = Array.from(text);
    for (const s of splitSentences(text)) expect(cps.slice(s.start, s.end).join("")).toBe(s.text);
    expect(splitSentences(text)[0]).toEqual({ text: "😀 keep load_orders.", start: 0, end: 19 });
    expect(charLength(text)).toBe(cps.length);
    expect(charLength(text)).toBeLessThan(text.length);
  });
  it("the worked example's first sentence is [0,33] of 82 characters", () => {
    expect(charLength(WORDS)).toBe(82);
    expect(splitSentences(WORDS)[0]).toEqual({
      text: "Keep fiscal weeks in load_orders.",
      start: 0,
      end: 33,
    });
  });
  it("gives nothing for blank text", () => {
    expect(splitSentences("  \n \n")).toEqual([]);
  });
});

describe("R0 literal test", () => {
  it("matches the local name, qualified name or file basename standalone and case-sensitively", () => {
    expect(namesNode("Keep fiscal weeks in load_orders.", LOAD_ORDERS)).toBe(true);
    expect(namesNode("keep LOAD_ORDERS", LOAD_ORDERS)).toBe(false);
    expect(namesNode("see load_orders_v2", LOAD_ORDERS)).toBe(false);
    expect(namesNode("see xload_orders", LOAD_ORDERS)).toBe(false);
    expect(namesNode("in pipeline.py it breaks", LOAD_ORDERS)).toBe(true);
    expect(namesNode("shop.pipeline.load_orders is slow", LOAD_ORDERS)).toBe(true);
    expect(namesNode("fiscal weeks", FISCAL_WEEK)).toBe(false);
  });
  it("ignores short and common local names but still takes the qualified name", () => {
    expect(r0Literals({ qualified_name: "app.main" })).toEqual(["app.main"]);
    expect(r0Literals({ qualified_name: "app.run" })).toEqual(["app.run"]);
    expect(r0Literals({ qualified_name: "a.abc" })).toEqual(["a.abc"]);
    expect(namesNode("call main first", { qualified_name: "app.main" })).toBe(false);
  });
  it("finds a later standalone occurrence after a glued one", () => {
    expect(containsLiteral("load_orders_x then load_orders", "load_orders")).toBe(true);
  });
});

describe("draft scoring", () => {
  it("scores the worked example: 11 r0 [0,33] and 3 overlap [0,82]", () => {
    const u = { id: 42, text: WORDS };
    expect(scoreUtterance(LOAD_ORDERS, u)).toEqual({
      utterance_id: 42,
      span: [0, 33],
      score: 11,
      kind: "r0",
      preview: WORDS, // 120 characters from the span start (the spec's rule), here the whole text
    });
    expect(scoreUtterance(FISCAL_WEEK, u)).toMatchObject({ span: [0, 82], score: 3, kind: "overlap" });
  });
  it("keeps the top 2 by (−score, utterance id) and drops zero scores", () => {
    const us = [
      { id: 7, text: "orders are weekly" },
      { id: 3, text: "the orders matter" },
      { id: 5, text: "Keep load_orders fast." },
      { id: 1, text: "nothing relevant here" },
    ];
    expect(draftFor(LOAD_ORDERS, us).map((c) => [c.utterance_id, c.score])).toEqual([
      [5, 11],
      [3, 1],
    ]);
    expect(draftFor(LOAD_ORDERS, [{ id: 1, text: "nothing relevant" }])).toEqual([]);
  });
  it("cuts the preview to 120 characters from the span start, in code points", () => {
    const long = `${"😀".repeat(130)} load_orders`;
    const c = scoreUtterance(LOAD_ORDERS, { id: 1, text: long });
    expect(Array.from(c?.preview ?? "").length).toBe(120);
  });
});

describe("checklistText", () => {
  it("numbers the slots and says `unstated`", () => {
    const t = checklistText("p", [
      { node_key: "nk_1", qualified_name: "a.b", node_type: "function", event_types: ["node_changed"] },
      {
        node_key: "nk_2",
        qualified_name: "a.c",
        node_type: "class",
        event_types: ["node_added", "node_renamed"],
      },
    ]);
    expect(t).toContain("`unstated`");
    expect(t).toContain("  1. a.b (function, node_changed) [nk_1]");
    expect(t).toContain("  2. a.c (class, node_added/node_renamed) [nk_2]");
    expect(checklistText("p", [])).toMatch(/no changed node needs a reason/);
  });
});
