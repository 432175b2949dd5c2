import { describe, expect, it } from "vitest";
import type { JsonCheck } from "./types.js";
import {
  checkDbRows,
  checkJsonDocument,
  evaluateJsonCheck,
  isReadOnlyQuery,
  jsonEqual,
  rowsNeeded,
  safeRelativeName,
  topLevelErrorIssue,
} from "./validation-checks.js";

const doc = {
  title: "Weekly report",
  count: 3,
  ratio: 0.5,
  ok: true,
  nothing: null,
  items: [
    { id: "o-1", amount: 10 },
    { id: "o-2", amount: 20 },
    { id: "x-3", amount: 30 },
  ],
  ids: ["o-1", "o-2", "x-3"],
  region: "eu",
  regions: ["eu", "us"],
  total: 60,
  min: 10,
  starts: "2026-01-01",
  ends: "2026-01-07",
  nested: { a: [1, { b: 2 }] },
  copy: { a: [1, { b: 2 }] },
};

const run = (check: JsonCheck) => evaluateJsonCheck(doc, check, "out.json");
const checksOf = (check: JsonCheck) => run(check).map((i) => i.check);

describe("evaluateJsonCheck", () => {
  it("must_exist", () => {
    expect(run({ path: "$.title", must_exist: true })).toEqual([]);
    expect(run({ path: "$.nothing", must_exist: true })).toEqual([]);
    expect(run({ path: "$.missing", must_exist: true })).toEqual([
      { file: "out.json", path: "$.missing", check: "must_exist", message: "not found" },
    ]);
    // An optional path that is absent skips the other checks.
    expect(run({ path: "$.missing", value_type: "string" })).toEqual([]);
  });

  it.each<[JsonCheck["value_type"], string, boolean]>([
    ["string", "$.title", true],
    ["string", "$.count", false],
    ["number", "$.ratio", true],
    ["number", "$.count", true],
    ["integer", "$.count", true],
    ["integer", "$.ratio", false],
    ["boolean", "$.ok", true],
    ["boolean", "$.title", false],
    ["array", "$.items", true],
    ["array", "$.nested", false],
    ["object", "$.nested", true],
    ["object", "$.items", false],
    ["object", "$.nothing", false],
    ["null", "$.nothing", true],
    ["null", "$.count", false],
  ])("value_type %s at %s → %s", (type, path, ok) => {
    expect(checksOf({ path, value_type: type })).toEqual(ok ? [] : ["value_type"]);
  });

  it("names the concrete path and what was wrong", () => {
    const [issue] = run({ path: "$.items[*].amount", value_type: "string" });
    expect(issue).toEqual({
      file: "out.json",
      path: "$.items[0].amount",
      check: "value_type",
      message: "expected string, got integer 10",
    });
  });

  it("min_length / max_length on strings and arrays", () => {
    expect(checksOf({ path: "$.title", min_length: 3, max_length: 13 })).toEqual([]);
    expect(checksOf({ path: "$.title", min_length: 14 })).toEqual(["min_length"]);
    expect(checksOf({ path: "$.title", max_length: 5 })).toEqual(["max_length"]);
    expect(checksOf({ path: "$.items", min_length: 3, max_length: 3 })).toEqual([]);
    expect(checksOf({ path: "$.items", min_length: 4 })).toEqual(["min_length"]);
    expect(checksOf({ path: "$.items", max_length: 2 })).toEqual(["max_length"]);
    expect(checksOf({ path: "$.count", min_length: 1 })).toEqual(["min_length"]);
    expect(run({ path: "$.items", max_length: 2 })[0]?.message).toBe("length 3 is above the maximum 2");
    // Characters, not UTF-16 units.
    expect(evaluateJsonCheck({ s: "😀😀" }, { path: "$.s", max_length: 2 }, "f")).toEqual([]);
  });

  it("pattern (unanchored unless the pattern anchors)", () => {
    expect(checksOf({ path: "$.title", pattern: "report" })).toEqual([]);
    expect(checksOf({ path: "$.title", pattern: "^report" })).toEqual(["pattern"]);
    const issues = run({ path: "$.items[*].id", pattern: "^o-\\d+$" });
    expect(issues.map((i) => i.path)).toEqual(["$.items[2].id"]);
    expect(issues[0]?.message).toBe('"x-3" does not match /^o-\\d+$/');
    expect(checksOf({ path: "$.count", pattern: "3" })).toEqual(["pattern"]);
    expect(checksOf({ path: "$.title", pattern: "(" })).toEqual(["pattern"]);
  });

  it("min_value / max_value", () => {
    expect(checksOf({ path: "$.count", min_value: 3, max_value: 3 })).toEqual([]);
    expect(checksOf({ path: "$.count", min_value: 4 })).toEqual(["min_value"]);
    expect(checksOf({ path: "$.count", max_value: 2 })).toEqual(["max_value"]);
    expect(checksOf({ path: "$.title", min_value: 0 })).toEqual(["min_value"]);
    expect(checksOf({ path: "$.items[*].amount", min_value: 15 })).toEqual(["min_value"]);
  });

  const cc = (path: string, type: NonNullable<JsonCheck["consistency_check"]>["type"], other: string) =>
    checksOf({ path, consistency_check: { type, compare_with_path: other } });

  it("consistency_check equals (deep)", () => {
    expect(cc("$.nested", "equals", "$.copy")).toEqual([]);
    expect(cc("$.items[0].id", "equals", "$.ids[0]")).toEqual([]);
    expect(cc("$.count", "equals", "$.total")).toEqual(["consistency_check"]);
  });

  it("consistency_check greater_than / less_than (numbers, or strings such as ISO dates)", () => {
    expect(cc("$.total", "greater_than", "$.min")).toEqual([]);
    expect(cc("$.min", "greater_than", "$.total")).toEqual(["consistency_check"]);
    expect(cc("$.min", "less_than", "$.total")).toEqual([]);
    expect(cc("$.total", "less_than", "$.total")).toEqual(["consistency_check"]);
    expect(cc("$.ends", "greater_than", "$.starts")).toEqual([]);
    expect(cc("$.title", "greater_than", "$.count")).toEqual(["consistency_check"]);
  });

  it("consistency_check array_length: the array's length equals the number at compare_with_path", () => {
    expect(cc("$.items", "array_length", "$.count")).toEqual([]);
    expect(cc("$.regions", "array_length", "$.count")).toEqual(["consistency_check"]);
    expect(
      run({ path: "$.regions", consistency_check: { type: "array_length", compare_with_path: "$.count" } })[0]
        ?.message,
    ).toBe("array_length: length 2 is not $.count (3)");
    expect(cc("$.title", "array_length", "$.count")).toEqual(["consistency_check"]);
    expect(cc("$.items", "array_length", "$.title")).toEqual(["consistency_check"]);
  });

  it("consistency_check in_array: the value is a member of the array at compare_with_path", () => {
    expect(cc("$.region", "in_array", "$.regions")).toEqual([]);
    expect(cc("$.title", "in_array", "$.regions")).toEqual(["consistency_check"]);
    expect(cc("$.region", "in_array", "$.title")).toEqual(["consistency_check"]);
    // A wildcard compare path stands for the list of values it selects.
    expect(cc("$.ids[0]", "in_array", "$.items[*].id")).toEqual([]);
    expect(cc("$.items[*].id", "in_array", "$.ids")).toEqual([]);
  });

  it("a missing compare_with_path is an issue", () => {
    expect(
      run({ path: "$.count", consistency_check: { type: "equals", compare_with_path: "$.nope" } })[0]
        ?.message,
    ).toBe("equals: compare_with_path $.nope not found");
  });

  it("a bad path is an issue, not an exception", () => {
    expect(checksOf({ path: "$..x" })).toEqual(["path"]);
  });

  it("checkJsonDocument runs every check", () => {
    expect(
      checkJsonDocument("out.json", doc, [
        { path: "$.missing", must_exist: true },
        { path: "$.count", value_type: "string" },
        { path: "$.title", value_type: "string" },
      ]).map((i) => i.check),
    ).toEqual(["must_exist", "value_type"]);
  });
});

describe("helpers", () => {
  it("jsonEqual ignores key order", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(jsonEqual([1], { 0: 1 })).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });

  it.each([
    ["SELECT 1", true],
    ["  select * from t;", true],
    ["-- note\n/* c */ WITH x AS (SELECT 1) SELECT * FROM x", true],
    ["SELECT ';DROP TABLE t'", true],
    ['SELECT "a;b" FROM t', true],
    ["SELECT 1; ;  -- trailing", true],
    ["SELECT 1; DELETE FROM t", false],
    ["DELETE FROM t", false],
    ["INSERT INTO t VALUES (1)", false],
    ["PRAGMA user_version", false],
    ["ATTACH 'x' AS y", false],
    ["selection", false],
    ["SELECT 'unterminated", false],
    ["", false],
  ])("isReadOnlyQuery(%j) → %s", (sql, ok) => {
    expect(isReadOnlyQuery(sql)).toBe(ok);
  });

  it("checkDbRows and rowsNeeded", () => {
    const check = { file_name: "a.db", query: "SELECT 1", min_rows: 2, max_rows: 3 };
    expect(checkDbRows(check, 2)).toEqual([]);
    expect(checkDbRows(check, 1).map((i) => i.check)).toEqual(["min_rows"]);
    expect(checkDbRows(check, 4).map((i) => i.check)).toEqual(["max_rows"]);
    expect(rowsNeeded(check)).toBe(4);
    expect(rowsNeeded({ file_name: "a.db", query: "q", min_rows: 5 })).toBe(5);
    expect(rowsNeeded({ file_name: "a.db", query: "q" })).toBe(1);
  });

  it.each([
    ["out.json", undefined],
    ["sub/out.json", undefined],
    ["..", "must stay inside"],
    ["../x", "must stay inside"],
    ["a/../../x", "must stay inside"],
    ["a\\..\\x", "must stay inside"],
    ["/etc/passwd", "must be relative"],
    ["C:\\x", "must be relative"],
    ["", "empty"],
  ])("safeRelativeName(%j)", (name, why) => {
    const r = safeRelativeName(name);
    if (why === undefined) expect(r).toBeUndefined();
    else expect(r).toContain(why);
  });

  it("topLevelErrorIssue", () => {
    expect(topLevelErrorIssue("a.json", { error: "boom" })?.check).toBe("builtin_no_error_key");
    expect(topLevelErrorIssue("a.json", { error: { code: 1 } })?.message).toBe(
      'the output has a top-level "error": {"code":1}',
    );
    expect(topLevelErrorIssue("a.json", { error: null })).toBeUndefined();
    expect(topLevelErrorIssue("a.json", { error: false })).toBeUndefined();
    expect(topLevelErrorIssue("a.json", { data: { error: "nested is fine" } })).toBeUndefined();
    expect(topLevelErrorIssue("a.json", [{ error: "arrays are not objects" }])).toBeUndefined();
  });
});
