/** `formatReport`: a review report as text for people. Pure. */
import type { Finding, ReviewReport } from "./types.js";

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function formatFinding(f: Finding, filename: string): string {
  return `${filename}:${f.line}:${f.column}  ${f.severity.padEnd(8)}  ${f.rule} ${f.id}\n    ${f.message}\n    fix: ${f.fix}`;
}

/**
 * One block per finding (`file:line:col  severity  rule id`, the message, the fix), then a summary
 * line saying whether the script passes.
 */
export function formatReport(report: ReviewReport, filename: string): string {
  const lines = report.findings.map((f) => formatFinding(f, filename));
  const counts = `${plural(report.blocking, "blocking finding")}, ${plural(report.warnings, "warning")}`;
  const verdict = report.ok ? "ok" : "blocked";
  lines.push(`${filename}: ${verdict} — ${counts} (${report.language}, ${plural(report.lines, "line")})`);
  return lines.join("\n");
}
