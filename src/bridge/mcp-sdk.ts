/**
 * The MCP SDK's client side, loaded once on first use (`import()`: it costs a few hundred
 * milliseconds of start-up), and `${NAME}` expansion of server env / headers.
 */
import { BridgeError, BridgeErrorKind } from "./errors.js";

export type McpSdk = {
  Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
  StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
  StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
  McpError: typeof import("@modelcontextprotocol/sdk/types.js").McpError;
  ErrorCode: typeof import("@modelcontextprotocol/sdk/types.js").ErrorCode;
  ToolListChangedNotificationSchema: typeof import("@modelcontextprotocol/sdk/types.js").ToolListChangedNotificationSchema;
};

let sdkPromise: Promise<McpSdk> | undefined;

/** Loads the MCP SDK's client side once. */
export function loadMcpSdk(): Promise<McpSdk> {
  sdkPromise ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(([client, stdio, http, types]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    McpError: types.McpError,
    ErrorCode: types.ErrorCode,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  }));
  return sdkPromise;
}

/**
 * Replaces `${NAME}` with the value of NAME in `env`.
 * @throws BridgeError `unavailable` naming the variable and the field when it is not set.
 */
export function expandVariables(
  values: Record<string, string>,
  env: NodeJS.ProcessEnv,
  where: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) {
    out[k] = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const value = env[name];
      if (value === undefined)
        throw new BridgeError(
          BridgeErrorKind.Unavailable,
          `${where}.${k} names \${${name}}, which is not set`,
        );
      return value;
    });
  }
  return out;
}
