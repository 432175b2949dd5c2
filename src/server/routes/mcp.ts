/**
 * `/mcp`: the MCP server over streamable HTTP, stateless (a fresh server and transport per
 * request, JSON replies), behind the bearer token.
 *
 * The body is read here, strictly (UTF-8, JSON), and the arguments of every `tools/call` are checked
 * for `__proto__`/`constructor`/`prototype` keys on the raw JSON: the SDK's own parser silently
 * drops a `__proto__` key, so the tool would otherwise run without it instead of refusing.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { bodyLimit } from "hono/body-limit";
import { decodeUtf8Strict, type RatchetError } from "../../core/index.js";
import type { RouteGroup } from "../app.js";
import { replyCode, ServerErrorCode } from "../http.js";
import { MAX_BODY_BYTES } from "../limits.js";
import { argumentRefusals, createMcpServer } from "../mcp-tools.js";

// The body is read here, not by the transport, so its 4 MiB bound is applied here too.
const limit = bodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: (c) =>
    replyCode(c, ServerErrorCode.TooLarge, `the body is larger than ${MAX_BODY_BYTES} bytes`, "body"),
});

export const mcpRoutes: RouteGroup = (app, { ctx, auth, readOnly }) => {
  app.all("/mcp", auth, limit, async (c) => {
    let parsedBody: unknown;
    let refusals = new Map<string | number, RatchetError>();
    let request = c.req.raw;
    if (c.req.method === "POST") {
      const text = decodeUtf8Strict(new Uint8Array(await c.req.arrayBuffer()), "the request body", "body");
      try {
        parsedBody = JSON.parse(text) as unknown;
        refusals = argumentRefusals(parsedBody);
      } catch {
        // Not JSON: the transport answers with its JSON-RPC parse error.
        request = new Request(c.req.raw.url, { method: "POST", headers: c.req.raw.headers, body: text });
      }
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    const server = createMcpServer(ctx, { readOnly, refusals });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, parsedBody !== undefined ? { parsedBody } : undefined);
    } finally {
      await server.close();
    }
  });
};
