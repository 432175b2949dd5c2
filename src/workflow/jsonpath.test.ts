import { describe, expect, it } from "vitest";
import { isRatchetError } from "../core/errors.js";
import { formatPath, parsePath, queryPath } from "./jsonpath.js";

const doc = {
  a: { b: 1, "key with space": "x", "it's": true, nil: null },
  items: [
    { id: "i1", n: 1 },
    { id: "i2", n: 2 },
    { id: "i3", n: 3 },
  ],
  empty: [],
  "a.b": "dotted",
};

describe("parsePath", () => {
  it.each([
    ["$", []],
    [
      "$.a.b",
      [
        { kind: "key", key: "a" },
        { kind: "key", key: "b" },
      ],
    ],
    ["$['a']", [{ kind: "key", key: "a" }]],
    ['$["a b"]', [{ kind: "key", key: "a b" }]],
    ["$['it\\'s']", [{ kind: "key", key: "it's" }]],
    ["$[0]", [{ kind: "index", index: 0 }]],
    ["$[-1]", [{ kind: "index", index: -1 }]],
    ["$[ 2 ]", [{ kind: "index", index: 2 }]],
    ["$[*]", [{ kind: "wildcard" }]],
    ["$.*", [{ kind: "wildcard" }]],
    ["$.items[*].id", [{ kind: "key", key: "items" }, { kind: "wildcard" }, { kind: "key", key: "id" }]],
    ["$.foo-bar", [{ kind: "key", key: "foo-bar" }]],
  ])("%s", (path, segments) => {
    expect(parsePath(path)).toEqual(segments);
  });

  it.each([
    ["", "empty path"],
    ["a.b", "must start with `$`"],
    ["$..a", "recursive descent"],
    ["$.", "expected a key"],
    ["$[", "unclosed"],
    ["$['a", "unterminated string"],
    ["$['a'x]", "expected `]`"],
    ["$[a]", "expected a quoted key"],
    ["$[1:2]", "slices"],
    ["$[?(@.a)]", "filter"],
    ["$[0,1]", "unions"],
    ["$x", "unexpected"],
  ])("refuses %j naming the path", (path, why) => {
    try {
      parsePath(path);
      expect.unreachable();
    } catch (e) {
      expect(isRatchetError(e, "schema_violation")).toBe(true);
      expect((e as Error).message).toContain(JSON.stringify(path));
      expect((e as Error).message).toContain(why);
    }
  });

  it("formats segments back canonically", () => {
    expect(formatPath(parsePath("$['a'].items[-1][*]['b c']"))).toBe("$.a.items[-1][*]['b c']");
  });
});

describe("queryPath", () => {
  it.each([
    ["$", [doc]],
    ["$.a.b", [1]],
    ["$['a']['key with space']", ["x"]],
    ['$.a["it\'s"]', [true]],
    ["$.a.nil", [null]],
    ["$.items[0].id", ["i1"]],
    ["$.items[-1].id", ["i3"]],
    ["$.items[*].n", [1, 2, 3]],
    ["$.items.*.id", ["i1", "i2", "i3"]],
    ["$['a.b']", ["dotted"]],
    ["$.a.*", [1, "x", true, null]],
  ])("%s", (path, values) => {
    const r = queryPath(doc, path);
    expect(r.found).toBe(true);
    expect(r.values).toEqual(values);
    expect(r.paths).toHaveLength(values.length);
  });

  it.each([
    "$.missing",
    "$.a.b.c",
    "$.items[3]",
    "$.items[-4]",
    "$.items.id",
    "$.a[0]",
    "$.empty[*]",
    "$.a.b[*]",
  ])("%s finds nothing", (path) => {
    expect(queryPath(doc, path)).toEqual({ found: false, values: [], paths: [] });
  });

  it("reports the concrete path of each value", () => {
    expect(queryPath(doc, "$.items[*].id").paths).toEqual([
      "$.items[0].id",
      "$.items[1].id",
      "$.items[2].id",
    ]);
    expect(queryPath(doc, "$.items[-1]").paths).toEqual(["$.items[2]"]);
    expect(queryPath(doc, "$.a.*").paths[1]).toBe("$.a['key with space']");
  });

  it("does not read inherited properties", () => {
    expect(queryPath({}, "$.constructor").found).toBe(false);
    expect(queryPath([1], "$.length").found).toBe(false);
  });

  it("throws on a bad path", () => {
    expect(() => queryPath(doc, "$..a")).toThrow(/recursive descent/);
  });
});
