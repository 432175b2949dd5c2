/**
 * The tools one bridge serves: its MCP servers (one {@link McpServerClient} each) and its custom
 * tools (commands from the config and built-ins), behind one lookup by {@link ToolRef}.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import { type BridgeConfig, type CompiledBridgeConfig, compileBridgeConfig, NAME_PATTERN } from "./config.js";
import { BUILTIN_TOOLS, builtinTool, type CustomToolSink, commandTool } from "./custom-tools.js";
import { BridgeError, BridgeErrorKind } from "./errors.js";
import type { JsonSchema } from "./json-schema.js";
import { McpServerClient } from "./mcp-client.js";
import { qualifiedName, type ToolRef } from "./names.js";
import type { CallContext, CustomTool, ToolDescription } from "./tools.js";

/** Options of {@link createToolRegistry}; every field is optional. */
export interface RegistryOptions {
  /** Calls in flight per MCP server. Default `MAX_CONCURRENT_CALLS_PER_SERVER` (8). */
  maxConcurrentPerServer?: number;
  /** Limit of starting an MCP server and its handshake. Default `MCP_CONNECT_TIMEOUT_MS`. */
  connectTimeoutMs?: number;
  /** Base environment of servers and command tools, and of `${NAME}` expansion. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Runs command tools. Default `realProcessRunner`. */
  runner?: ProcessRunner;
  /** Diagnostic lines (the caller redacts). */
  log?: (line: string) => void;
  /** Register the built-in tools (`echo`). Default true. */
  builtins?: boolean;
}

/** An MCP server that could not be listed, in {@link ToolRegistry.list}. */
export interface ServerFailure {
  server: string;
  error: string;
}

function describeMcpTool(server: string, tool: Tool): ToolDescription {
  const ref: ToolRef = { kind: "mcp", server, tool: tool.name };
  return {
    ref,
    name: qualifiedName(ref),
    description: tool.description ?? tool.title ?? "",
    inputSchema: (tool.inputSchema ?? { type: "object" }) as JsonSchema,
  };
}

function describeCustom(tool: CustomTool): ToolDescription {
  const ref: ToolRef = { kind: "custom", tool: tool.name };
  return { ref, name: qualifiedName(ref), description: tool.description, inputSchema: tool.inputSchema };
}

const listed = (names: Iterable<string>) => [...names].sort().join(", ") || "none";

export class ToolRegistry implements CustomToolSink {
  readonly servers = new Map<string, McpServerClient>();
  readonly custom = new Map<string, CustomTool>();
  readonly config: CompiledBridgeConfig;

  constructor(config: CompiledBridgeConfig, opts: RegistryOptions = {}) {
    this.config = config;
    for (const s of config.servers.values()) {
      this.servers.set(
        s.name,
        new McpServerClient(s, {
          ...(opts.maxConcurrentPerServer !== undefined
            ? { maxConcurrent: opts.maxConcurrentPerServer }
            : {}),
          ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
          ...(opts.env ? { env: opts.env } : {}),
          ...(opts.log ? { log: opts.log } : {}),
        }),
      );
    }
    if (opts.builtins !== false) for (const spec of BUILTIN_TOOLS) this.registerCustom(builtinTool(spec));
    for (const c of config.customTools.values()) {
      this.registerCustom(
        commandTool(c, {
          ...(opts.runner ? { runner: opts.runner } : {}),
          ...(opts.env ? { baseEnv: opts.env } : {}),
        }),
      );
    }
  }

  /**
   * Adds a custom tool.
   * @throws RatchetError `invalid_value` when the name is malformed or already taken.
   */
  registerCustom(tool: CustomTool): void {
    if (!NAME_PATTERN.test(tool.name))
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `custom tool name ${JSON.stringify(tool.name)} is malformed`,
        {
          field: "name",
        },
      );
    const existing = this.custom.get(tool.name);
    if (existing) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `custom tool ${tool.name} is already registered (${existing.origin === "builtin" ? "a built-in tool" : "from the config"})`,
        { field: `customTools.${tool.name}` },
      );
    }
    this.custom.set(tool.name, tool);
  }

  /** The MCP server client of `name`. @throws BridgeError `not_found` naming the server. */
  server(name: string): McpServerClient {
    const s = this.servers.get(name);
    if (!s)
      throw new BridgeError(
        BridgeErrorKind.NotFound,
        `unknown MCP server ${JSON.stringify(name)} (configured: ${listed(this.servers.keys())})`,
      );
    return s;
  }

  /** The custom tool `name`. @throws BridgeError `not_found` naming the tool. */
  customTool(name: string): CustomTool {
    const t = this.custom.get(name);
    if (!t)
      throw new BridgeError(
        BridgeErrorKind.NotFound,
        `unknown custom tool ${JSON.stringify(name)} (custom tools: ${listed(this.custom.keys())})`,
      );
    return t;
  }

  /**
   * What the bridge knows about one tool (connecting to its MCP server when needed).
   * @throws BridgeError `not_found` naming the server or tool; `unavailable` when the server cannot be reached.
   */
  async describe(ref: ToolRef, signal?: AbortSignal): Promise<ToolDescription> {
    if (ref.kind === "custom") return describeCustom(this.customTool(ref.tool));
    const server = this.server(ref.server);
    const tool = await server.findTool(ref.tool, signal);
    if (!tool) {
      const names = (await server.listTools(signal)).map((t) => t.name);
      throw new BridgeError(
        BridgeErrorKind.NotFound,
        `MCP server ${ref.server} has no tool ${JSON.stringify(ref.tool)} (tools: ${listed(names)})`,
      );
    }
    return describeMcpTool(ref.server, tool);
  }

  /** Every tool of one MCP server. */
  async serverTools(name: string, signal?: AbortSignal): Promise<ToolDescription[]> {
    return (await this.server(name).listTools(signal)).map((t) => describeMcpTool(name, t));
  }

  /** Every custom tool. */
  customTools(): ToolDescription[] {
    return [...this.custom.values()].map(describeCustom);
  }

  /**
   * Every tool: custom tools, then each MCP server's tools (servers are started to list them). A
   * server that cannot be listed is reported in `errors`, not thrown.
   */
  async list(signal?: AbortSignal): Promise<{ tools: ToolDescription[]; errors: ServerFailure[] }> {
    const tools = this.customTools();
    const errors: ServerFailure[] = [];
    const perServer = await Promise.all(
      [...this.servers.keys()].map(async (name) => {
        try {
          return await this.serverTools(name, signal);
        } catch (err) {
          errors.push({ server: name, error: err instanceof Error ? err.message : String(err) });
          return [];
        }
      }),
    );
    for (const list of perServer) tools.push(...list);
    return { tools, errors };
  }

  /** Calls a tool whose arguments were already checked. */
  call(ref: ToolRef, args: Record<string, unknown>, ctx: CallContext): Promise<unknown> {
    if (ref.kind === "custom") return this.customTool(ref.tool).call(args, ctx);
    return this.server(ref.server).call(ref.tool, args, ctx);
  }

  /** Closes every MCP connection (stops stdio servers). */
  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
  }
}

/**
 * Builds the registry of a bridge: compiles the config (throws `schema_violation` naming the
 * field) and registers its servers, its command tools and the built-ins.
 */
export function createToolRegistry(
  config: BridgeConfig | CompiledBridgeConfig,
  opts: RegistryOptions = {},
): ToolRegistry {
  const compiled =
    "servers" in config && config.servers instanceof Map
      ? config
      : compileBridgeConfig(config as BridgeConfig);
  return new ToolRegistry(compiled as CompiledBridgeConfig, opts);
}
