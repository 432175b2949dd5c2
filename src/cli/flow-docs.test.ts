/**
 * docs/cli.md's op table is generated from FLOWS: this test fails when they differ (cells are
 * compared trimmed, since biome pads Markdown tables). `UPDATE_DOCS=1` rewrites the table.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FLOWS } from "../ledger/index.js";
import { flowTable } from "./flow-args.js";

const DOC = join(import.meta.dirname, "..", "..", "docs", "cli.md");
const START =
  "<!-- flows:start (generated from FLOWS by src/cli/flow-docs.test.ts; UPDATE_DOCS=1 rewrites) -->";
const END = "<!-- flows:end -->";

const cells = (table: string) =>
  table
    .trim()
    .split("\n")
    .filter((l) => !/^\|\s*-/.test(l))
    .map((l) =>
      l
        .trim()
        .replace(/^\||\|$/g, "")
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );

describe("docs/cli.md", () => {
  it("holds the op table of every write flow, as FLOWS says", () => {
    const doc = readFileSync(DOC, "utf8");
    const a = doc.indexOf(START);
    const b = doc.indexOf(END);
    const expected = flowTable(FLOWS);
    if (process.env.UPDATE_DOCS === "1" && a >= 0 && b > a) {
      writeFileSync(DOC, `${doc.slice(0, a + START.length)}\n\n${expected}\n\n${doc.slice(b)}`);
      return;
    }
    expect(a, `docs/cli.md has no ${START} marker`).toBeGreaterThanOrEqual(0);
    expect(cells(doc.slice(a + START.length, b))).toEqual(cells(expected));
  });
});
