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
      bytes = current ? current.stdin() : (presetStdin ?? readFileSync(0));
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

/**
 * A reader that went away (`ratchet events | head -1`: the pipe is closed, writes fail with
 * EPIPE) is not an error. From the first failed write on, that stream is treated as gone: nothing
 * more is written to it, no stack trace is printed, and the work goes on to its end, so a write
 * flow always finishes its transaction and the process exits with the status it would have had
 * (docs/exit-codes.md). Commands that only print until interrupted (`events --follow`) stop at
 * once through {@link onStdoutGone} and exit 0.
 */
const gone = { stdout: false, stderr: false };
const goneListeners = new Set<() => void>();
let guarded = false;
/** A stdout write that failed for another reason than a reader that went away (a full disk). */
let stdoutFailure: string | undefined;

/** Errors that only mean "nobody reads this stream any more". */
const READER_GONE = new Set(["EPIPE", "ECONNRESET", "ERR_STREAM_DESTROYED", "ERR_STREAM_WRITE_AFTER_END"]);

/** Installs the broken-pipe handling on stdout and stderr (once per process; idempotent). */
export function guardStdio(): void {
  if (guarded) return;
  guarded = true;
  // An error on a standard stream is recorded, never thrown: after it nothing can be written there.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (gone.stdout) return;
    gone.stdout = true;
    if (!READER_GONE.has(e.code ?? "")) stdoutFailure = e.message;
    for (const fn of [...goneListeners]) fn();
  });
  process.stderr.on("error", () => {
    gone.stderr = true;
  });
}

/**
 * The exit status once the command is done: `status`, or 1 when stdout failed for another reason
 * than a reader that went away (a full disk: the output is lost, which the caller must learn; the
 * reason goes to stderr). A closed pipe keeps `status`.
 */
export async function finalStatus(status: number): Promise<number> {
  // A failed write is reported as an `error` event on a later tick: let it arrive first.
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (stdoutFailure === undefined) return status;
  err(
    `ratchet: cannot write to standard output (${stdoutFailure}); the command itself finished with status ${status}`,
  );
  return status === 0 ? 1 : status;
}

/** Whether stdout's reader went away. */
export function stdoutGone(): boolean {
  return gone.stdout;
}

/** Calls `fn` when stdout's reader goes away (at once if it already has). Returns the unsubscribe. */
export function onStdoutGone(fn: () => void): () => void {
  if (gone.stdout) {
    fn();
    return () => {};
  }
  goneListeners.add(fn);
  return () => goneListeners.delete(fn);
}

/** Writes a line to stdout (nothing once its reader went away). */
export function out(text: string): void {
  const line = text.endsWith("\n") ? text : `${text}\n`;
  if (current) current.stdout(line);
  else if (!gone.stdout) process.stdout.write(line);
}

/** Writes a line to stderr (nothing once its reader went away). */
export function err(text: string): void {
  const line = text.endsWith("\n") ? text : `${text}\n`;
  if (current) current.stderr(line);
  else if (!gone.stderr) process.stderr.write(line);
}

/**
 * The standard streams of a command served for another process (the daemon, src/daemon/): its
 * stdin bytes, whether that stdin is a terminal, and sinks for what it prints.
 */
export interface CommandIo {
  stdin(): Buffer;
  stdinIsTTY: boolean;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Standard input already read by the daemon client before it fell back to in-process. */
let presetStdin: Buffer | undefined;

/** Makes `readInputText("-")` return `bytes` (stdin was consumed before the CLI started). */
export function useStdinBytes(bytes: Buffer): void {
  presetStdin = bytes;
}

/** The I/O of the command being served, while {@link withCommandIo} runs; else the process's own. */
let current: CommandIo | undefined;

/**
 * Runs `fn` with `out`, `err`, `readInputText("-")` and {@link stdinIsTTY} bound to `io`. Only one
 * command at a time may use this (the daemon serves its requests one after another).
 */
export async function withCommandIo<T>(io: CommandIo, fn: () => Promise<T>): Promise<T> {
  const prev = current;
  current = io;
  try {
    return await fn();
  } finally {
    current = prev;
  }
}

/** Whether the command's stdin is a terminal (an interactive caller). */
export function stdinIsTTY(): boolean {
  return current ? current.stdinIsTTY : process.stdin.isTTY === true;
}
