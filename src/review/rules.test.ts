/** The rules over hand-built facts: no parser involved. */
import { describe, expect, it } from "vitest";
import { type At, emptyFacts, type FileOpFact, type ScriptFacts } from "./facts.js";
import { hasBrowserRef } from "./rules/browser-refs.js";
import { runRules } from "./rules/index.js";
import { isLongAbsolutePath, isRunPath } from "./rules/run-paths.js";
import { isShortcutVariable, type LiteralKind } from "./rules/shortcuts.js";
import { holeVal, joinPath, textVal, UNKNOWN, type Val } from "./values.js";

const at = (line: number, node = line): At => ({ line, column: 1, node });
const out = holeVal({ k: "env", name: "STEP_OUTPUT_DIR" });

function facts(patch: Partial<ScriptFacts>): ScriptFacts {
  return { ...emptyFacts("python"), ...patch };
}

function write(line: number, target: Val, certain = true): FileOpFact {
  return { at: at(line), op: "write", api: "open()", target, certain };
}

const summary = (f: ScriptFacts, declared: string[] | null = null) =>
  runRules(f, declared ? new Set(declared) : null).map((x) => `${x.line}:${x.rule}:${x.severity}`);

describe("R6/R8 writes", () => {
  it("grades write targets by where they start", () => {
    const f = facts({
      fileOps: [
        write(1, joinPath([out, textVal("a.json")])),
        write(2, textVal("a.json")),
        write(3, textVal("/srv/a.json")),
        write(4, holeVal({ k: "param", name: "p" })),
        write(5, UNKNOWN),
        write(6, joinPath([holeVal({ k: "env", name: "STEP_EXECUTION_DIR" }), textVal("w.tmp")])),
        write(7, joinPath([holeVal({ k: "temp" }), textVal("t")])),
        write(8, joinPath([out, textVal(".."), textVal("x")])),
        write(9, holeVal({ k: "argv" })),
        write(10, textVal("a.json"), false),
        write(11, joinPath([holeVal({ k: "cwd" }), textVal("a")])),
      ],
    });
    expect(summary(f)).toEqual([
      "2:R6:blocking",
      "3:R6:blocking",
      "4:R6:warning",
      "5:R6:warning",
      "6:R6:warning",
      "7:R6:warning",
      "8:R6:blocking",
      "9:R6:blocking",
      "10:R6:warning",
      "11:R6:blocking",
    ]);
  });

  it("reports writes into knowledgebase/ or learnings/ as R8 instead of R6", () => {
    const f = facts({
      fileOps: [
        write(1, textVal("learnings/s/main.py")),
        write(2, textVal("../../knowledgebase/x.md")),
        write(3, joinPath([out, textVal("learnings"), textVal("notes.md")])),
      ],
    });
    expect(summary(f)).toEqual(["1:R8:blocking", "2:R8:blocking"]);
  });

  it("ignores reads for R6", () => {
    expect(summary(facts({ fileOps: [{ ...write(1, textVal("a")), op: "read" }] }))).toEqual([]);
  });
});

describe("R2/R3 fallbacks", () => {
  const read = (line: number, name: string, fallback: "or" | null = "or") => ({
    at: at(line),
    name,
    expr: name,
    fallback,
  });

  it("always flags runtime variables and judges VAR_/SECRET_ by the declared list", () => {
    const f = facts({
      envReads: [
        read(1, "STEP_OUTPUT_DIR"),
        read(2, "VAR_A"),
        read(3, "SECRET_B"),
        read(4, "HOME"),
        read(5, "VAR_C", null),
      ],
    });
    expect(summary(f)).toEqual(["1:R3:blocking", "2:R2:blocking", "3:R2:blocking"]);
    expect(summary(f, ["SECRET_B"])).toEqual(["1:R3:blocking", "3:R2:blocking"]);
  });
});

describe("string rules", () => {
  it("flags a constant once where it is defined, not again where it is used", () => {
    const def = { at: at(1, 100), value: textVal("/home/alice/x.csv") };
    const use = {
      at: at(5, 200),
      value: { ...joinPath([textVal("/home/alice/x.csv"), textVal("y")]), via: [100] },
    };
    expect(summary(facts({ strings: [def, use] }))).toEqual(["1:R5:blocking"]);
  });

  it.each([
    ["execution/run-1/fetch/out.json", true],
    ["/work/ws/execution/run-1/x", true],
    ["/opt/.ratchet/ratchet.db", true],
    ["execution/status", false],
    ["https://ci.example.com/execution/12/status", false],
    ["my_execution/run/x", false],
  ])("isRunPath(%s) = %s", (s, expected) => {
    expect(isRunPath(textVal(s))).toBe(expected);
  });

  it.each([
    ["/home/alice/data.csv", true],
    ["/Users/bob", true],
    ["/root/x", true],
    ["~/data/x.csv", false],
    ["C:\\Users\\bob\\x.csv", true],
    ["/tmp/a/b", true],
    ["/tmp/out.json", false],
    ["/dev/null", false],
    ["/usr/bin/env", false],
    ["/api/v1/users/list", false],
    ["/tools/mcp/github/list_issues", false],
    ["https://example.com/home/alice", false],
  ])("isLongAbsolutePath(%s) = %s", (s, expected) => {
    expect(isLongAbsolutePath(textVal(s))).toBe(expected);
  });

  it.each([
    ["@e12", true],
    ["click @e3", true],
    ['{"ref":"@e7"}', true],
    ["support@e1.example.com", false],
    ["@everyone", false],
    ["@e", false],
  ])("hasBrowserRef(%s) = %s", (s, expected) => {
    expect(hasBrowserRef(textVal(s))).toBe(expected);
  });
});

describe("R9 shortcut variables", () => {
  it.each([
    ["CACHED_RESULT", "container", true],
    ["cached_token", "string", true],
    ["HARDCODED_PRICES", "container", true],
    ["SKIP_FETCH", "scalar", true],
    ["USE_MOCK", "scalar", true],
    ["MOCK_RESPONSE", "container", true],
    ["dummy_src_name", "string", false],
    ["RESULT", "container", true],
    ["RESULT", "string", false],
    ["CACHE", "container", true],
    ["CACHE_TTL", "scalar", false],
    ["MAX_CACHED_INPUTS", "scalar", false],
    ["DEFAULT_HEADERS", "container", false],
    ["RESULT_FILE", "string", false],
  ] as [string, LiteralKind, boolean][])("%s holding a %s → %s", (name, kind, expected) => {
    expect(isShortcutVariable(name, kind)).toBe(expected);
  });
});
