/** Turning an MCP `tools/call` result into the bridge's `result` (pure). */
import { BridgeError, BridgeErrorKind } from "./errors.js";

/** The parts of an MCP CallToolResult the bridge reads. */
export interface McpCallResult {
  content?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

interface TextItem {
  type: "text";
  text: string;
}

const isText = (item: unknown): item is TextItem =>
  typeof item === "object" &&
  item !== null &&
  (item as { type?: unknown }).type === "text" &&
  typeof (item as { text?: unknown }).text === "string";

/** Parses `text` as JSON when it is JSON; otherwise returns it unchanged. */
export function parseIfJson(text: string): unknown {
  const t = text.trim();
  if (t === "") return text;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return text;
  }
}

/** The text items of a result joined with newlines. */
export function resultText(result: McpCallResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  return content
    .filter(isText)
    .map((c) => c.text)
    .join("\n");
}

/**
 * The bridge's `result` for an MCP tool result: no content → `null`; only text items → their text
 * joined with newlines, JSON-parsed when it is JSON; any other item (image, resource…) → the
 * `content` array as the server sent it.
 *
 * @throws BridgeError `tool_failed` with the text when the result has `isError: true`.
 */
export function interpretCallResult(toolName: string, result: McpCallResult): unknown {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = resultText(result).trim();
    throw new BridgeError(
      BridgeErrorKind.ToolFailed,
      `MCP tool ${toolName} reported an error: ${text || "(no text)"}`,
    );
  }
  if (content.length === 0) return null;
  if (content.every(isText)) return parseIfJson(resultText(result));
  return content;
}
