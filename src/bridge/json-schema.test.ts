import { describe, expect, it } from "vitest";
import { checkSchema, describeProblem } from "./json-schema.js";

const schema = {
  type: "object",
  properties: {
    a: { type: "number", minimum: 0, maximum: 10 },
    name: { type: "string", minLength: 2, maxLength: 5 },
    mode: { enum: ["fast", "slow"] },
    n: { type: "integer" },
    tags: { type: "array", items: { type: "string" }, maxItems: 2 },
    filter: {
      type: "object",
      properties: { id: { type: "integer" } },
      required: ["id"],
      additionalProperties: false,
    },
    maybe: { type: ["string", "null"] },
  },
  required: ["a"],
  additionalProperties: false,
};

const problem = (value: unknown) => {
  const p = checkSchema(schema, value);
  return p ? describeProblem(p) : undefined;
};

describe("checkSchema", () => {
  it("accepts conforming arguments", () => {
    expect(
      problem({ a: 3, name: "abc", mode: "fast", n: 2, tags: ["x"], filter: { id: 1 }, maybe: null }),
    ).toBeUndefined();
  });

  it("names the argument and what is wrong", () => {
    expect(problem({ a: "3" })).toBe('argument `a` must be a number (got string "3")');
    expect(problem({})).toBe("argument `a` is required");
    expect(problem({ a: 1, extra: true })).toBe(
      "argument `extra` is not an accepted argument (accepted: a, name, mode, n, tags, filter, maybe)",
    );
    expect(problem({ a: 11 })).toBe("argument `a` must be ≤ 10 (got 11)");
    expect(problem({ a: -1 })).toBe("argument `a` must be ≥ 0 (got -1)");
    expect(problem({ a: 1, name: "x" })).toBe("argument `name` must be at least 2 characters (got 1)");
    expect(problem({ a: 1, name: "abcdef" })).toBe("argument `name` must be at most 5 characters (got 6)");
    expect(problem({ a: 1, mode: "medium" })).toBe(
      'argument `mode` must be one of "fast", "slow" (got string "medium")',
    );
    expect(problem({ a: 1, n: 1.5 })).toBe("argument `n` must be an integer (got number 1.5)");
    expect(problem({ a: 1, maybe: 3 })).toBe("argument `maybe` must be one of string, null (got number 3)");
  });

  it("names nested paths", () => {
    expect(problem({ a: 1, tags: ["x", 2] })).toBe("argument `tags[1]` must be a string (got number 2)");
    expect(problem({ a: 1, tags: ["x", "y", "z"] })).toBe(
      "argument `tags` must have at most 2 items (got 3)",
    );
    expect(problem({ a: 1, filter: {} })).toBe("argument `filter.id` is required");
    expect(problem({ a: 1, filter: { id: "1" } })).toBe(
      'argument `filter.id` must be an integer (got string "1")',
    );
    expect(problem({ a: 1, filter: { id: 1, x: 0 } })).toBe(
      "argument `filter.x` is not an accepted argument (accepted: id)",
    );
  });

  it("reports a non-object as the whole arguments", () => {
    expect(problem([1])).toBe("arguments must be an object (got array)");
  });

  it("checks anyOf / oneOf / const / pattern and ignores unknown keywords", () => {
    const s = { anyOf: [{ type: "string", pattern: "^[a-z]+$" }, { const: 42 }], format: "whatever" };
    expect(checkSchema(s, "abc")).toBeUndefined();
    expect(checkSchema(s, 42)).toBeUndefined();
    expect(checkSchema(s, "ABC")?.message).toBe('does not match any allowed shape (got string "ABC")');
    expect(checkSchema(true, 1)).toBeUndefined();
    expect(checkSchema(false, 1)?.message).toBe("is not allowed");
    expect(checkSchema({ type: "object", additionalProperties: { type: "number" } }, { x: "1" })).toEqual({
      path: "x",
      message: 'must be a number (got string "1")',
    });
  });
});
