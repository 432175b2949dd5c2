/**
 * `/mcp`: the MCP server over streamable HTTP, stateless (a fresh server and transport per
 * request, JSON replies), behind the bearer token.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { RouteGroup } from "../app.js";
import { createMcpServer } from "../mcp-tools.js";

export const mcpRoutes: RouteGroup = (app, { ctx, auth, readOnly }) => {
  app.all("/mcp", auth, async (c) => {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const server = createMcpServer(ctx, { readOnly });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw);
    } finally {
      await server.close();
    }
  });
};
