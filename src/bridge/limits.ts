/**
 * Named limits of the tool bridge. Every bound `bridge/` enforces is a constant here, documented in
 * docs/tools.md and changed on purpose.
 */

/** Largest request body (a tool's arguments as JSON) the bridge reads, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Default time limit of one tool call, in milliseconds (waiting for a slot included). */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/** Longest time limit a custom tool may declare with `timeout_ms` (one hour). */
export const MAX_TOOL_TIMEOUT_MS = 60 * 60 * 1000;

/** Time limit of starting an MCP server and its `initialize` handshake, in milliseconds. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;

/** Time limit of listing an MCP server's tools (all pages), in milliseconds. */
export const MCP_LIST_TOOLS_TIMEOUT_MS = 30_000;

/** Most calls in flight to one MCP server at a time; further calls wait for a slot. */
export const MAX_CONCURRENT_CALLS_PER_SERVER = 8;

/** Characters of an MCP server's or custom tool's stderr kept for error texts (the tail). */
export const STDERR_TAIL_CHARS = 2000;

/** Bytes of a custom tool's stdout and stderr captured (each); beyond it the output is cut. */
export const MAX_CUSTOM_TOOL_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Characters of a result shown in a bridge log line (redacted, then cut). */
export const LOG_RESULT_PREVIEW_CHARS = 200;

/** Deepest nesting shown for a parameter's type in the API spec text. */
export const SPEC_MAX_DEPTH = 4;

/** Bytes of the random per-run bearer token (hex-encoded: twice as many characters). */
export const TOKEN_BYTES = 32;
