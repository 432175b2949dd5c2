/** Reading write-flow inputs (a file path or `-` for stdin) and printing results with the tail marker. */
import { readFileSync, statSync } from "node:fs";
import { ErrorCode, MAX_INPUT_BYTES, RatchetError } from "../core/index.js";

/** Reads a whole input: a path, or `-` for standard input. */
export function readInputText(source: string): string {
  if (source === "-") {
    try {
      return readFileSync(0, "utf8");
    } catch (err) {
      throw new RatchetError(
        ErrorCode.UnreadableInput,
        `cannot read standard input: ${(err as Error).message}`,
        { field: "input" },
      );
    }
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
  return readFileSync(source, "utf8");
}

/** Parses JSON, naming the source and the position of a syntax error. */
export function parseJsonInput(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const where = source === "-" ? "standard input" : source;
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${where} is not valid JSON: ${(err as Error).message}`,
      { file: source },
    );
  }
}

/** Parses JSON, or YAML when the source ends in .yaml/.yml or the text is not JSON-shaped (publish). */
export async function parseJsonOrYaml(text: string, source: string): Promise<unknown> {
  const trimmed = text.trimStart();
  const looksJson = trimmed.startsWith("{") || trimmed.startsWith("[");
  if (/\.json$/i.test(source) || (looksJson && !/\.ya?ml$/i.test(source)))
    return parseJsonInput(text, source);
  const { parse } = await import("yaml");
  try {
    return parse(text);
  } catch (err) {
    const where = source === "-" ? "standard input" : source;
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `${where} is not valid YAML or JSON: ${(err as Error).message}`,
      { file: source },
    );
  }
}

/** Writes a line to stdout. */
export function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** Writes a line to stderr. */
export function err(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}
