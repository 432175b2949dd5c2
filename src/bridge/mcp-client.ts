/**
 * One MCP server as the bridge sees it: started (or connected) lazily on first use, one SDK
 * `Client` shared by every call, a bounded number of calls in flight, the tool list cached per
 * connection, and a new connection on the next call after the server died. See ARCHITECTURE.md.
 *
 * The SDK is loaded on first connect (`import()`): it costs a few hundred milliseconds of start-up,
 * which a bridge whose scripts never call an MCP tool should not pay.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { buildEnv } from "../exec/index.js";
import type { CompiledServer } from "./config.js";
import { BridgeError, BridgeErrorKind } from "./errors.js";
import {
  MAX_CONCURRENT_CALLS_PER_SERVER,
  MCP_CONNECT_TIMEOUT_MS,
  MCP_LIST_TOOLS_TIMEOUT_MS,
  STDERR_TAIL_CHARS,
} from "./limits.js";
import { interpretCallResult } from "./mcp-result.js";
import { expandVariables, loadMcpSdk } from "./mcp-sdk.js";
import { Semaphore } from "./semaphore.js";
import { TextTail } from "./tail.js";
import { type CallContext, raceSignal, remainingMs } from "./tools.js";

/** The name and version the bridge announces to MCP servers. */
export const BRIDGE_CLIENT_INFO = Object.freeze({ name: "ratchet-bridge", version: "0.1.0" });

/** Options of {@link McpServerClient}; every field is optional. */
export interface McpServerClientOptions {
  /** Calls in flight at once. Default {@link MAX_CONCURRENT_CALLS_PER_SERVER}. */
  maxConcurrent?: number;
  /** Limit of starting the server and the handshake. Default {@link MCP_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
  /** Where `${NAME}` in `env` / `headers` and the minimal environment come from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Diagnostic lines (server stderr, connects, closes). The caller redacts. */
  log?: (line: string) => void;
}

interface Connection {
  client: Client;
  alive: boolean;
  stderr: TextTail;
  tools: Promise<Map<string, Tool>> | undefined;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** One configured MCP server and its (lazily made, shared, replaceable) connection. */
export class McpServerClient {
  readonly name: string;
  readonly #server: CompiledServer;
  readonly #slots: Semaphore;
  readonly #connectTimeoutMs: number;
  readonly #env: NodeJS.ProcessEnv;
  readonly #log: (line: string) => void;
  #current: Promise<Connection> | undefined;
  #live: Connection | undefined;
  #closed = false;
  #connects = 0;

  constructor(server: CompiledServer, opts: McpServerClientOptions = {}) {
    this.name = server.name;
    this.#server = server;
    this.#slots = new Semaphore(opts.maxConcurrent ?? MAX_CONCURRENT_CALLS_PER_SERVER);
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS;
    this.#env = opts.env ?? process.env;
    this.#log = opts.log ?? (() => {});
  }

  /** How many connections were made so far (a reconnect adds one). */
  get connectCount(): number {
    return this.#connects;
  }

  /** Calls holding a slot / waiting for one. */
  get load(): { inFlight: number; waiting: number } {
    return { inFlight: this.#slots.inUse, waiting: this.#slots.waiting };
  }

  /** The server's tools (cached per connection; refreshed when the server says the list changed). */
  async listTools(signal?: AbortSignal): Promise<Tool[]> {
    return [...(await this.#tools(signal)).values()];
  }

  /** One tool by name, or `undefined` when the server has no such tool. */
  async findTool(name: string, signal?: AbortSignal): Promise<Tool | undefined> {
    return (await this.#tools(signal)).get(name);
  }

  /**
   * Calls a tool and returns the bridge `result` (see `interpretCallResult`).
   *
   * @throws BridgeError `tool_failed` (isError, a JSON-RPC error), `bad_request` (the server
   *   rejected the arguments), `unavailable` (cannot start, crashed, connection lost), `timeout`;
   *   or the signal's reason when the caller's signal aborted first.
   */
  async call(tool: string, args: Record<string, unknown>, ctx: CallContext): Promise<unknown> {
    const release = await this.#slots.acquire(ctx.signal);
    let conn: Connection | undefined;
    try {
      conn = await raceSignal(this.#connection(), ctx.signal);
      const result = await conn.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: ctx.signal,
        timeout: remainingMs(ctx),
      });
      return interpretCallResult(`${this.name}/${tool}`, result);
    } catch (err) {
      throw await this.#failure(err, tool, conn, ctx);
    } finally {
      release();
    }
  }

  /** Closes the connection (stops a stdio server). Later calls fail with `unavailable`. */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = this.#current;
    this.#current = undefined;
    this.#live = undefined;
    const conn = await pending?.catch(() => undefined);
    if (conn) {
      conn.alive = false;
      await conn.client.close().catch(() => {});
    }
  }

  #connection(): Promise<Connection> {
    if (this.#closed)
      return Promise.reject(new BridgeError(BridgeErrorKind.Unavailable, "the tool bridge is closing"));
    if (this.#live && !this.#live.alive) {
      this.#current = undefined;
      this.#live = undefined;
    }
    if (!this.#current) {
      const p = this.#connect();
      this.#current = p;
      p.then(
        (conn) => {
          if (this.#current === p) this.#live = conn;
        },
        () => {
          if (this.#current === p) this.#current = undefined; // the next call tries again
        },
      );
    }
    return this.#current;
  }

  async #connect(): Promise<Connection> {
    const sdk = await loadMcpSdk();
    const s = this.#server;
    const stderr = new TextTail(STDERR_TAIL_CHARS);
    let transport: Transport;
    if (s.kind === "stdio") {
      const set = expandVariables(s.env, this.#env, `mcpServers.${s.name}.env`);
      const t = new sdk.StdioClientTransport({
        command: s.command,
        args: s.args,
        env: buildEnv({ inherit: "minimal", base: this.#env, set }),
        cwd: s.cwd,
        stderr: "pipe",
      });
      t.stderr?.on("data", (chunk: Buffer | string) => {
        const text = chunk.toString();
        stderr.push(text);
        for (const line of text.split("\n")) if (line.trim()) this.#log(`mcp ${s.name} stderr: ${line}`);
      });
      transport = t;
    } else {
      const headers = expandVariables(s.headers, this.#env, `mcpServers.${s.name}.headers`);
      transport = new sdk.StreamableHTTPClientTransport(s.url, { requestInit: { headers } });
    }
    const client = new sdk.Client({ ...BRIDGE_CLIENT_INFO }, { capabilities: {} });
    const conn: Connection = { client, alive: true, stderr, tools: undefined };
    client.onclose = () => {
      if (conn.alive) this.#log(`mcp ${s.name}: connection closed`);
      conn.alive = false;
    };
    client.onerror = (err) => this.#log(`mcp ${s.name}: ${messageOf(err)}`);
    this.#connects++;
    try {
      await client.connect(transport, { timeout: this.#connectTimeoutMs });
    } catch (err) {
      conn.alive = false;
      await client.close().catch(() => {});
      const what =
        s.kind === "stdio"
          ? `start MCP server ${s.name} (${s.command})`
          : `connect to MCP server ${s.name} (${s.url.href})`;
      throw new BridgeError(
        BridgeErrorKind.Unavailable,
        `cannot ${what}: ${messageOf(err)}${stderrNote(stderr)}`,
        {
          cause: err,
        },
      );
    }
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => {
      conn.tools = undefined;
    });
    this.#log(`mcp ${s.name}: connected`);
    return conn;
  }

  async #tools(signal: AbortSignal | undefined): Promise<Map<string, Tool>> {
    const conn = await raceSignal(this.#connection(), signal);
    if (!conn.tools) {
      const p = this.#fetchTools(conn);
      conn.tools = p;
      p.catch(() => {
        if (conn.tools === p) conn.tools = undefined;
      });
    }
    return raceSignal(conn.tools, signal);
  }

  async #fetchTools(conn: Connection): Promise<Map<string, Tool>> {
    const tools = new Map<string, Tool>();
    let cursor: string | undefined;
    try {
      do {
        const page = await conn.client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: MCP_LIST_TOOLS_TIMEOUT_MS,
        });
        for (const t of page.tools) tools.set(t.name, t);
        cursor = page.nextCursor;
      } while (cursor);
    } catch (err) {
      if (!conn.alive) this.#drop(conn);
      throw new BridgeError(
        BridgeErrorKind.Unavailable,
        `cannot list the tools of MCP server ${this.name}: ${messageOf(err)}${stderrNote(conn.stderr)}`,
        { cause: err },
      );
    }
    return tools;
  }

  /** Forgets a connection so the next call makes a new one. */
  #drop(conn: Connection): void {
    conn.alive = false;
    if (this.#live === conn) {
      this.#live = undefined;
      this.#current = undefined;
    }
    conn.client.close().catch(() => {});
  }

  async #failure(
    err: unknown,
    tool: string,
    conn: Connection | undefined,
    ctx: CallContext,
  ): Promise<unknown> {
    if (err instanceof BridgeError || ctx.signal.aborted) return err; // the caller maps deadline/cancel
    const { McpError, ErrorCode } = await loadMcpSdk();
    const name = `${this.name}/${tool}`;
    if (err instanceof McpError) {
      if (err.code === ErrorCode.RequestTimeout)
        return new BridgeError(
          BridgeErrorKind.Timeout,
          `MCP tool ${name} timed out after ${ctx.timeoutMs} ms`,
        );
      if (err.code === ErrorCode.ConnectionClosed || (conn && !conn.alive)) {
        // Give the pipe a moment to deliver the server's last stderr lines before quoting them.
        await new Promise((r) => setImmediate(r));
        return new BridgeError(
          BridgeErrorKind.Unavailable,
          `MCP server ${this.name} closed the connection during the call to ${tool} (the server exited or crashed)${conn ? stderrNote(conn.stderr) : ""}`,
          { cause: err },
        );
      }
      if (err.code === ErrorCode.InvalidParams)
        return new BridgeError(
          BridgeErrorKind.BadRequest,
          `MCP tool ${name} rejected its arguments: ${err.message}`,
        );
      return new BridgeError(BridgeErrorKind.ToolFailed, `MCP tool ${name} failed: ${err.message}`, {
        cause: err,
      });
    }
    if (err instanceof Error && err.name === "ZodError")
      return new BridgeError(
        BridgeErrorKind.ToolFailed,
        `MCP tool ${name} returned a malformed result: ${err.message}`,
      );
    // The transport itself failed (HTTP server gone, broken pipe): reconnect on the next call.
    if (conn) this.#drop(conn);
    return new BridgeError(
      BridgeErrorKind.Unavailable,
      `MCP server ${this.name} failed during the call to ${tool}: ${messageOf(err)}${conn ? stderrNote(conn.stderr) : ""}`,
      { cause: err },
    );
  }
}

function stderrNote(tail: TextTail): string {
  const t = tail.text.trim();
  return t ? `; server stderr: ${t}` : "";
}
