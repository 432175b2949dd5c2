import { describe, expect, it } from "vitest";
import { ErrorCode, RatchetError } from "./errors.js";
import { arr, bool, num, obj, oneOf, opt, type Schema, str } from "./schema.js";

function violation(schema: Schema<unknown>, value: unknown, path = ""): RatchetError {
  try {
    schema.parse(value, path);
  } catch (e) {
    if (e instanceof RatchetError) return e;
    throw e;
  }
  throw new Error("expected a schema violation, the value parsed");
}

const Step = obj({
  title: str({ min: 1, max: 10 }),
  type: oneOf(["COMMAND", "THINKING"] as const),
  description: opt(str()),
});
const Plan = obj({
  goal: str({ min: 1 }),
  max_revisions: opt(num({ int: true, min: 0 })),
  dry: opt(bool()),
  steps: arr(Step, { min: 1, max: 3 }),
});

const good = { goal: "g", steps: [{ title: "a", type: "COMMAND" }] };

describe("obj: field errors name the field path", () => {
  const rows: { name: string; value: unknown; field: string; says: string }[] = [
    { name: "unknown top-level field", value: { ...good, extra: 1 }, field: "extra", says: "unknown field" },
    {
      name: "unknown nested field",
      value: {
        goal: "g",
        steps: [
          { title: "a", type: "COMMAND" },
          { title: "b", type: "COMMAND", x: 1 },
        ],
      },
      field: "steps[1].x",
      says: "unknown field",
    },
    { name: "missing required", value: { steps: good.steps }, field: "goal", says: "is required" },
    { name: "required null", value: { goal: null, steps: good.steps }, field: "goal", says: "is required" },
    {
      name: "missing required nested",
      value: { goal: "g", steps: [{ type: "COMMAND" }] },
      field: "steps[0].title",
      says: "is required",
    },
    {
      name: "wrong type string",
      value: { goal: 3, steps: good.steps },
      field: "goal",
      says: "must be a string",
    },
    {
      name: "wrong enum value nested",
      value: {
        goal: "g",
        steps: [
          { title: "a", type: "COMMAND" },
          { title: "b", type: "BOGUS" },
        ],
      },
      field: "steps[1].type",
      says: "must be one of COMMAND, THINKING",
    },
    { name: "not an array", value: { goal: "g", steps: {} }, field: "steps", says: "must be an array" },
    { name: "empty array", value: { goal: "g", steps: [] }, field: "steps", says: "at least one item" },
    {
      name: "too many items",
      value: { goal: "g", steps: [good.steps[0], good.steps[0], good.steps[0], good.steps[0]] },
      field: "steps",
      says: "at most 3 items",
    },
    {
      name: "blank string",
      value: { goal: "   ", steps: good.steps },
      field: "goal",
      says: "must not be empty",
    },
    {
      name: "string too long",
      value: { goal: "g", steps: [{ title: "x".repeat(11), type: "COMMAND" }] },
      field: "steps[0].title",
      says: "at most 10 characters",
    },
    {
      name: "non-integer",
      value: { ...good, max_revisions: 1.5 },
      field: "max_revisions",
      says: "must be an integer",
    },
    {
      name: "below minimum",
      value: { ...good, max_revisions: -1 },
      field: "max_revisions",
      says: "must be ≥ 0",
    },
    {
      name: "non-finite number",
      value: { ...good, max_revisions: Number.NaN },
      field: "max_revisions",
      says: "must be a finite number",
    },
    {
      name: "number as string",
      value: { ...good, max_revisions: "5" },
      field: "max_revisions",
      says: "finite",
    },
    { name: "wrong boolean", value: { ...good, dry: "yes" }, field: "dry", says: "must be true or false" },
    {
      name: "optional present but wrong type",
      value: { goal: "g", steps: [{ title: "a", type: "COMMAND", description: 5 }] },
      field: "steps[0].description",
      says: "must be a string",
    },
    {
      name: "array item not an object",
      value: { goal: "g", steps: ["a"] },
      field: "steps[0]",
      says: "JSON object",
    },
  ];

  it.each(rows)("$name → schema_violation on `$field`", ({ value, field, says }) => {
    const err = violation(Plan, value);
    expect(err.code).toBe(ErrorCode.SchemaViolation);
    expect(err.exitStatus).toBe(2);
    expect(err.details.field).toBe(field);
    expect(err.message).toContain(`field \`${field}\``);
    expect(err.message).toContain(says);
  });

  it.each([
    ["null", null],
    ["an array", []],
    ["a string", "x"],
  ])("top-level %s is refused as `(input)`", (_n, value) => {
    const err = violation(Plan, value);
    expect(err.details.field).toBe("(input)");
    expect(err.message).toContain("must be a JSON object");
  });

  it("unknown field message lists the allowed fields", () => {
    expect(violation(Step, { title: "a", type: "COMMAND", nope: 1 }).message).toBe(
      "field `nope`: unknown field (allowed: title, type, description)",
    );
  });

  it("prefixes the given base path", () => {
    expect(violation(Step, { type: "COMMAND" }, "sub_steps[2]").details.field).toBe("sub_steps[2].title");
  });
});

describe("obj: optional and null handling", () => {
  it("absent and null optionals read as undefined and are left out of the output", () => {
    expect(Plan.parse(good, "")).toEqual(good);
    const out = Plan.parse({ ...good, max_revisions: null, dry: null }, "");
    expect(out).toEqual(good);
    expect("max_revisions" in out).toBe(false);
    expect("dry" in out).toBe(false);
  });

  it("keeps present optionals, including falsy ones", () => {
    expect(Plan.parse({ ...good, max_revisions: 0, dry: false }, "")).toEqual({
      ...good,
      max_revisions: 0,
      dry: false,
    });
  });

  it("returns a fresh object with only the known fields", () => {
    const input = { goal: "g", steps: [{ title: "a", type: "THINKING", description: "d" }] };
    const out = Plan.parse(input, "");
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
  });
});

describe("scalars", () => {
  it("str pattern", () => {
    const s = str({ pattern: /^[a-z]+$/ });
    expect(s.parse("abc", "f")).toBe("abc");
    const err = violation(s, "ABC", "f");
    expect(err.details.field).toBe("f");
    expect(err.message).toContain('(got "ABC")');
  });

  it("num exclusiveMin and max", () => {
    const n = num({ exclusiveMin: 0, max: 10 });
    expect(n.parse(0.5, "n")).toBe(0.5);
    expect(violation(n, 0, "n").message).toContain("must be > 0");
    expect(violation(n, 11, "n").message).toContain("must be ≤ 10");
  });
});

describe("json()", () => {
  it("describes an object schema as strict JSON Schema", () => {
    expect(Step.json()).toEqual({
      type: "object",
      additionalProperties: false,
      properties: {
        title: { type: "string", minLength: 1, maxLength: 10 },
        type: { type: "string", enum: ["COMMAND", "THINKING"] },
        description: { type: "string" },
      },
      required: ["title", "type"],
    });
  });

  it("nests arrays, numbers and booleans", () => {
    const j = Plan.json() as { properties: Record<string, unknown>; required: string[] };
    expect(j.required).toEqual(["goal", "steps"]);
    expect(j.properties.max_revisions).toEqual({ type: "integer", minimum: 0 });
    expect(j.properties.dry).toEqual({ type: "boolean" });
    expect(j.properties.steps).toEqual({ type: "array", items: Step.json(), minItems: 1, maxItems: 3 });
  });

  it("carries descriptions and patterns", () => {
    expect(str({ pattern: /^a+$/, description: "d" }).json()).toEqual({
      type: "string",
      pattern: "^a+$",
      description: "d",
    });
    expect(num({ exclusiveMin: 0 }).json()).toEqual({ type: "number", exclusiveMinimum: 0 });
    expect(obj({ a: bool() }, "desc").json()).toMatchObject({ description: "desc", required: ["a"] });
  });
});
