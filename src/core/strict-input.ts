/**
 * Strictness checks every edge applies to untrusted input before a schema sees it: bytes must be
 * valid UTF-8 (no silent U+FFFD), and no object anywhere may carry a `__proto__`, `constructor` or
 * `prototype` key (prototype pollution, and keys a `k in shape` check would wrongly accept).
 * Pure: no I/O. Errors name the field (a dotted path, `[i]` for array items) or the input.
 */
import { ErrorCode, RatchetError } from "./errors.js";

/** Object keys refused anywhere in a JSON/YAML input. */
export const FORBIDDEN_KEYS: readonly string[] = ["__proto__", "constructor", "prototype"];

/** Deepest nesting walked; deeper input is refused (a parser accepts it, nothing here needs it). */
export const MAX_INPUT_DEPTH = 64;

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Decodes bytes as UTF-8, refusing invalid sequences (the BOM is dropped).
 * @throws RatchetError `malformed_input` naming `field` (default `input`) and the byte offset.
 */
export function decodeUtf8Strict(bytes: Uint8Array, source: string, field = "input"): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${source} is not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(bytes)})`,
      { field, ...(source === "standard input" ? {} : { file: source }) },
    );
  }
}

/** The offset of the first byte that does not start or continue a valid UTF-8 sequence. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    let n = 0;
    let min = 0;
    if (c < 0x80) n = 0;
    else if (c >= 0xc2 && c <= 0xdf) [n, min] = [1, 0x80];
    else if (c >= 0xe0 && c <= 0xef) [n, min] = [2, 0x800];
    else if (c >= 0xf0 && c <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    let cp = n === 0 ? c : c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (n > 0 && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) return i;
    i += n + 1;
  }
  return b.length;
}

/**
 * Refuses a forbidden key anywhere in `value` (own keys only: `JSON.parse` and the YAML parser
 * make `__proto__` an own property) and nesting deeper than {@link MAX_INPUT_DEPTH}.
 * @throws RatchetError `schema_violation` naming the path of the key.
 */
export function assertNoForbiddenKeys(value: unknown, path = ""): void {
  walk(value, path, 0);
}

function walk(v: unknown, path: string, depth: number): void {
  if (v === null || typeof v !== "object") return;
  if (depth > MAX_INPUT_DEPTH)
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `field \`${path || "(input)"}\`: nested deeper than ${MAX_INPUT_DEPTH} levels`,
      { field: path || "(input)" },
    );
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) walk(v[i], `${path}[${i}]`, depth + 1);
    return;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null && !(v instanceof Map)) {
    // A parser that assigned `__proto__` instead of defining it changed the prototype.
    const field = path ? `${path}.__proto__` : "__proto__";
    throw forbidden(field);
  }
  for (const k of Object.keys(v)) {
    const field = path ? `${path}.${k}` : k;
    if (FORBIDDEN_KEYS.includes(k)) throw forbidden(field);
    walk((v as Record<string, unknown>)[k], field, depth + 1);
  }
}

function forbidden(field: string): RatchetError {
  return new RatchetError(
    ErrorCode.SchemaViolation,
    `field \`${field}\`: the keys ${FORBIDDEN_KEYS.join(", ")} are not accepted in any input`,
    { field },
  );
}

/**
 * `JSON.parse` plus {@link assertNoForbiddenKeys}. `where` names the input in the syntax error.
 * @throws RatchetError `malformed_input` (not JSON) or `schema_violation` (a forbidden key).
 */
export function parseJsonStrict(text: string, where: string, details: Record<string, unknown> = {}): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new RatchetError(ErrorCode.MalformedInput, `${where} is not valid JSON: ${(e as Error).message}`, {
      ...details,
    });
  }
  assertNoForbiddenKeys(value);
  return value;
}
