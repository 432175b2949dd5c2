/**
 * `get_api_spec`: the compact text contract of tools, for a model or a person writing a script.
 * The formatter is pure; {@link apiSpec} resolves names against a registry and the allowlist.
 */
import { BridgeError, BridgeErrorKind } from "./errors.js";
import type { JsonSchema } from "./json-schema.js";
import { SPEC_MAX_DEPTH } from "./limits.js";
import type { ToolRef } from "./names.js";
import { anyToolOfServerAllowed, assertAllowed, isAllowed, parseToolName, toolRoute } from "./names.js";
import type { ToolRegistry } from "./registry.js";
import type { ToolDescription } from "./tools.js";

/** The auth line of every spec: scripts read the token from their environment. */
export const SPEC_AUTH_LINE = "Authorization: Bearer $MCP_API_TOKEN";

/** The reply line of every spec. */
export const SPEC_REPLY_LINE =
  'Reply: JSON {"success": true|false, "result": <the tool\'s result>, "error": <text>|null}';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const bad = (message: string) => new BridgeError(BridgeErrorKind.BadRequest, message);

/**
 * The tool names of a `get_api_spec` body `{"tool_name": …}`: one name, a list of names, a
 * JSON-encoded list (`"[\"a\",\"b\"]"`) or a comma-separated string.
 *
 * @throws BridgeError `bad_request` naming `tool_name`.
 */
export function parseSpecNames(body: unknown): string[] {
  if (!isObject(body)) throw bad('the body must be a JSON object {"tool_name": "<name>" | ["<name>", …]}');
  let v: unknown = body["tool_name"];
  if (v === undefined) throw bad("argument `tool_name` is required");
  if (typeof v === "string" && v.trim().startsWith("[")) {
    try {
      v = JSON.parse(v);
    } catch {
      throw bad("argument `tool_name` looks like a JSON list but is not valid JSON");
    }
  }
  let names: string[];
  if (typeof v === "string") names = v.split(",");
  else if (Array.isArray(v) && v.every((x) => typeof x === "string")) names = v as string[];
  else throw bad("argument `tool_name` must be a tool name or a list of tool names");
  names = names.map((n) => n.trim()).filter((n) => n !== "");
  if (names.length === 0) throw bad("argument `tool_name` names no tool");
  return [...new Set(names)];
}

function literal(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

/** The compact type of a schema: `string`, `integer`, `"a" | "b"`, `array<string>`, `{x: number, y?: string}`. */
export function formatType(schema: unknown, depth = 0): string {
  if (!isObject(schema)) return "any";
  if (Array.isArray(schema["enum"])) return schema["enum"].map(literal).join(" | ");
  if ("const" in schema) return literal(schema["const"]);
  for (const key of ["anyOf", "oneOf"] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0)
      return [...new Set(options.map((o) => formatType(o, depth)))].join(" | ");
  }
  const type = schema["type"];
  if (Array.isArray(type)) return type.map((t) => formatType({ ...schema, type: t }, depth)).join(" | ");
  const props = isObject(schema["properties"]) ? schema["properties"] : undefined;
  if (type === "array" || (type === undefined && schema["items"] !== undefined)) {
    const items = schema["items"];
    if (!isObject(items) || depth >= SPEC_MAX_DEPTH) return "array";
    return `array<${formatType(items, depth + 1)}>`;
  }
  if (type === "object" || (type === undefined && props)) {
    if (!props || Object.keys(props).length === 0 || depth >= SPEC_MAX_DEPTH) return "object";
    const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : []);
    const fields = Object.entries(props).map(
      ([k, s]) => `${k}${required.has(k) ? "" : "?"}: ${formatType(s, depth + 1)}`,
    );
    return `{${fields.join(", ")}}`;
  }
  return typeof type === "string" ? type : "any";
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** One `name: type (required)` line per top-level parameter (with its description and default). */
export function formatParameters(schema: JsonSchema): string[] {
  const props = isObject(schema["properties"]) ? schema["properties"] : {};
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : []);
  return Object.entries(props).map(([name, s]) => {
    const sub = isObject(s) ? s : {};
    let line = `${name}: ${formatType(s)}`;
    if (required.has(name)) line += " (required)";
    if ("default" in sub) line += ` (default ${literal(sub["default"])})`;
    if (typeof sub["description"] === "string" && sub["description"].trim())
      line += ` - ${oneLine(sub["description"])}`;
    return line;
  });
}

/** True when a schema lists no properties at all and does not forbid extra ones: any object goes. */
function acceptsAnyArguments(schema: JsonSchema): boolean {
  return !("properties" in schema) && schema["additionalProperties"] !== false;
}

/** The spec block of one tool: its route, its description, its parameters. */
export function formatToolSpec(baseUrl: string, tool: ToolDescription): string {
  const params = formatParameters(tool.inputSchema);
  return [
    `POST ${baseUrl}${toolRoute(tool.ref)}`,
    `Tool: ${tool.name}`,
    tool.description.trim() ? tool.description.trim() : "(no description)",
    params.length
      ? "Parameters:"
      : `Parameters: ${acceptsAnyArguments(tool.inputSchema) ? "any (a JSON object)" : "none"}`,
    ...params.map((p) => `  ${p}`),
  ].join("\n");
}

/**
 * The whole spec text: the base URL, the auth line and the reply shape, then one block per tool,
 * separated by blank lines.
 */
export function formatApiSpec(baseUrl: string, tools: readonly ToolDescription[]): string {
  const head = [`Base URL: ${baseUrl}`, `Auth: ${SPEC_AUTH_LINE}`, SPEC_REPLY_LINE].join("\n");
  return [head, ...tools.map((t) => formatToolSpec(baseUrl, t))].join("\n\n") + "\n";
}

/** Options of {@link apiSpec}. */
export interface ApiSpecOptions {
  /** What scripts put before `/tools/…`: the bridge URL, or `$MCP_API_URL` outside a run. */
  baseUrl: string;
  allowedTools?: readonly string[] | undefined;
  /** A narrower allowlist on top of `allowedTools` (the calling step's scoped token). */
  scope?: readonly string[] | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * The spec of the named tools. A name may be `server/*` (every tool of a server the run may use).
 * Every name is checked against the allowlist before anything is looked up.
 *
 * @throws BridgeError `bad_request` (malformed name), `forbidden`, `not_found`, `unavailable`.
 */
export async function apiSpec(
  registry: ToolRegistry,
  names: readonly string[],
  opts: ApiSpecOptions,
): Promise<string> {
  const wanted = names.map((n): { ref: ToolRef } | { server: string } => {
    const wildcard = /^(?:mcp:)?([^/:]+)\/\*$/.exec(n.trim());
    return wildcard ? { server: wildcard[1]! } : { ref: parseToolName(n) };
  });
  for (const w of wanted) {
    if ("ref" in w) {
      assertAllowed(opts.allowedTools, w.ref);
      assertAllowed(opts.scope, w.ref);
    } else if (
      !anyToolOfServerAllowed(opts.allowedTools, w.server) ||
      !anyToolOfServerAllowed(opts.scope, w.server)
    )
      throw new BridgeError(
        BridgeErrorKind.Forbidden,
        `no tool of MCP server ${w.server} is allowed in this run`,
      );
  }
  const tools: ToolDescription[] = [];
  const seen = new Set<string>();
  const add = (t: ToolDescription) => {
    if (!seen.has(t.name)) tools.push(t);
    seen.add(t.name);
  };
  for (const w of wanted) {
    if ("ref" in w) {
      add(await registry.describe(w.ref, opts.signal));
      continue;
    }
    const all = await registry.serverTools(w.server, opts.signal);
    const allowed = all.filter((t) => isAllowed(opts.allowedTools, t.ref) && isAllowed(opts.scope, t.ref));
    if (all.length > 0 && allowed.length === 0)
      throw new BridgeError(
        BridgeErrorKind.Forbidden,
        `no tool of MCP server ${w.server} is allowed in this run`,
      );
    for (const t of allowed) add(t);
  }
  return formatApiSpec(opts.baseUrl, tools);
}
