/**
 * The MCP server of Ratchet: the tools of mcp-tools.ts, the resources of mcp-resources.ts (plans,
 * runs, threads, learned scripts) and the prompts of mcp-prompts.ts, on one low-level SDK `Server`.
 * Served over streamable HTTP at `/mcp` (routes/mcp.ts) and over stdio by `ratchet mcp`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { assertNoForbiddenKeys, ErrorCode, type RatchetError, toRatchetError } from "../core/index.js";
import type { ServerContext } from "./context.js";
import { getPrompt, PROMPTS } from "./mcp-prompts.js";
import { listResources, RESOURCE_TEMPLATES, readResource } from "./mcp-resources.js";
import { toolDefs } from "./mcp-tools.js";

const VERSION = "0.1.0";

function reply(value: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value, isError };
}

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** Refuse every write tool. Default false. */
  readOnly?: boolean;
  /**
   * Refusals found on the raw JSON of the request (by JSON-RPC id) before the SDK parsed it: a
   * `tools/call` with one of these ids answers with the error instead of running.
   */
  refusals?: ReadonlyMap<string | number, RatchetError> | (() => ReadonlyMap<string | number, RatchetError>);
}

function errorReply(err: RatchetError, marker?: unknown): CallToolResult {
  return reply(
    {
      ok: false,
      error: {
        code: err.code,
        message: err.message,
        ...(err.details.field ? { field: err.details.field } : {}),
      },
      ...(marker ? { marker } : {}),
    },
    true,
  );
}

/** What a `tools/call` names: the tool and its arguments (absent: none). */
export interface ToolCallParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
}

/**
 * The `tools/call` handler of {@link createMcpServer}: refusals found on the raw JSON (by request
 * id), the tool looked up by name, read-only, forbidden argument keys, then the tool. Never throws:
 * every failure is a tool error (`isError`) naming its code and field. `/mcp` calls the same
 * function without the SDK's transport for a plain `tools/call` (routes/mcp.ts).
 */
export function toolCallHandler(
  ctx: ServerContext | (() => ServerContext),
  opts: McpServerOptions = {},
): (params: ToolCallParams, requestId: string | number) => Promise<CallToolResult> {
  const ctxOf = typeof ctx === "function" ? ctx : () => ctx;
  const byName = new Map(toolDefs().map((d) => [d.name, d]));
  return async (params, requestId) => {
    const refusals = typeof opts.refusals === "function" ? opts.refusals() : opts.refusals;
    const refused = refusals?.get(requestId);
    if (refused) return errorReply(refused);
    const def = byName.get(params.name);
    if (!def)
      return reply(
        { ok: false, error: { code: ErrorCode.NotFound, message: `no tool ${params.name}` } },
        true,
      );
    if (def.write && opts.readOnly)
      return reply(
        {
          ok: false,
          error: { code: "read_only", message: "the server runs with --read-only: writes are refused" },
        },
        true,
      );
    try {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      assertNoForbiddenKeys(args);
      return reply(await def.call(args, ctxOf()));
    } catch (e) {
      return errorReply(toRatchetError(e), (e as { marker?: unknown }).marker);
    }
  };
}

/** A new MCP server over `ctx` (one per HTTP request in stateless mode; one for stdio). */
export function createMcpServer(
  ctx: ServerContext | (() => ServerContext),
  opts: McpServerOptions = {},
): Server {
  const server = new Server(
    { name: "ratchet", version: VERSION },
    { capabilities: { tools: {}, resources: {}, prompts: {} } },
  );
  const ctxOf = typeof ctx === "function" ? ctx : () => ctx;
  const defs = toolDefs();
  const callTool = toolCallHandler(ctx, opts);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: defs.map((d) => ({
      name: d.name,
      description: d.description,
      inputSchema: d.inputSchema as { type: "object" },
      annotations: { readOnlyHint: !d.write },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) =>
    callTool(req.params, extra.requestId),
  );
  server.setRequestHandler(ListResourcesRequestSchema, async (req) =>
    listResources(ctxOf(), req.params?.cursor),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [...RESOURCE_TEMPLATES],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => readResource(ctxOf(), req.params.uri));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [...PROMPTS] }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) =>
    getPrompt(req.params.name, req.params.arguments ?? {}),
  );
  return server;
}
