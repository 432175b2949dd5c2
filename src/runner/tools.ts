/**
 * The model's tools, run inside the worktree: read_file, write_file, edit_file, run_command,
 * search_code (the loop adds `finish`). Writes are confined to the allowlist; commands pass the
 * guard and run with a scrubbed environment through the one process runner.
 */
import {
  closeSync,
  constants,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { type ProcessRunner, type RunRequest, realProcessRunner } from "../exec/index.js";
import type { LoopTool } from "../model/index.js";
import type { CommandSandbox } from "./confine.js";
import { commandEnv } from "./dod.js";
import { type PinnedRepo, pinnedGitRequest } from "./git.js";
import { checkCommand } from "./guard.js";
import {
  COMMAND_CAPTURE_BYTES,
  FILE_MAX_BYTES,
  OUTPUT_TAIL_CHARS,
  READ_MAX_LINES,
  SEARCH_MAX_MATCHES,
  TOOL_COMMAND_TIMEOUT_MS,
} from "./limits.js";
import { resolveForRead, resolveForWrite } from "./paths.js";

export interface ToolContext {
  worktree: string;
  /** Ratchet's own git view of the worktree (search_code runs git through it, never the `.git` file). */
  repo: PinnedRepo;
  source: string;
  allowlist: readonly string[];
  protectedPaths: readonly string[];
  runner?: ProcessRunner;
  /** Confines `run_command`'s writes (see confine.ts). Default: not confined. */
  sandbox?: Pick<CommandSandbox, "wrap">;
  /** Masks known secrets in every result and error the model gets. Default: none. */
  redact?: (text: string) => string;
  /** Told about every refusal (path or guard), for the events file. */
  onRefusal?: (tool: string, reason: string) => void;
}

/**
 * Writes `content` as the whole file at `abs` (created when missing): written over the old bytes,
 * then cut to its length. The same file afterwards as `writeFileSync`, without truncating to zero
 * first: ext4 (`auto_da_alloc`) flushes a file that was truncated to zero and written again when
 * it is closed, which costs a disk write (~5 ms here) on every edit of an existing file.
 */
export function overwriteFile(abs: string, content: string): void {
  const data = Buffer.from(content);
  const fd = openSync(abs, constants.O_WRONLY | constants.O_CREAT, 0o666);
  try {
    let at = 0;
    while (at < data.length) at += writeSync(fd, data, at, data.length - at, at);
    ftruncateSync(fd, data.length);
  } finally {
    closeSync(fd);
  }
}

/** A tool failure the model sees as an error result. */
class ToolRefusal extends Error {}

function parse<T>(schema: z.ZodType<T>, args: unknown, tool: string): T {
  const r = schema.safeParse(args);
  if (!r.success) throw new ToolRefusal(`${tool}: bad arguments: ${z.prettifyError(r.error)}`);
  return r.data;
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

const readArgs = z.strictObject({
  path: z.string().min(1),
  start_line: z.number().int().min(1).optional(),
  end_line: z.number().int().min(1).optional(),
});
const writeArgs = z.strictObject({ path: z.string().min(1), content: z.string() });
const editArgs = z.strictObject({
  path: z.string().min(1),
  start_line: z.number().int().min(1),
  end_line: z.number().int().min(0),
  expected_text: z.string(),
  new_text: z.string(),
});
const commandArgs = z.strictObject({ command: z.string().min(1) });
const searchArgs = z.strictObject({ pattern: z.string().min(1) });

/** A tool whose result (or error) reaches the model only after `redact`. */
function redacted(tool: LoopTool, redact: (text: string) => string): LoopTool {
  return {
    def: tool.def,
    async execute(args, c) {
      let out: unknown;
      try {
        out = await tool.execute(args, c);
      } catch (err) {
        throw new ToolRefusal(redact(err instanceof Error ? err.message : String(err)));
      }
      return redact(typeof out === "string" ? out : JSON.stringify(out));
    },
  };
}

/** The five tools for one worktree, their results and errors masked with `ctx.redact`. */
export function runnerTools(ctx: ToolContext): LoopTool[] {
  const tools = rawTools(ctx);
  const redact = ctx.redact;
  return redact ? tools.map((t) => redacted(t, redact)) : tools;
}

function rawTools(ctx: ToolContext): LoopTool[] {
  const runner = ctx.runner ?? realProcessRunner;
  const refuse = (tool: string, message: string): never => {
    ctx.onRefusal?.(tool, message);
    throw new ToolRefusal(message);
  };
  const guardWrite = (tool: string, path: string) => {
    try {
      return resolveForWrite(ctx.worktree, path, ctx.allowlist, ctx.protectedPaths);
    } catch (err) {
      return refuse(tool, `${tool} refused: ${(err as Error).message}`);
    }
  };
  const guardRead = (tool: string, path: string) => {
    try {
      return resolveForRead(ctx.worktree, path);
    } catch (err) {
      return refuse(tool, `${tool} refused: ${(err as Error).message}`);
    }
  };
  const readText = (abs: string, path: string) => {
    const st = statSync(abs, { throwIfNoEntry: false });
    if (!st?.isFile()) throw new ToolRefusal(`${path}: no such file`);
    if (st.size > FILE_MAX_BYTES) throw new ToolRefusal(`${path} is larger than ${FILE_MAX_BYTES} bytes`);
    return readFileSync(abs, "utf8");
  };

  return [
    {
      def: {
        name: "read_file",
        description: `Read a file of the repository (1-based inclusive line range; at most ${READ_MAX_LINES} lines).`,
        inputSchema: {
          type: "object",
          properties: {
            path: { type: "string" },
            start_line: { type: "integer", minimum: 1 },
            end_line: { type: "integer", minimum: 1 },
          },
          required: ["path"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = parse(readArgs, raw, "read_file");
        const { abs, rel } = guardRead("read_file", a.path);
        const lines = splitLines(readText(abs, a.path));
        const start = a.start_line ?? 1;
        const end = Math.min(a.end_line ?? lines.length, start + READ_MAX_LINES - 1, lines.length);
        const body = lines.slice(start - 1, end).join("\n");
        return `${rel} (lines ${start}-${end} of ${lines.length}):\n${body}`;
      },
    },
    {
      def: {
        name: "write_file",
        description: "Create or overwrite an allowlisted file with the given content.",
        inputSchema: {
          type: "object",
          properties: { path: { type: "string" }, content: { type: "string" } },
          required: ["path", "content"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = parse(writeArgs, raw, "write_file");
        if (Buffer.byteLength(a.content) > FILE_MAX_BYTES)
          throw new ToolRefusal(`content is larger than ${FILE_MAX_BYTES} bytes`);
        const { abs, rel } = guardWrite("write_file", a.path);
        if (!existsSync(dirname(abs))) mkdirSync(dirname(abs), { recursive: true });
        overwriteFile(abs, a.content);
        return `wrote ${rel} (${Buffer.byteLength(a.content)} bytes)`;
      },
    },
    {
      def: {
        name: "edit_file",
        description:
          'Replace lines start_line..end_line (1-based, inclusive) of an allowlisted file with new_text. expected_text must equal the current text of those lines (read the file first); otherwise the edit is refused as stale and the current text is returned. To insert, give end_line = start_line - 1 and expected_text "".',
        inputSchema: {
          type: "object",
          properties: {
            path: { type: "string" },
            start_line: { type: "integer", minimum: 1 },
            end_line: { type: "integer", minimum: 0 },
            expected_text: { type: "string" },
            new_text: { type: "string" },
          },
          required: ["path", "start_line", "end_line", "expected_text", "new_text"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = parse(editArgs, raw, "edit_file");
        const { abs, rel } = guardWrite("edit_file", a.path);
        const text = readText(abs, a.path);
        const lines = splitLines(text);
        if (a.end_line < a.start_line - 1 || a.end_line > lines.length || a.start_line > lines.length + 1) {
          throw new ToolRefusal(
            `edit_file: lines ${a.start_line}-${a.end_line} are not in ${rel} (${lines.length} lines)`,
          );
        }
        const current = lines.slice(a.start_line - 1, a.end_line).join("\n");
        const strip = (s: string) => s.replace(/\n$/, "");
        if (strip(current) !== strip(a.expected_text)) {
          throw new ToolRefusal(
            `edit_file refused: stale edit, lines ${a.start_line}-${a.end_line} of ${rel} are now:\n${current}`,
          );
        }
        const replacement = a.new_text === "" ? [] : splitLines(a.new_text);
        lines.splice(a.start_line - 1, a.end_line - a.start_line + 1, ...replacement);
        const trailing = text.endsWith("\n") || text === "" ? "\n" : "";
        overwriteFile(abs, lines.length > 0 ? `${lines.join("\n")}${trailing}` : "");
        return `edited ${rel}: lines ${a.start_line}-${a.end_line} replaced by ${replacement.length} line(s)`;
      },
    },
    {
      def: {
        name: "run_command",
        description: `Run a shell command (bash -c) in the repository root; ${TOOL_COMMAND_TIMEOUT_MS / 1000} s limit; destructive commands are blocked.`,
        inputSchema: {
          type: "object",
          properties: { command: { type: "string" } },
          required: ["command"],
          additionalProperties: false,
        },
      },
      async execute(raw, { signal }) {
        const a = parse(commandArgs, raw, "run_command");
        const verdict = checkCommand(a.command, {
          worktree: ctx.worktree,
          forbiddenRoots: [ctx.source],
          ...(process.env.HOME ? { home: process.env.HOME } : {}),
        });
        if (!verdict.allowed)
          refuse("run_command", `run_command blocked (${verdict.rule}): ${verdict.reason}`);
        const request: RunRequest = {
          command: "bash",
          args: ["-c", a.command],
          cwd: ctx.worktree,
          env: commandEnv(ctx.source),
          timeoutMs: TOOL_COMMAND_TIMEOUT_MS,
          maxCaptureBytes: COMMAND_CAPTURE_BYTES,
          killGraceMs: 500,
          signal,
        };
        const r = await runner.run(ctx.sandbox ? ctx.sandbox.wrap(request) : request);
        const status = r.timedOut
          ? "timed out"
          : r.spawnError
            ? `not started: ${r.spawnError.message}`
            : `exit ${r.exitCode}`;
        // masked before the cut, so the cut cannot split a secret out of the mask's reach
        const output = ctx.redact ? ctx.redact(r.combined) : r.combined;
        return `${status}\n${output.slice(-OUTPUT_TAIL_CHARS)}`;
      },
    },
    {
      def: {
        name: "search_code",
        description: `Search the repository (git grep -n, extended regex); at most ${SEARCH_MAX_MATCHES} matches.`,
        inputSchema: {
          type: "object",
          properties: { pattern: { type: "string" } },
          required: ["pattern"],
          additionalProperties: false,
        },
      },
      async execute(raw, { signal }) {
        const a = parse(searchArgs, raw, "search_code");
        // Ratchet's pinned git (private git dir and config): the worktree's `.git` file and
        // whatever config a command wrote are never read, so grep runs no textconv or fsmonitor.
        const r = await runner.run({
          ...pinnedGitRequest(
            ["grep", "-n", "-I", "-E", "--untracked", "--no-textconv", "-e", a.pattern],
            ctx.repo,
          ),
          timeoutMs: TOOL_COMMAND_TIMEOUT_MS,
          maxCaptureBytes: COMMAND_CAPTURE_BYTES,
          signal,
        });
        if (r.exitCode === 1) return "no matches";
        if (r.exitCode !== 0) throw new ToolRefusal(`search_code failed: ${r.stderr.trim()}`);
        const lines = r.stdout.split("\n").filter(Boolean);
        const more = lines.length > SEARCH_MAX_MATCHES ? `\n… ${lines.length - SEARCH_MAX_MATCHES} more` : "";
        return lines.slice(0, SEARCH_MAX_MATCHES).join("\n") + more;
      },
    },
  ];
}
