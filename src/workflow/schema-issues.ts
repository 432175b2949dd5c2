/**
 * Schema problems: zod issues and cross-field problems rendered as `path: message`, and the one
 * `schema_violation` error that names the file and every offending field path.
 */
import type { z } from "zod";
import { ErrorCode, RatchetError } from "../core/errors.js";

export interface Issue {
  path: string;
  message: string;
}

type PathPart = PropertyKey;

export function formatFieldPath(parts: readonly PathPart[]): string {
  let out = "";
  for (const p of parts) {
    if (typeof p === "number") out += `[${p}]`;
    else {
      const key = String(p);
      out += /^[A-Za-z0-9_-]+$/.test(key) ? `${out ? "." : ""}${key}` : `[${JSON.stringify(key)}]`;
    }
  }
  return out || "(root)";
}

export function shown(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
  return `${typeof v} ${String(v)}`;
}

export function zodIssues(issues: readonly z.core.$ZodIssue[], prefix: readonly PathPart[]): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const parts = [...prefix, ...issue.path];
    const hasInput = "input" in issue && issue.input !== undefined;
    const got = hasInput ? ` (got ${shown(issue.input)})` : "";
    switch (issue.code) {
      case "unrecognized_keys":
        for (const key of issue.keys)
          out.push({ path: formatFieldPath([...parts, key]), message: "unknown field" });
        break;
      case "invalid_type":
        out.push({
          path: formatFieldPath(parts),
          message: hasInput
            ? `must be ${issue.expected === "int" ? "an integer" : `of type ${issue.expected}`}${got}`
            : "is required",
        });
        break;
      case "invalid_value":
        out.push({
          path: formatFieldPath(parts),
          message: hasInput
            ? `must be one of ${issue.values.map((v) => String(v)).join(", ")}${got}`
            : `is required (one of ${issue.values.map((v) => String(v)).join(", ")})`,
        });
        break;
      case "too_big":
        out.push({
          path: formatFieldPath(parts),
          message:
            issue.origin === "array"
              ? `has too many items (at most ${issue.maximum}, got ${Array.isArray(issue.input) ? issue.input.length : "more"})`
              : issue.origin === "string"
                ? `is too long (at most ${issue.maximum} characters)`
                : `must be at most ${issue.maximum}${got}`,
        });
        break;
      case "too_small":
        out.push({
          path: formatFieldPath(parts),
          message:
            issue.origin === "array"
              ? `must have at least ${issue.minimum} item(s)`
              : issue.origin === "string"
                ? "must not be empty"
                : `must be at least ${issue.minimum}${got}`,
        });
        break;
      case "invalid_union":
        if (!hasInput) out.push({ path: formatFieldPath(parts), message: "is required" });
        else out.push({ path: formatFieldPath(parts), message: `${issue.message}${got}` });
        break;
      default:
        out.push({ path: formatFieldPath(parts), message: `${issue.message}${got}` });
    }
  }
  return out;
}

const MAX_ISSUES_SHOWN = 20;

export function violation(source: string, issues: Issue[]): RatchetError {
  const lines = issues.slice(0, MAX_ISSUES_SHOWN).map((i) => `${i.path}: ${i.message}`);
  const more = issues.length > MAX_ISSUES_SHOWN ? [`… and ${issues.length - MAX_ISSUES_SHOWN} more`] : [];
  const message =
    issues.length === 1
      ? `${source}: ${lines[0]}`
      : `${source}: ${issues.length} problems:\n  ${[...lines, ...more].join("\n  ")}`;
  return new RatchetError(ErrorCode.SchemaViolation, message, {
    file: source,
    field: issues[0]?.path,
    issues,
  });
}
