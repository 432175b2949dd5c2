/**
 * `server/`: `ratchet serve` — REST reads and writes over the same services as the CLI, live
 * events (SSE), an MCP endpoint, the OpenAPI document and the dashboard. See docs/server.md.
 */
export type { RouteGroup, RouteKit, ServerApp, ServerAppOptions, ServerEnv } from "./app.js";
export { BUILTIN_ROUTES, createServerApp } from "./app.js";
export type { ServerConfig } from "./config.js";
export { compileServerConfig, loadServerConfig } from "./config.js";
export type { ServerContext, ServerContextOptions } from "./context.js";
export { openServerContext } from "./context.js";
export type { EventFilter, Subscriber } from "./event-hub.js";
export { EventHub, type HubWakeSource } from "./event-hub.js";
export {
  EVENTS_CHANNEL,
  type EventWake,
  type EventWakeOptions,
  PgEventListener,
  startEventWake,
} from "./event-wake.js";
export { ServerErrorCode, statusOf } from "./http.js";
export { DEFAULT_HOST, DEFAULT_PORT } from "./limits.js";
export type { McpServerOptions } from "./mcp-server.js";
export { createMcpServer } from "./mcp-server.js";
export { strictStdin } from "./mcp-stdio.js";
export { argumentRefusals, toolNameOf } from "./mcp-tools.js";
export { openApiDocument } from "./openapi.js";
export { ServerQueries } from "./queries.js";
export type { RunningServer, StartServerOptions } from "./server.js";
export { generateServerToken, startServer } from "./server.js";
