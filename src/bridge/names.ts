/**
 * Tool names and the per-run allowlist (pure). A tool is named `mcp:<server>/<tool>` or
 * `custom:<tool>`; callers may also write `<server>/<tool>` or a bare custom tool name.
 */
import { BridgeError, BridgeErrorKind } from "./errors.js";

/** Which tool: an MCP server's tool, or a custom (command or built-in) tool. */
export type ToolRef = { kind: "mcp"; server: string; tool: string } | { kind: "custom"; tool: string };

/** The canonical name: `mcp:server/tool` or `custom:tool`. */
export function qualifiedName(ref: ToolRef): string {
  return ref.kind === "mcp" ? `mcp:${ref.server}/${ref.tool}` : `custom:${ref.tool}`;
}

/** The route of a tool under the base URL: `/tools/mcp/server/tool` or `/tools/custom/tool`. */
export function toolRoute(ref: ToolRef): string {
  return ref.kind === "mcp"
    ? `/tools/mcp/${encodeURIComponent(ref.server)}/${encodeURIComponent(ref.tool)}`
    : `/tools/custom/${encodeURIComponent(ref.tool)}`;
}

/**
 * Reads a tool name: `mcp:server/tool`, `server/tool`, `custom:tool` or `tool` (custom).
 *
 * @throws BridgeError `bad_request` for an empty or malformed name.
 */
export function parseToolName(name: string): ToolRef {
  const n = name.trim();
  const bad = () =>
    new BridgeError(
      BridgeErrorKind.BadRequest,
      `malformed tool name ${JSON.stringify(name)}: use mcp:<server>/<tool>, <server>/<tool> or a custom tool name`,
    );
  if (n === "") throw bad();
  if (n.startsWith("custom:")) {
    const tool = n.slice("custom:".length);
    if (tool === "" || tool.includes("/")) throw bad();
    return { kind: "custom", tool };
  }
  const body = n.startsWith("mcp:") ? n.slice("mcp:".length) : n;
  const slash = body.indexOf("/");
  if (slash < 0) {
    if (n.startsWith("mcp:")) throw bad();
    return { kind: "custom", tool: body };
  }
  const server = body.slice(0, slash);
  const tool = body.slice(slash + 1);
  if (server === "" || tool === "" || tool.includes("/")) throw bad();
  return { kind: "mcp", server, tool };
}

/**
 * Normalises an allowlist entry: `server/tool` → `mcp:server/tool`, `tool` → `custom:tool`;
 * wildcards (`*`, `mcp:*`, `mcp:server/*`, `server/*`, `custom:*`) keep their trailing `*`.
 */
export function normalizePattern(pattern: string): string {
  const p = pattern.trim();
  if (p === "*" || p.startsWith("mcp:") || p.startsWith("custom:")) return p;
  return p.includes("/") ? `mcp:${p}` : `custom:${p}`;
}

/**
 * Whether a run whose allowlist is `allowed` may use the tool. `undefined` allows everything; an
 * entry ending in `*` allows every name it prefixes; other entries must match exactly.
 */
export function isAllowed(allowed: readonly string[] | undefined, ref: ToolRef): boolean {
  if (allowed === undefined) return true;
  const name = qualifiedName(ref);
  return allowed.some((entry) => {
    const p = normalizePattern(entry);
    return p.endsWith("*") ? name.startsWith(p.slice(0, -1)) : name === p;
  });
}

/** @throws BridgeError `forbidden` naming the tool when the run may not use it. */
export function assertAllowed(allowed: readonly string[] | undefined, ref: ToolRef): void {
  if (!isAllowed(allowed, ref))
    throw new BridgeError(BridgeErrorKind.Forbidden, `tool ${qualifiedName(ref)} is not allowed in this run`);
}

/** Whether the allowlist could allow some tool of MCP server `server` (checked before connecting). */
export function anyToolOfServerAllowed(allowed: readonly string[] | undefined, server: string): boolean {
  if (allowed === undefined) return true;
  const prefix = `mcp:${server}/`;
  return allowed.some((entry) => {
    const p = normalizePattern(entry);
    if (p.endsWith("*")) {
      const head = p.slice(0, -1);
      return prefix.startsWith(head) || head.startsWith(prefix);
    }
    return p.startsWith(prefix);
  });
}
