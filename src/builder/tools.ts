/**
 * The tools of the Builder's agents and of model-driven steps. File tools are confined to one
 * folder (the step's `code/` for scripts, the step's output folder for `direct` outputs): a path
 * that is absolute, climbs out with `..`, or passes through a symbolic link leaving the folder is
 * refused, and the refusal is the tool's result. Bridge tools go over HTTP to the run's tool
 * bridge with its bearer token, like a script's calls.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { isAllowed, parseToolName, toolRoute } from "../bridge/index.js";
import { confinePath, PathRefused } from "../exec/index.js";
import type { LoopTool } from "../model/index.js";
import { type BridgeProvider, writeFileAtomic } from "../workflow/index.js";
import {
  BRIDGE_CALL_TIMEOUT_MS,
  SKILL_NOTE_MAX_CHARS,
  TOOL_FILE_MAX_BYTES,
  TOOL_READ_MAX_LINES,
} from "./limits.js";

/** A refusal the model sees as an error result. */
export class ToolRefusal extends Error {}

function obj(args: unknown, tool: string): Record<string, unknown> {
  if (args === null || typeof args !== "object" || Array.isArray(args))
    throw new ToolRefusal(`${tool}: the arguments must be a JSON object`);
  return args as Record<string, unknown>;
}

function str(a: Record<string, unknown>, key: string, tool: string, optional = false): string | undefined {
  const v = a[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== "string") throw new ToolRefusal(`${tool}: argument \`${key}\` must be a string`);
  return v;
}

function int(a: Record<string, unknown>, key: string, tool: string): number | undefined {
  const v = a[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
    throw new ToolRefusal(`${tool}: argument \`${key}\` must be a positive integer`);
  return v;
}

/**
 * `path` inside `root`, or a refusal: the one path confinement of `exec/` (`confinePath`). Relative
 * paths, or absolute ones inside the folder; no `..` out; symbolic links only while they stay
 * inside, and never the path itself when writing; `forbidden` first segments refused.
 */
export function confinedPath(
  root: string,
  path: string,
  tool: string,
  forbidden: readonly string[] = [],
  mode: "read" | "write" = "read",
): string {
  try {
    return confinePath(root, path, { mode, allowAbsolute: true, forbidden, rootName: "folder you work in" })
      .abs;
  } catch (e) {
    if (e instanceof PathRefused) throw new ToolRefusal(`${tool} refused: ${e.message}`);
    throw e;
  }
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

const pathProp = { type: "string", description: "a path relative to the folder" };

/**
 * read_file, write_file, edit_file and list_files inside `root`.
 * @param names the write tool's name (`write_file`; `write_output` for a direct step's outputs)
 */
export function fileTools(
  root: string,
  opts: { writeName?: string; forbidden?: readonly string[]; onWrite?: (abs: string) => void } = {},
): LoopTool[] {
  const writeName = opts.writeName ?? "write_file";
  const forbidden = opts.forbidden ?? [];
  const readText = (abs: string, path: string) => {
    const st = statSync(abs, { throwIfNoEntry: false });
    if (!st?.isFile()) throw new ToolRefusal(`${path}: no such file`);
    if (st.size > TOOL_FILE_MAX_BYTES)
      throw new ToolRefusal(`${path} is larger than ${TOOL_FILE_MAX_BYTES} bytes`);
    return readFileSync(abs, "utf8");
  };
  return [
    {
      def: {
        name: "read_file",
        description: `Read a file of the folder (1-based inclusive line range; at most ${TOOL_READ_MAX_LINES} lines).`,
        inputSchema: {
          type: "object",
          properties: { path: pathProp, start_line: { type: "integer" }, end_line: { type: "integer" } },
          required: ["path"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = obj(raw, "read_file");
        const path = str(a, "path", "read_file") as string;
        const lines = splitLines(readText(confinedPath(root, path, "read_file"), path));
        const start = int(a, "start_line", "read_file") ?? 1;
        const end = Math.min(
          int(a, "end_line", "read_file") ?? lines.length,
          start + TOOL_READ_MAX_LINES - 1,
        );
        return `${path} (lines ${start}-${Math.min(end, lines.length)} of ${lines.length}):\n${lines.slice(start - 1, end).join("\n")}`;
      },
    },
    {
      def: {
        name: writeName,
        description: "Create or overwrite a file of the folder with the given content.",
        inputSchema: {
          type: "object",
          properties: { path: pathProp, content: { type: "string" } },
          required: ["path", "content"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = obj(raw, writeName);
        const path = str(a, "path", writeName) as string;
        const content = str(a, "content", writeName) as string;
        if (Buffer.byteLength(content) > TOOL_FILE_MAX_BYTES)
          throw new ToolRefusal(`${writeName}: content is larger than ${TOOL_FILE_MAX_BYTES} bytes`);
        const abs = confinedPath(root, path, writeName, forbidden, "write");
        mkdirSync(dirname(abs), { recursive: true });
        writeFileAtomic(abs, content);
        opts.onWrite?.(abs);
        return `wrote ${path} (${Buffer.byteLength(content)} bytes)`;
      },
    },
    {
      def: {
        name: "edit_file",
        description:
          "Replace the exact text old_text (which must occur exactly once) by new_text in a file of the folder.",
        inputSchema: {
          type: "object",
          properties: { path: pathProp, old_text: { type: "string" }, new_text: { type: "string" } },
          required: ["path", "old_text", "new_text"],
          additionalProperties: false,
        },
      },
      async execute(raw) {
        const a = obj(raw, "edit_file");
        const path = str(a, "path", "edit_file") as string;
        const oldText = str(a, "old_text", "edit_file") as string;
        const newText = str(a, "new_text", "edit_file") as string;
        const abs = confinedPath(root, path, "edit_file", forbidden, "write");
        const text = readText(abs, path);
        if (oldText === "") throw new ToolRefusal("edit_file: old_text must not be empty");
        const count = text.split(oldText).length - 1;
        if (count !== 1)
          throw new ToolRefusal(
            `edit_file refused: old_text occurs ${count} times in ${path} (it must occur exactly once); read the file first`,
          );
        writeFileAtomic(
          abs,
          text.replace(oldText, () => newText),
        );
        opts.onWrite?.(abs);
        return `edited ${path}`;
      },
    },
    {
      def: {
        name: "list_files",
        description: "List the files of the folder (recursively, at most 200).",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
      },
      async execute() {
        const out: string[] = [];
        const walk = (dir: string) => {
          for (const e of readdirSync(dir, { withFileTypes: true })) {
            if (out.length >= 200) return;
            const abs = join(dir, e.name);
            if (e.isDirectory()) walk(abs);
            else out.push(relative(root, abs));
          }
        };
        walk(root);
        return out.length > 0 ? out.sort().join("\n") : "(empty)";
      },
    },
  ];
}

/** POSTs to the bridge and returns its `{success, result, error}` reply as the tool's result. */
async function bridgePost(
  bridge: BridgeProvider,
  route: string,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  const { url, token } = await bridge();
  const res = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
    signal: AbortSignal.any([signal, AbortSignal.timeout(BRIDGE_CALL_TIMEOUT_MS)]),
  });
  const reply = (await res.json()) as { success?: boolean; result?: unknown; error?: unknown };
  if (!reply.success) throw new ToolRefusal(`bridge: ${JSON.stringify(reply.error ?? res.status)}`);
  return reply.result;
}

/**
 * get_api_spec and call_tool through the run's bridge, limited to `allowed` tools (unset: all).
 * @param opts.callTool default true; false leaves call_tool out (a learned script's author: the
 *   script makes the calls, the agent reads the contract).
 */
export function bridgeTools(
  bridge: BridgeProvider,
  allowed?: readonly string[],
  opts: { callTool?: boolean } = {},
): LoopTool[] {
  const tools: LoopTool[] = [
    {
      def: {
        name: "get_api_spec",
        description:
          "The HTTP contract of tools of the bridge: route, description and parameters. tool_name: a name (mcp:server/tool, server/*, custom_tool) or a list.",
        inputSchema: {
          type: "object",
          properties: {
            tool_name: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
          },
          required: ["tool_name"],
        },
      },
      async execute(raw, { signal }) {
        const a = obj(raw, "get_api_spec");
        return bridgePost(bridge, "/tools/virtual/get_api_spec", { tool_name: a["tool_name"] }, signal);
      },
    },
    {
      def: {
        name: "call_tool",
        description:
          "Call a tool through the bridge: name (mcp:server/tool or custom:tool) and arguments (an object).",
        inputSchema: {
          type: "object",
          properties: { name: { type: "string" }, arguments: { type: "object" } },
          required: ["name"],
        },
      },
      async execute(raw, { signal }) {
        const a = obj(raw, "call_tool");
        const ref = parseToolName(str(a, "name", "call_tool") as string);
        if (!isAllowed(allowed, ref))
          throw new ToolRefusal(`call_tool refused: the step's allowed_tools do not include ${a["name"]}`);
        return bridgePost(bridge, toolRoute(ref), a["arguments"] ?? {}, signal);
      },
    },
  ];
  return opts.callTool === false ? tools.filter((t) => t.def.name !== "call_tool") : tools;
}

/** append_skill_note: adds a dated line to the shared notes (learnings_access read-write only). */
export function skillNoteTool(notesFile: string, stepId: string, now: () => Date): LoopTool {
  return {
    def: {
      name: "append_skill_note",
      description: "Add one reusable lesson to the workflow's shared skill notes.",
      inputSchema: {
        type: "object",
        properties: { note: { type: "string" } },
        required: ["note"],
        additionalProperties: false,
      },
    },
    async execute(raw) {
      const note = (str(obj(raw, "append_skill_note"), "note", "append_skill_note") as string).trim();
      if (note === "" || note.length > SKILL_NOTE_MAX_CHARS)
        throw new ToolRefusal(
          `append_skill_note: the note must have 1 to ${SKILL_NOTE_MAX_CHARS} characters`,
        );
      mkdirSync(dirname(notesFile), { recursive: true });
      appendFileSync(notesFile, `- ${now().toISOString()} (${stepId}): ${note.replace(/\n/g, " ")}\n`);
      return "noted";
    },
  };
}
