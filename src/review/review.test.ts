import { describe, expect, it } from "vitest";
import { isRatchetError } from "../core/index.js";
import { countLines, MAX_SCRIPT_BYTES, reviewScript } from "./index.js";

const py = (source: string, declared?: string[]) =>
  reviewScript(source, { language: "python", ...(declared ? { declared } : {}) });
const js = (source: string) => reviewScript(source, { language: "javascript" });

describe("reviewScript", () => {
  it("reports a Python syntax error as one blocking finding on the right line", async () => {
    const r = await py('import os\n\nx = 1\ndef main(:\n    print(os.environ["STEP_OUTPUT_DIR"])\n');
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({
      rule: "syntax",
      id: "syntax-error",
      severity: "blocking",
      line: 4,
      column: 10,
    });
    expect(r.findings[0]?.message).toContain('missing ")"');
    expect(r).toMatchObject({ ok: false, blocking: 1, warnings: 0, lines: 5, language: "python" });
  });

  it.each([
    ["an unclosed bracket", "import os\n\nif True:\n    x = (1,\n", 4, 9, '"(" was never closed'],
    ["an unmatched bracket", "import os\nx = [1, 2)\ny = 3\n", 2, 10, 'unmatched ")"'],
    ["a missing colon", "import os\nfor x in range(3)\n    print(x)\n", 2, 1, 'unexpected "for"'],
    ["a bad class header", "x = 1\nclass A\n    pass\n", 2, 1, 'unexpected "class"'],
  ])("locates %s like Python does", async (_what, source, line, column, message) => {
    const r = await py(source);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({ rule: "syntax", line, column });
    expect(r.findings[0]?.message).toContain(message);
  });

  it("reports a JavaScript syntax error with its line and column", async () => {
    const r = await reviewScript('import fs from "node:fs";\n\nconst x = {\n  a: 1,\n  b: ,\n};\n', {
      language: "javascript",
      filename: "main.mjs",
    });
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({ rule: "syntax", line: 5, column: 6, severity: "blocking" });
    expect(r.findings[0]?.message).toContain("main.mjs does not parse");
    expect(r.ok).toBe(false);
  });

  it("passes a clean script with no findings", async () => {
    const r = await py(
      'import os\nwith open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "a.txt"), "w") as f:\n    f.write("x")\n',
    );
    expect(r).toEqual({ language: "python", findings: [], blocking: 0, warnings: 0, ok: true, lines: 3 });
  });

  it("counts warnings apart from blocking findings; warnings alone pass", async () => {
    const r = await py('def save(p):\n    open(p, "w").write("x")\n');
    expect(r.findings.map((f) => [f.rule, f.severity])).toEqual([["R6", "warning"]]);
    expect(r).toMatchObject({ ok: true, blocking: 0, warnings: 1 });
  });

  it("sorts findings by line and column", async () => {
    const r = await py(
      'open("b.txt", "w")\nimport os\nx = os.environ.get("VAR_A", "1")\nopen("a.txt", "w")\n',
    );
    expect(r.findings.map((f) => `${f.line}:${f.rule}`)).toEqual(["1:R6", "3:R2", "4:R6"]);
  });

  it("judges VAR_/SECRET_ fallbacks by the declared list when one is given", async () => {
    const src = 'import os\na = os.environ.get("VAR_A", "1")\nb = os.environ.get("VAR_B", "2")\n';
    expect((await py(src)).findings.map((f) => f.line)).toEqual([2, 3]);
    expect((await py(src, ["VAR_B"])).findings.map((f) => f.line)).toEqual([3]);
    expect((await py(src, [])).findings).toEqual([]);
  });

  it("never prints a fallback value (it may be a secret)", async () => {
    const r = await py('import os\nk = os.environ.get("SECRET_KEY", "sk-live-abcdef")\n');
    expect(r.findings[0]?.rule).toBe("R2");
    expect(JSON.stringify(r)).not.toContain("sk-live-abcdef");
  });

  it("reviews JavaScript with the same rules", async () => {
    const r = await js('import fs from "node:fs";\nfs.writeFileSync("out.json", "{}");\n');
    expect(r.findings.map((f) => [f.rule, f.line, f.column])).toEqual([["R6", 2, 1]]);
  });

  it("parses Python concurrently with one lazily started parser", async () => {
    const reports = await Promise.all(Array.from({ length: 8 }, (_, i) => py(`open("f${i}.txt", "w")\n`)));
    expect(reports.map((r) => r.blocking)).toEqual(Array(8).fill(1));
  });

  it("survives deeply nested expressions", async () => {
    const deep = `x = ${Array.from({ length: 1000 }, (_, i) => `"s${i}"`).join(" + ")}\nopen(x, "w")\n`;
    const r = await py(deep);
    expect(r.findings.map((f) => f.rule)).toEqual(["R6"]);
  });

  it("refuses an unknown language and an oversized script with invalid_value", async () => {
    await expect(reviewScript("x", { language: "ruby" as "python" })).rejects.toSatisfy((e) =>
      isRatchetError(e, "invalid_value"),
    );
    const big = "#".repeat(MAX_SCRIPT_BYTES + 1);
    await expect(py(big)).rejects.toSatisfy((e) => isRatchetError(e, "invalid_value"));
  });
});

describe("countLines", () => {
  it("counts lines, a final newline not starting another", () => {
    expect(countLines("")).toBe(0);
    expect(countLines("a")).toBe(1);
    expect(countLines("a\n")).toBe(1);
    expect(countLines("a\nb")).toBe(2);
    expect(countLines("a\n\n")).toBe(2);
  });
});
