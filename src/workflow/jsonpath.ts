/**
 * A small JSONPath evaluator for validation checks. Pure: no I/O.
 *
 * Supported: `$` (the document), `.key`, `['key']` / `["key"]` (with `\'`, `\"` and `\\` escapes),
 * `[n]`, `[-n]` (from the end), `[*]` and `.*` (every element of an array or every value of an
 * object). Not supported (refused by {@link parsePath}): recursive descent `..`, filters `[?()]`,
 * slices `[a:b]`, unions `[a,b]`.
 */
import { ErrorCode, RatchetError } from "../core/errors.js";

export type PathSegment =
  | { kind: "key"; key: string }
  | { kind: "index"; index: number }
  | { kind: "wildcard" };

export interface QueryResult {
  /** True when the path selected at least one value (a `null` value counts as found). */
  found: boolean;
  /** The selected values, in document order. */
  values: unknown[];
  /** The concrete path of each value (`$.items[2].id`), parallel to `values`. */
  paths: string[];
}

const DOT_KEY = /^[^.[\]\s'"*]+/;
const INDEX = /^-?\d+$/;

function bad(path: string, why: string): never {
  throw new RatchetError(ErrorCode.SchemaViolation, `invalid JSONPath ${JSON.stringify(path)}: ${why}`, {
    field: "path",
    path,
  });
}

/**
 * Parses a JSONPath into segments.
 * @throws RatchetError `schema_violation` naming the path and what is wrong with it.
 */
export function parsePath(path: string): PathSegment[] {
  if (typeof path !== "string" || path.length === 0) bad(String(path), "empty path");
  if (path[0] !== "$") bad(path, "must start with `$`");
  const out: PathSegment[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === ".") {
      if (path[i + 1] === ".") bad(path, `recursive descent \`..\` is not supported (at ${i})`);
      if (path[i + 1] === "*") {
        out.push({ kind: "wildcard" });
        i += 2;
        continue;
      }
      const m = DOT_KEY.exec(path.slice(i + 1));
      if (!m) bad(path, `expected a key after \`.\` at ${i}`);
      out.push({ kind: "key", key: m[0] });
      i += 1 + m[0].length;
    } else if (c === "[") {
      const close = readBracket(path, i);
      out.push(close.segment);
      i = close.end;
    } else {
      bad(path, `unexpected ${JSON.stringify(c)} at ${i}`);
    }
  }
  return out;
}

function readBracket(path: string, start: number): { segment: PathSegment; end: number } {
  let i = start + 1;
  while (path[i] === " ") i++;
  const q = path[i];
  if (q === "'" || q === '"') {
    let key = "";
    i++;
    for (;;) {
      const ch = path[i];
      if (ch === undefined) bad(path, `unterminated string starting at ${start}`);
      if (ch === "\\") {
        const next = path[i + 1];
        if (next === undefined) bad(path, `unterminated string starting at ${start}`);
        key += next;
        i += 2;
        continue;
      }
      if (ch === q) break;
      key += ch;
      i++;
    }
    i++;
    while (path[i] === " ") i++;
    if (path[i] !== "]") bad(path, `expected \`]\` at ${i}`);
    return { segment: { kind: "key", key }, end: i + 1 };
  }
  const close = path.indexOf("]", i);
  if (close < 0) bad(path, `unclosed \`[\` at ${start}`);
  const inner = path.slice(i, close).trim();
  if (inner === "*") return { segment: { kind: "wildcard" }, end: close + 1 };
  if (INDEX.test(inner)) {
    const index = Number(inner);
    if (!Number.isSafeInteger(index)) bad(path, `index ${inner} is too large`);
    return { segment: { kind: "index", index }, end: close + 1 };
  }
  if (inner.startsWith("?")) bad(path, "filter expressions are not supported");
  if (inner.includes(":")) bad(path, "slices are not supported");
  if (inner.includes(",")) bad(path, "unions are not supported");
  return bad(path, `expected a quoted key, an index or \`*\` inside \`[…]\` at ${start}`);
}

/** Renders segments back as a canonical path (`$.a[0]['b c']`). */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = "$";
  for (const s of segments) out += formatSegment(s);
  return out;
}

function formatSegment(s: PathSegment): string {
  if (s.kind === "wildcard") return "[*]";
  if (s.kind === "index") return `[${s.index}]`;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s.key)
    ? `.${s.key}`
    : `['${s.key.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}']`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Evaluates `path` against `doc`.
 * @throws RatchetError `schema_violation` when the path does not parse.
 */
export function queryPath(doc: unknown, path: string): QueryResult {
  let current: { value: unknown; path: string }[] = [{ value: doc, path: "$" }];
  for (const seg of parsePath(path)) {
    const next: { value: unknown; path: string }[] = [];
    for (const { value, path: at } of current) {
      if (seg.kind === "key") {
        if (isObject(value) && Object.hasOwn(value, seg.key))
          next.push({ value: value[seg.key], path: at + formatSegment(seg) });
      } else if (seg.kind === "index") {
        if (Array.isArray(value)) {
          const i = seg.index < 0 ? value.length + seg.index : seg.index;
          if (i >= 0 && i < value.length) next.push({ value: value[i], path: `${at}[${i}]` });
        }
      } else if (Array.isArray(value)) {
        value.forEach((v, i) => {
          next.push({ value: v, path: `${at}[${i}]` });
        });
      } else if (isObject(value)) {
        for (const [k, v] of Object.entries(value))
          next.push({ value: v, path: at + formatSegment({ kind: "key", key: k }) });
      }
    }
    current = next;
  }
  return {
    found: current.length > 0,
    values: current.map((c) => c.value),
    paths: current.map((c) => c.path),
  };
}
