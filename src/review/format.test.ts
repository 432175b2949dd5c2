import { describe, expect, it } from "vitest";
import { formatReport, type ReviewReport } from "./index.js";

describe("formatReport", () => {
  it("prints each finding with its place, rule, message and fix, then a verdict", () => {
    const report: ReviewReport = {
      language: "python",
      findings: [
        {
          rule: "R6",
          id: "writes-outside-output-dir",
          severity: "blocking",
          line: 3,
          column: 6,
          message: 'open() writes "out.json"',
          fix: "build it from STEP_OUTPUT_DIR",
        },
        {
          rule: "R6",
          id: "writes-outside-output-dir",
          severity: "warning",
          line: 9,
          column: 1,
          message: "open() writes <p>",
          fix: "pass a path under STEP_OUTPUT_DIR",
        },
      ],
      blocking: 1,
      warnings: 1,
      ok: false,
      lines: 12,
    };
    expect(formatReport(report, "main.py")).toBe(
      [
        "main.py:3:6  blocking  R6 writes-outside-output-dir",
        '    open() writes "out.json"',
        "    fix: build it from STEP_OUTPUT_DIR",
        "main.py:9:1  warning   R6 writes-outside-output-dir",
        "    open() writes <p>",
        "    fix: pass a path under STEP_OUTPUT_DIR",
        "main.py: blocked — 1 blocking finding, 1 warning (python, 12 lines)",
      ].join("\n"),
    );
  });

  it("says ok for a clean report", () => {
    const clean: ReviewReport = {
      language: "javascript",
      findings: [],
      blocking: 0,
      warnings: 0,
      ok: true,
      lines: 1,
    };
    expect(formatReport(clean, "main.mjs")).toBe(
      "main.mjs: ok — 0 blocking findings, 0 warnings (javascript, 1 line)",
    );
  });
});
