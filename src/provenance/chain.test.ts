import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, chainHash } from "./chain.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps non-ASCII text", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: "é" }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":"é","z":1}]},"b":1}',
    );
  });
});

describe("chainHash", () => {
  it("hashes the content without id/hash/prev_hash/superseded_by/last_checked, then the previous hash", () => {
    const row = {
      id: 7,
      text: "keep fiscal weeks",
      hash: "x",
      prev_hash: "y",
      superseded_by: 3,
      last_checked: "t",
    };
    const want = createHash("sha256").update('{"text":"keep fiscal weeks"}abc').digest("hex");
    expect(chainHash(row, "abc")).toBe(want);
  });
  it("changes when any hashed field or the previous hash changes", () => {
    const a = chainHash({ text: "a" }, "");
    expect(chainHash({ text: "b" }, "")).not.toBe(a);
    expect(chainHash({ text: "a" }, "p")).not.toBe(a);
  });
});
