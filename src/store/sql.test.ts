import { describe, expect, test } from "vitest";
import { pgArgs, sqliteArgs, toPgStatement } from "./sql.js";

describe("toPgStatement", () => {
  test("numbers ? in order", () => {
    expect(toPgStatement("SELECT * FROM t WHERE a = ? AND b > ?")).toEqual({
      text: "SELECT * FROM t WHERE a = $1 AND b > $2",
      names: null,
    });
  });

  test("maps @names to one $n each, in first-use order", () => {
    const s = toPgStatement("UPDATE t SET a = @a, b = @b WHERE id = @id AND a <> @a");
    expect(s.text).toBe("UPDATE t SET a = $1, b = $2 WHERE id = $3 AND a <> $1");
    expect(s.names).toEqual(["a", "b", "id"]);
    expect(pgArgs(s, { id: 7, a: "x", b: true, extra: 1 })).toEqual(["x", 1, 7]);
  });

  test("leaves literals, quoted identifiers, comments and casts alone", () => {
    const s = toPgStatement(`SELECT 'it''s ? @x', "we?ird", x::text -- what? @y\nFROM t WHERE a = ?`);
    expect(s.text).toBe(`SELECT 'it''s ? @x', "we?ird", x::text -- what? @y\nFROM t WHERE a = $1`);
  });

  test("refuses a statement mixing both kinds, and missing or mismatched arguments", () => {
    expect(() => toPgStatement("SELECT ? , @a")).toThrow(/mixes/);
    expect(() => pgArgs(toPgStatement("SELECT @a"), { b: 1 })).toThrow(/@a/);
    expect(() => pgArgs(toPgStatement("SELECT @a"), [1])).toThrow(/named/);
    expect(() => pgArgs(toPgStatement("SELECT ?"), { a: 1 })).toThrow(/named/);
  });

  test("sqliteArgs: booleans 1/0, undefined NULL", () => {
    expect(sqliteArgs([true, false, undefined, "a"])).toEqual([1, 0, null, "a"]);
    expect(sqliteArgs({ a: true, b: undefined })).toEqual([{ a: 1, b: null }]);
    expect(sqliteArgs(undefined)).toEqual([]);
  });
});
