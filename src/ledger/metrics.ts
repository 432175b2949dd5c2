/** Parses `metric name=<x> value=<v> [unit=<u>]` lines (one per line, anywhere in the output). Pure. */

export interface ParsedMetric {
  name: string;
  value: number;
  unit?: string;
}

const LINE = /^\s*metric\s+(.*)$/;

export function parseMetricLines(text: string): ParsedMetric[] {
  const out: ParsedMetric[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = LINE.exec(line);
    if (!m) continue;
    const fields: Record<string, string> = {};
    for (const part of (m[1] ?? "").trim().split(/\s+/)) {
      const eq = part.indexOf("=");
      if (eq > 0) fields[part.slice(0, eq)] = part.slice(eq + 1);
    }
    const name = fields.name;
    const value = fields.value === undefined || fields.value === "" ? Number.NaN : Number(fields.value);
    if (!name || !Number.isFinite(value)) continue;
    out.push({ name, value, ...(fields.unit ? { unit: fields.unit } : {}) });
  }
  return out;
}
