/**
 * The task spec (specs/code-runner.md "Task Contract"): a strict zod schema (unknown fields are
 * rejected by name) and allowlist normalisation. Parsing is pure; `loadTaskSpec` reads the file.
 */
import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { z } from "zod";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  ErrorCode,
  MAX_INPUT_BYTES,
  RatchetError,
} from "../core/index.js";
import {
  DEFAULT_DOD_TIMEOUT_SECONDS,
  DEFAULT_MAX_ROUNDS,
  MAX_DOD_TIMEOUT_SECONDS,
  MAX_ROUNDS_LIMIT,
  MAX_WRITABLE_PATHS,
} from "./limits.js";

const ASSERT_EXIT = /^exit_code\s*==\s*(-?\d+)$/;

const dodSchema = z.strictObject({
  command: z.string().min(1),
  /** `exit_code == N`, or a substring the output must contain. */
  assertion: z.string().min(1),
  /** Time limit of one DoD run. Default {@link DEFAULT_DOD_TIMEOUT_SECONDS}. */
  timeout_seconds: z.number().int().min(1).max(MAX_DOD_TIMEOUT_SECONDS).optional(),
});

export const taskSpecSchema = z.strictObject({
  task_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "letters, digits, . _ - (at most 128)"),
  title: z.string().min(1).max(500),
  prompt: z.string().min(1),
  backend: z.string().min(1),
  cwd: z.string().min(1),
  output_dir: z.string().min(1),
  allowlist: z.array(z.string().min(1)).min(1),
  definition_of_done: dodSchema,
  max_rounds: z.number().int().min(1).max(MAX_ROUNDS_LIMIT).default(DEFAULT_MAX_ROUNDS),
  read_context: z.array(z.string().min(1)).default([]),
  dirty_worktree_policy: z.literal("isolated_worktree").default("isolated_worktree"),
  apply_to_source: z.boolean().default(false),
  commit_on_success: z.boolean().default(false),
  rollback_on_failure: z.boolean().default(true),
  /** Paths the model may not change; the DoD always runs against their pristine copies. */
  protected_paths: z.array(z.string().min(1)).default([]),
  /** Accept a DoD that already passes before any change (otherwise refused as vacuous). */
  allow_passing_dod: z.boolean().default(false),
  /**
   * Folders outside the worktree that commands may write to under the sandbox (absolute, e.g. a
   * build cache such as `~/.cache/go-build` written out). Never inside the source repository.
   */
  writable_paths: z.array(z.string().min(1)).max(MAX_WRITABLE_PATHS).default([]),
});

/** A validated task spec with absolute `cwd`/`output_dir` and normalised path lists. */
export type TaskSpec = z.output<typeof taskSpecSchema> & {
  definition_of_done: { timeout_seconds: number };
};

/** The parsed DoD assertion. */
export type DodAssertion = { kind: "exit_code"; code: number } | { kind: "substring"; text: string };

/** Parses `exit_code == N` or a substring. */
export function parseAssertion(assertion: string): DodAssertion {
  const m = ASSERT_EXIT.exec(assertion.trim());
  return m?.[1] !== undefined
    ? { kind: "exit_code", code: Number(m[1]) }
    : { kind: "substring", text: assertion };
}

function bad(field: string, message: string): RatchetError {
  return new RatchetError(ErrorCode.SchemaViolation, `task spec: ${field}: ${message}`, { field });
}

/**
 * Normalises one repo-relative path: posix separators, no `./`, no trailing `/`.
 * @throws RatchetError `schema_violation` for an absolute path, `..`, or a path outside `root`.
 */
export function normaliseRepoPath(entry: string, root: string, field: string): string {
  const raw = entry.replaceAll("\\", "/");
  if (isAbsolute(raw) || /^[A-Za-z]:\//.test(raw))
    throw bad(field, `${JSON.stringify(entry)} is an absolute path`);
  const parts = raw.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw bad(field, `${JSON.stringify(entry)} contains ".."`);
  if (parts.length === 0) throw bad(field, `${JSON.stringify(entry)} names the whole repository`);
  if (parts[0] === ".git") throw bad(field, `${JSON.stringify(entry)} is inside .git`);
  const norm = parts.join("/");
  const rel = relative(root, resolve(root, norm));
  if (rel.startsWith("..") || isAbsolute(rel))
    throw bad(field, `${JSON.stringify(entry)} is outside the repository`);
  return norm;
}

/**
 * Validates a task spec object. Relative `cwd`/`output_dir` are resolved against `baseDir`.
 * @throws RatchetError `schema_violation` naming the offending field (unknown fields by name).
 */
export function parseTaskSpec(value: unknown, baseDir = process.cwd()): TaskSpec {
  const parsed = taskSpecSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.map(String).join(".") || "(root)";
    const keys = issue && "keys" in issue && Array.isArray(issue.keys) ? ` ${issue.keys.join(", ")}` : "";
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `task spec: ${path}: ${issue?.message ?? "invalid"}${keys}\n${z.prettifyError(parsed.error)}`,
      { field: keys ? keys.trim() : path },
    );
  }
  const s = parsed.data;
  const cwd = resolve(baseDir, s.cwd);
  const norm = (list: string[], field: string) => [
    ...new Set(list.map((e, i) => normaliseRepoPath(e, cwd, `${field}[${i}]`))),
  ];
  if (s.commit_on_success && !s.apply_to_source) {
    throw bad("commit_on_success", "needs apply_to_source: true");
  }
  const writable = s.writable_paths.map((p, i) => {
    const field = `writable_paths[${i}]`;
    if (!isAbsolute(p)) throw bad(field, `${JSON.stringify(p)} must be an absolute path`);
    const abs = resolve(p);
    const rel = relative(cwd, abs);
    if (rel === "" || (!rel.startsWith("..") && !isAbsolute(rel)))
      throw bad(field, `${JSON.stringify(p)} is inside the source repository ${cwd}`);
    const up = relative(abs, cwd);
    if (!up.startsWith("..") && !isAbsolute(up))
      throw bad(field, `${JSON.stringify(p)} contains the source repository ${cwd}`);
    return abs;
  });
  return {
    ...s,
    cwd,
    output_dir: resolve(baseDir, s.output_dir),
    allowlist: norm(s.allowlist, "allowlist"),
    read_context: norm(s.read_context, "read_context"),
    protected_paths: norm(s.protected_paths, "protected_paths"),
    writable_paths: [...new Set(writable)],
    definition_of_done: {
      ...s.definition_of_done,
      timeout_seconds: s.definition_of_done.timeout_seconds ?? DEFAULT_DOD_TIMEOUT_SECONDS,
    },
  };
}

/**
 * Reads and validates a task spec file (JSON). Relative paths in it resolve against the file's folder.
 * @throws RatchetError `unreadable_input`, `malformed_input` or `schema_violation`.
 */
export function loadTaskSpec(file: string): TaskSpec {
  let text: string;
  try {
    const buf = readFileSync(file);
    if (buf.length > MAX_INPUT_BYTES) throw new Error(`larger than ${MAX_INPUT_BYTES} bytes`);
    text = decodeUtf8Strict(buf, `task spec ${file}`);
  } catch (err) {
    if (err instanceof RatchetError) throw err;
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `cannot read task spec ${file}: ${(err as Error).message}`,
      {
        file,
      },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RatchetError(
      ErrorCode.MalformedInput,
      `task spec ${file} is not JSON: ${(err as Error).message}`,
      {
        file,
      },
    );
  }
  assertNoForbiddenKeys(value);
  return parseTaskSpec(value, resolve(file, ".."));
}

/** True when repo-relative `path` is `entry` or lies under it (entries name files or folders). */
export function underEntry(path: string, entry: string): boolean {
  return path === entry || path.startsWith(`${entry}/`);
}

/** True when `path` is covered by one of `entries`. */
export function inList(path: string, entries: readonly string[]): boolean {
  return entries.some((e) => underEntry(path, e));
}
