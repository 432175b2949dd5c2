/**
 * The bridge's part of the workspace config file (`.ratchet/config.json`): `mcpServers` in the
 * shape MCP clients already use, and `customTools`. Other top-level keys belong to other modules
 * and are left alone. Parsed once into a {@link CompiledBridgeConfig}; every error names the field.
 */
import { isAbsolute, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { JsonSchema } from "./json-schema.js";
import { MAX_TOOL_TIMEOUT_MS } from "./limits.js";

/** A stdio MCP server: a command Ratchet starts and talks to over stdin/stdout. */
export interface StdioServerInput {
  command: string;
  args?: string[];
  /** Added to a minimal environment (PATH, HOME, LANG…): nothing else is inherited. */
  env?: Record<string, string>;
  /** Working directory; relative paths resolve against the config's base folder. */
  cwd?: string;
}

/** A remote MCP server reached over Streamable HTTP. */
export interface HttpServerInput {
  url: string;
  headers?: Record<string, string>;
}

/** A custom tool: a command that reads JSON arguments on stdin and writes a JSON result on stdout. */
export interface CustomToolInput {
  command: string;
  args?: string[];
  description?: string;
  input_schema?: JsonSchema;
  timeout_ms?: number;
  cwd?: string;
  env?: Record<string, string>;
}

/**
 * The bridge config as written in the file (loose: every field optional). `baseDir` is the folder
 * relative `cwd`s resolve against (default: the process's cwd).
 */
export interface BridgeConfig {
  mcpServers?: Record<string, StdioServerInput | HttpServerInput | Record<string, unknown>>;
  customTools?: Record<string, CustomToolInput>;
  baseDir?: string;
  /** Where the config came from (named in errors). */
  source?: string;
}

export interface CompiledStdioServer {
  kind: "stdio";
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface CompiledHttpServer {
  kind: "http";
  name: string;
  url: URL;
  headers: Record<string, string>;
}

export type CompiledServer = CompiledStdioServer | CompiledHttpServer;

export interface CompiledCustomTool {
  name: string;
  command: string;
  args: string[];
  description: string;
  inputSchema: JsonSchema;
  /** Undefined: the bridge's call timeout applies. */
  timeoutMs: number | undefined;
  cwd: string;
  env: Record<string, string>;
}

/** The bridge config with every default applied and every field checked. */
export interface CompiledBridgeConfig {
  servers: Map<string, CompiledServer>;
  customTools: Map<string, CompiledCustomTool>;
  baseDir: string;
  source: string;
}

/** Keys other MCP clients write into `mcpServers` entries; accepted and ignored (except `disabled`). */
const FOREIGN_SERVER_KEYS = new Set([
  "type",
  "transport",
  "disabled",
  "autoApprove",
  "alwaysAllow",
  "timeout",
  "description",
]);

/** Server and tool names appear in URL paths: keep them to one safe path segment. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

export function bad(source: string, field: string, message: string): RatchetError {
  return new RatchetError(ErrorCode.SchemaViolation, `${source}: field \`${field}\` ${message}`, { field });
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The default empty schema of a tool that declares none: an object with any arguments. */
export const ANY_ARGUMENTS_SCHEMA: JsonSchema = Object.freeze({ type: "object" }) as JsonSchema;

class Reader {
  constructor(
    readonly source: string,
    readonly baseDir: string,
  ) {}

  object(
    v: unknown,
    field: string,
    allowed: readonly string[],
    tolerated?: Set<string>,
  ): Record<string, unknown> {
    if (!isObject(v)) throw bad(this.source, field, "must be an object");
    for (const k of Object.keys(v)) {
      if (!allowed.includes(k) && !tolerated?.has(k))
        throw bad(this.source, `${field}.${k}`, `is not a known field (known: ${allowed.join(", ")})`);
    }
    return v;
  }

  string(v: unknown, field: string): string {
    if (typeof v !== "string" || v === "") throw bad(this.source, field, "must be a non-empty string");
    return v;
  }

  strings(v: unknown, field: string): string[] {
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === "string"))
      throw bad(this.source, field, "must be an array of strings");
    return v as string[];
  }

  stringMap(v: unknown, field: string): Record<string, string> {
    if (v === undefined) return {};
    if (!isObject(v)) throw bad(this.source, field, "must be an object of strings");
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== "string") throw bad(this.source, `${field}.${k}`, "must be a string");
    }
    return v as Record<string, string>;
  }

  dir(v: unknown, field: string): string {
    if (v === undefined) return this.baseDir;
    const d = this.string(v, field);
    return isAbsolute(d) ? d : resolve(this.baseDir, d);
  }

  name(name: string, field: string): string {
    if (!NAME_PATTERN.test(name))
      throw bad(this.source, field, "must be 1-128 characters of letters, digits, '_', '.', '-'");
    return name;
  }
}

function compileServer(r: Reader, name: string, v: unknown): CompiledServer | undefined {
  const field = `mcpServers.${r.name(name, `mcpServers.${name}`)}`;
  const e = r.object(v, field, ["command", "args", "env", "cwd", "url", "headers"], FOREIGN_SERVER_KEYS);
  if (e["disabled"] === true) return undefined;
  if (e["url"] !== undefined) {
    if (e["command"] !== undefined) throw bad(r.source, field, "has both `url` and `command`: choose one");
    const text = r.string(e["url"], `${field}.url`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw bad(r.source, `${field}.url`, `is not a URL: ${JSON.stringify(text)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw bad(r.source, `${field}.url`, "must be an http:// or https:// URL");
    return { kind: "http", name, url, headers: r.stringMap(e["headers"], `${field}.headers`) };
  }
  if (e["command"] === undefined) throw bad(r.source, field, "needs `command` (stdio) or `url` (HTTP)");
  return {
    kind: "stdio",
    name,
    command: r.string(e["command"], `${field}.command`),
    args: r.strings(e["args"], `${field}.args`),
    env: r.stringMap(e["env"], `${field}.env`),
    cwd: r.dir(e["cwd"], `${field}.cwd`),
  };
}

function compileCustomTool(r: Reader, name: string, v: unknown): CompiledCustomTool {
  const field = `customTools.${r.name(name, `customTools.${name}`)}`;
  const e = r.object(v, field, [
    "command",
    "args",
    "description",
    "input_schema",
    "timeout_ms",
    "cwd",
    "env",
  ]);
  const schema = e["input_schema"] ?? ANY_ARGUMENTS_SCHEMA;
  if (!isObject(schema)) throw bad(r.source, `${field}.input_schema`, "must be a JSON Schema object");
  const t = e["timeout_ms"];
  if (t !== undefined && (typeof t !== "number" || !Number.isInteger(t) || t <= 0 || t > MAX_TOOL_TIMEOUT_MS))
    throw bad(r.source, `${field}.timeout_ms`, `must be a positive integer ≤ ${MAX_TOOL_TIMEOUT_MS}`);
  const description = e["description"] ?? "";
  if (typeof description !== "string") throw bad(r.source, `${field}.description`, "must be a string");
  return {
    name,
    command: r.string(e["command"], `${field}.command`),
    args: r.strings(e["args"], `${field}.args`),
    description,
    inputSchema: schema,
    timeoutMs: t as number | undefined,
    cwd: r.dir(e["cwd"], `${field}.cwd`),
    env: r.stringMap(e["env"], `${field}.env`),
  };
}

/**
 * Checks a bridge config and applies defaults.
 *
 * @throws RatchetError `schema_violation` naming the field.
 */
export function compileBridgeConfig(config: BridgeConfig | Record<string, unknown>): CompiledBridgeConfig {
  const c = config as Record<string, unknown>;
  const source = typeof c["source"] === "string" ? c["source"] : "bridge config";
  const baseDir = resolve(typeof c["baseDir"] === "string" ? c["baseDir"] : process.cwd());
  const r = new Reader(source, baseDir);
  const servers = new Map<string, CompiledServer>();
  const customTools = new Map<string, CompiledCustomTool>();
  const mcp = c["mcpServers"] ?? {};
  if (!isObject(mcp)) throw bad(source, "mcpServers", "must be an object of servers");
  for (const [name, v] of Object.entries(mcp)) {
    const s = compileServer(r, name, v);
    if (s) servers.set(name, s);
  }
  const custom = c["customTools"] ?? {};
  if (!isObject(custom)) throw bad(source, "customTools", "must be an object of tools");
  for (const [name, v] of Object.entries(custom)) customTools.set(name, compileCustomTool(r, name, v));
  return { servers, customTools, baseDir, source };
}
