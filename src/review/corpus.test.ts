/**
 * The review corpus: every script under test/fixtures/review/ declares on its first line the rules
 * it must trigger (`# expect: R6,R2`, `R6:warning` for a warning, `ok` for none) and optionally on
 * its second line the declared variables (`# declared: VAR_REGION`). Review must report exactly
 * those rules.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type Finding, reviewScript } from "./index.js";

const CORPUS = resolve(dirname(fileURLToPath(import.meta.url)), "../../test/fixtures/review");

interface Case {
  file: string;
  source: string;
  language: "python" | "javascript";
  expected: string[];
  declared: string[] | undefined;
}

function header(line: string | undefined, key: string): string | undefined {
  const m = line && new RegExp(`^(?:#|//)\\s*${key}:\\s*(.*)$`).exec(line.trim());
  return m ? (m[1] ?? "").trim() : undefined;
}

function load(file: string): Case {
  const source = readFileSync(join(CORPUS, file), "utf8");
  const [first, second] = source.split("\n");
  const expect = header(first, "expect");
  if (expect === undefined)
    throw new Error(`${file}: the first line must be "# expect: …" or "// expect: …"`);
  const declared = header(second, "declared");
  return {
    file,
    source,
    language: file.endsWith(".py") ? "python" : "javascript",
    expected:
      expect === "ok"
        ? []
        : expect
            .split(",")
            .map((s) => s.trim())
            .sort(),
    declared: declared === undefined ? undefined : declared.split(",").map((s) => s.trim()),
  };
}

const key = (f: Finding) => (f.severity === "warning" ? `${f.rule}:warning` : f.rule);
const cases = readdirSync(CORPUS)
  .filter((f) => /\.(py|mjs)$/.test(f))
  .sort()
  .map(load);

describe("review corpus", () => {
  it("has enough scripts of each kind", () => {
    const py = cases.filter((c) => c.language === "python");
    expect(py.filter((c) => c.expected.length === 0).length).toBeGreaterThanOrEqual(15);
    expect(py.filter((c) => c.expected.length > 0).length).toBeGreaterThanOrEqual(15);
    expect(cases.filter((c) => c.language === "javascript").length).toBeGreaterThanOrEqual(6);
  });

  it.each(cases.map((c) => [c.file, c] as const))("%s", async (_file, c) => {
    const report = await reviewScript(c.source, {
      language: c.language,
      filename: c.file,
      ...(c.declared ? { declared: c.declared } : {}),
    });
    const got = [...new Set(report.findings.map(key))].sort();
    const detail = report.findings.map((f) => `  ${f.line}:${f.column} ${key(f)} ${f.message}`).join("\n");
    expect(got, `${c.file}\n${detail}`).toEqual(c.expected);
    expect(report.ok).toBe(!c.expected.some((e) => !e.endsWith(":warning")));
  });
});
