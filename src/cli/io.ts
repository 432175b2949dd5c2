/** Reading write-flow inputs (a file path or `-` for stdin) and printing results with the tail marker. */
import { readFileSync, statSync } from "node:fs";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  ErrorCode,
  MAX_INPUT_BYTES,
  RatchetError,
} from "../core/index.js";

/**
 * Reads a whole input: a path, or `-` for standard input. Invalid UTF-8 is refused
 * (`malformed_input`, field `input`), never decoded into U+FFFD.
 */
export function readInputText(source: string): string {
  if (source === "-") {
    let bytes: Buffer;
    try {
      bytes = readFileSync(0);
    } catch (err) {
      throw new RatchetError(
        ErrorCode.UnreadableInput,
        `cannot read standard input: ${(err as Error).message}`,
        { field: "input" },
      );
    }
    if (bytes.length > MAX_INPUT_BYTES)
      throw new RatchetError(
        ErrorCode.UnreadableInput,
        `standard input is ${bytes.length} bytes (limit ${MAX_INPUT_BYTES})`,
        { field: "input" },
      );
    return decodeUtf8Strict(bytes, "standard input");
  }
  let size: number;
  try {
    const st = statSync(source);
    if (!st.isFile()) throw new Error("not a regular file");
    size = st.size;
  } catch (err) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `cannot read input file ${source}: ${(err as Error).message}`,
      { file: source },
    );
  }
  if (size > MAX_INPUT_BYTES) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `input file ${source} is ${size} bytes (limit ${MAX_INPUT_BYTES})`,
      { file: source },
    );
  }
  return decodeUtf8Strict(readFileSync(source), `input file ${source}`);
}

/**
 * Parses JSON, naming the source and the position of a syntax error; refuses `__proto__`,
 * `constructor` and `prototype` keys anywhere (`schema_violation` naming the field).
 */
export function parseJsonInput(text: string, source: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const where = source === "-" ? "standard input" : source;
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${where} is not valid JSON: ${(err as Error).message}`,
      { file: source },
    );
  }
  assertNoForbiddenKeys(value);
  return value;
}

/** Parses JSON, or YAML when the source ends in .yaml/.yml or the text is not JSON-shaped (publish). */
export async function parseJsonOrYaml(text: string, source: string): Promise<unknown> {
  const trimmed = text.trimStart();
  const looksJson = trimmed.startsWith("{") || trimmed.startsWith("[");
  if (/\.json$/i.test(source) || (looksJson && !/\.ya?ml$/i.test(source)))
    return parseJsonInput(text, source);
  const { parse } = await import("yaml");
  let value: unknown;
  try {
    value = parse(text);
  } catch (err) {
    const where = source === "-" ? "standard input" : source;
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${where} is not valid YAML or JSON: ${(err as Error).message}`,
      { file: source },
    );
  }
  assertNoForbiddenKeys(value);
  return value;
}

/** Writes a line to stdout. */
export function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** Writes a line to stderr. */
export function err(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}
