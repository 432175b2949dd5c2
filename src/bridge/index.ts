/**
 * `bridge/`: the tool bridge. Scripts, threads and the runner's model reach MCP servers and custom
 * tools through one authenticated HTTP server per run ({@link startBridge}), and learn their
 * contracts from `get_api_spec`. See ARCHITECTURE.md and docs/tools.md.
 */

export type { ApiSpecOptions } from "./api-spec.js";
export {
  apiSpec,
  formatApiSpec,
  formatParameters,
  formatToolSpec,
  formatType,
  parseSpecNames,
  SPEC_AUTH_LINE,
  SPEC_REPLY_LINE,
} from "./api-spec.js";
export type { BridgeAppEnv, BridgeAppOptions, BridgeReply } from "./app.js";
export { createBridgeApp, tokensMatch, VIRTUAL_TOOLS } from "./app.js";
export type {
  BridgeConfig,
  CompiledBridgeConfig,
  CompiledCustomTool,
  CompiledHttpServer,
  CompiledServer,
  CompiledStdioServer,
  CustomToolInput,
  HttpServerInput,
  StdioServerInput,
} from "./config.js";
export { compileBridgeConfig } from "./config.js";
export { configBaseDir, loadBridgeConfig, loadWorkspaceBridgeConfig } from "./config-file.js";
export type { BuiltinToolSpec, CommandToolOptions, CustomToolSink } from "./custom-tools.js";
export { BUILTIN_TOOLS, commandTool, ECHO_TOOL, registerBuiltinTool } from "./custom-tools.js";
export {
  BridgeError,
  BridgeErrorKind,
  errorCodeForKind,
  statusForKind,
  toBridgeError,
} from "./errors.js";
export { helperFiles, JAVASCRIPT_HELPER_FILE, PYTHON_HELPER_FILE } from "./helper-files.js";
export type { InvokeOptions } from "./invoke.js";
export { invokeTool } from "./invoke.js";
export type { JsonSchema, SchemaProblem } from "./json-schema.js";
export { checkSchema, describeProblem } from "./json-schema.js";
export {
  DEFAULT_CALL_TIMEOUT_MS,
  MAX_BODY_BYTES,
  MAX_CONCURRENT_CALLS_PER_SERVER,
  MAX_CUSTOM_TOOL_OUTPUT_BYTES,
  MAX_TOOL_TIMEOUT_MS,
  MCP_CONNECT_TIMEOUT_MS,
  MCP_LIST_TOOLS_TIMEOUT_MS,
  TOKEN_BYTES,
} from "./limits.js";
export type { McpServerClientOptions } from "./mcp-client.js";
export { McpServerClient } from "./mcp-client.js";
export type { ToolRef } from "./names.js";
export { isAllowed, parseToolName, qualifiedName, toolRoute } from "./names.js";
export type { RegistryOptions, ServerFailure } from "./registry.js";
export { createToolRegistry, ToolRegistry } from "./registry.js";
export type { Bridge, StartBridgeOptions } from "./server.js";
export { bridgeEnv, generateToken, startBridge } from "./server.js";
export type { CallContext, CustomTool, ToolDescription } from "./tools.js";
