import { describe, expect, it } from "vitest";
import { MIN_SECRET_LENGTH, Redactor } from "./redact.js";

describe("Redactor: registered values", () => {
  it("masks every occurrence of a registered value by name", () => {
    const r = new Redactor().add("DB_PASS", "hunter22");
    expect(r.redact("pw=hunter22; again hunter22")).toBe("pw=[REDACTED:DB_PASS]; again [REDACTED:DB_PASS]");
  });

  it("leaves text without secrets unchanged", () => {
    const r = new Redactor().add("X", "abcdef");
    expect(r.redact("nothing here")).toBe("nothing here");
  });

  it("masks the longest value first, so a secret containing another is masked whole", () => {
    const r = new Redactor().add("SHORT", "abcd").add("LONG", "abcdefgh");
    expect(r.redact("abcdefgh abcd")).toBe("[REDACTED:LONG] [REDACTED:SHORT]");
    // Registration order does not matter.
    const r2 = new Redactor().add("LONG", "abcdefgh").add("SHORT", "abcd");
    expect(r2.redact("abcdefgh abcd")).toBe("[REDACTED:LONG] [REDACTED:SHORT]");
  });

  it.each([
    ["undefined", undefined],
    ["empty", ""],
    ["one char", "a"],
    ["shorter than the minimum", "x".repeat(MIN_SECRET_LENGTH - 1)],
  ])("ignores a %s value", (_name, value) => {
    const r = new Redactor().add("S", value);
    expect(r.size).toBe(0);
    expect(r.redact("a xxx b")).toBe("a xxx b");
  });

  it("registers a value of exactly the minimum length", () => {
    expect(MIN_SECRET_LENGTH).toBe(4);
    const r = new Redactor().add("S", "wxyz");
    expect(r.size).toBe(1);
    expect(r.redact("-wxyz-")).toBe("-[REDACTED:S]-");
  });
});

describe("Redactor.addFromEnv", () => {
  const env = {
    SECRET_DB: "db-secret-value",
    SECRET_SHORT: "abc",
    OPENAI_API_KEY: "key-value-1234",
    GITHUB_TOKEN: "token-value-5678",
    APP_SECRET: "app-secret-value",
    ADMIN_PASSWORD: "pass-value-90",
    HOME: "/home/someone",
    PATH: "/usr/bin:/bin",
    SECRETARY: "not-a-secret-name",
    UNSET_TOKEN: undefined,
  };

  it("picks up SECRET_* and well-known key variables, long enough, nothing else", () => {
    const r = new Redactor().addFromEnv(env);
    expect(r.size).toBe(5);
    const text = Object.values(env)
      .filter((v) => v !== undefined)
      .join(" ");
    expect(r.redact(text)).toBe(
      "[REDACTED:SECRET_DB] abc [REDACTED:OPENAI_API_KEY] [REDACTED:GITHUB_TOKEN] [REDACTED:APP_SECRET] [REDACTED:ADMIN_PASSWORD] /home/someone /usr/bin:/bin not-a-secret-name",
    );
  });
});

describe("Redactor: credential shapes", () => {
  const r = new Redactor();
  it.each([
    ["bearer token", "Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED]"],
    ["sk- key", "key sk-abcdefghijklmnop1234 end", "key sk-[REDACTED] end"],
    ["sk-ant- key", "sk-ant-api03abcdefghijklmnop", "sk-ant-[REDACTED]"],
    ["github token", "ghp_abcdefghijklmnopqrst1234", "ghp_[REDACTED]"],
  ])("masks a %s", (_name, input, want) => {
    expect(r.redact(input)).toBe(want);
  });

  it.each([
    ["short bearer", "Bearer abc"],
    ["short sk-", "sk-short"],
    ["word containing sk-", "task-abcdefghijklmnopqrstuvw"],
    ["plain prose", "the risk-free path"],
  ])("leaves a %s alone", (_name, input) => {
    expect(r.redact(input)).toBe(input);
  });
});

describe("Redactor.redactValue", () => {
  it("redacts every string deep inside objects and arrays, leaving other values", () => {
    const r = new Redactor().add("S", "topsecret");
    const value = {
      a: "x topsecret y",
      n: 3,
      b: true,
      z: null,
      nested: { list: ["topsecret", 1, { deep: "in topsecret" }], untouched: "fine" },
    };
    expect(r.redactValue(value)).toEqual({
      a: "x [REDACTED:S] y",
      n: 3,
      b: true,
      z: null,
      nested: { list: ["[REDACTED:S]", 1, { deep: "in [REDACTED:S]" }], untouched: "fine" },
    });
    // The input is not mutated.
    expect(value.a).toBe("x topsecret y");
  });

  it("passes scalars through", () => {
    const r = new Redactor().add("S", "topsecret");
    expect(r.redactValue("topsecret")).toBe("[REDACTED:S]");
    expect(r.redactValue(5)).toBe(5);
    expect(r.redactValue(undefined)).toBeUndefined();
  });
});

describe("Redactor: short texts (the fast path that skips the scan)", () => {
  it("still masks a registered secret of the minimum length in a text just as long", () => {
    const r = new Redactor().add("S", "wxyz");
    expect(r.redact("wxyz")).toBe("[REDACTED:S]");
    expect(r.redact("xyz")).toBe("xyz");
  });

  it("masks a credential shape of the shortest length, with nothing registered", () => {
    const r = new Redactor();
    const shortest = `sk-${"a".repeat(16)}`;
    expect(shortest.length).toBe(19);
    expect(r.redact(shortest)).toBe("sk-[REDACTED]");
    expect(r.redact(shortest.slice(0, -1))).toBe(shortest.slice(0, -1));
  });

  it("sees a secret registered after the first redaction (no stale order or length)", () => {
    const r = new Redactor().add("LONG", "abcdefghij");
    expect(r.redact("abcd abcdefghij")).toBe("abcd [REDACTED:LONG]");
    r.add("SHORT", "abcd");
    expect(r.redact("abcd")).toBe("[REDACTED:SHORT]");
    r.add("LONGER", "abcdefghijklmnop");
    expect(r.redact("abcdefghijklmnop abcdefghij abcd")).toBe(
      "[REDACTED:LONGER] [REDACTED:LONG] [REDACTED:SHORT]",
    );
  });
});
