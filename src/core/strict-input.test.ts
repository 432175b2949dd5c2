import { describe, expect, it } from "vitest";
import { obj, str } from "./schema.js";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  firstInvalidUtf8,
  parseJsonStrict,
} from "./strict-input.js";

const fieldOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (e) {
    return (e as { details?: { field?: unknown } }).details?.field;
  }
  return "(no error)";
};

describe("decodeUtf8Strict", () => {
  it("decodes valid UTF-8 and refuses invalid sequences with the offset", () => {
    expect(decodeUtf8Strict(Buffer.from("héllo ✓ 😀"), "x")).toBe("héllo ✓ 😀");
    for (const [bytes, at] of [
      [[0x61, 0xff], 1],
      [[0xc3, 0x28], 0],
      [[0xc0, 0xaf], 0],
      [[0xed, 0xa0, 0x80], 0],
      [[0xf4, 0x90, 0x80, 0x80], 0],
      [[0x61, 0x62, 0xe2, 0x82], 2],
    ] as const) {
      const b = Uint8Array.from(bytes);
      expect(() => decodeUtf8Strict(b, "x")).toThrow(/not valid UTF-8/);
      expect(firstInvalidUtf8(b)).toBe(at);
      expect(fieldOf(() => decodeUtf8Strict(b, "x", "body"))).toBe("body");
    }
  });
});

describe("assertNoForbiddenKeys", () => {
  it("names the path of a forbidden key anywhere", () => {
    expect(fieldOf(() => parseJsonStrict('{"a":[{"b":{"__proto__":1}}]}', "x"))).toBe("a[0].b.__proto__");
    expect(fieldOf(() => parseJsonStrict('{"constructor":{}}', "x"))).toBe("constructor");
    expect(fieldOf(() => parseJsonStrict('[{"prototype":0}]', "x"))).toBe("[0].prototype");
    expect(fieldOf(() => parseJsonStrict('{"ok":{"nested":["fine"]}}', "x"))).toBe("(no error)");
  });
  it("refuses an object whose prototype was replaced (a parser assigned __proto__)", () => {
    const v = { a: Object.setPrototypeOf({}, { injected: true }) };
    expect(fieldOf(() => assertNoForbiddenKeys(v))).toBe("a.__proto__");
    expect(fieldOf(() => assertNoForbiddenKeys(Object.create(null)))).toBe("(no error)");
  });
  it("refuses nesting deeper than the limit", () => {
    expect(fieldOf(() => parseJsonStrict(`${"[".repeat(100)}${"]".repeat(100)}`, "x"))).toMatch(/^\[0\]/);
  });
});

describe("obj schemas", () => {
  const S = obj({ step_id: str({ min: 1 }), agent_input: str({}) });
  it("refuse forbidden keys and never read fields through the prototype", () => {
    expect(fieldOf(() => S.parse(JSON.parse('{"step_id":"s","agent_input":"a","constructor":1}'), ""))).toBe(
      "constructor",
    );
    const viaProto = Object.setPrototypeOf({ agent_input: "a" }, { step_id: "from the prototype" });
    expect(fieldOf(() => S.parse(viaProto, ""))).toBe("__proto__");
  });
});
