/**
 * A listening bridge: the hono app served by `@hono/node-server` on loopback, an ephemeral port by
 * default, a fresh random bearer token per bridge. Every run starts its own (see ARCHITECTURE.md).
 */
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bindHostName, Redactor } from "../core/index.js";
import type { ProcessRunner } from "../exec/index.js";
import { createBridgeApp, tokenKey } from "./app.js";
import type { BridgeConfig, CompiledBridgeConfig } from "./config.js";
import { TOKEN_BYTES } from "./limits.js";
import { createToolRegistry, type ToolRegistry } from "./registry.js";

/** Options of {@link startBridge}. Only `config` is required. */
export interface StartBridgeOptions {
  /** MCP servers and custom tools (the config file's shape, or compiled). */
  config: BridgeConfig | CompiledBridgeConfig;
  /** The bearer token. Default: {@link generateToken} (32 random bytes, hex). */
  token?: string;
  /** Port to listen on. Default 0: an ephemeral port (read it from the result). */
  port?: number;
  /** Address to bind. Default `127.0.0.1`: only this machine can connect. */
  host?: string;
  /** Tools this run may use (`mcp:server/tool`, `mcp:server/*`, `custom:tool`, `*`). Default: all. */
  allowedTools?: readonly string[];
  /** Masks secrets in logs and error texts. Default: built from the `SECRET_*` (and key) variables of `env`. */
  redactor?: Redactor;
  /** Time limit of a call when the tool declares none. Default `DEFAULT_CALL_TIMEOUT_MS` (60 s). */
  callTimeoutMs?: number;
  /** One line per request and per MCP server event, redacted. Default: no logging. */
  log?: (line: string) => void;
  /** Calls in flight per MCP server. Default `MAX_CONCURRENT_CALLS_PER_SERVER` (8). */
  maxConcurrentPerServer?: number;
  /** Environment for servers, command tools, `${NAME}` expansion and the default redactor. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Runs command tools. Default `realProcessRunner`. */
  runner?: ProcessRunner;
}

/** A running bridge. */
export interface Bridge {
  /** `http://127.0.0.1:<port>` — what scripts get as `MCP_API_URL`. */
  url: string;
  /** What scripts get as `MCP_API_TOKEN`. */
  token: string;
  port: number;
  /** Its tools; register built-ins with `registerBuiltinTool(bridge.registry, …)`. */
  registry: ToolRegistry;
  /**
   * A new token that may use only the tools `allowedTools` allows (on top of the bridge's own
   * allowlist): what a step with `allowed_tools` gets as `MCP_API_TOKEN`. Valid until `close()`.
   */
  scopedToken(allowedTools: readonly string[]): string;
  /** Stops listening, drops open connections, stops the MCP servers. Idempotent. */
  close(): Promise<void>;
}

/** A fresh bearer token: {@link TOKEN_BYTES} random bytes, hex-encoded. */
export function generateToken(): string {
  return randomBytes(TOKEN_BYTES).toString("hex");
}

/** The variables a script needs to reach the bridge. */
export function bridgeEnv(bridge: Pick<Bridge, "url" | "token">): {
  MCP_API_URL: string;
  MCP_API_TOKEN: string;
} {
  return { MCP_API_URL: bridge.url, MCP_API_TOKEN: bridge.token };
}

/**
 * Starts a bridge and resolves once it listens.
 *
 * @throws RatchetError `schema_violation` for a bad config (naming the field); the listen error
 *   (e.g. `EADDRINUSE`) when the port is taken.
 */
export async function startBridge(opts: StartBridgeOptions): Promise<Bridge> {
  const token = opts.token ?? generateToken();
  const env = opts.env ?? process.env;
  const redactor = opts.redactor ?? new Redactor().addFromEnv(env);
  redactor.add("MCP_API_TOKEN", token);
  const userLog = opts.log;
  const log = userLog ? (line: string) => userLog(redactor.redact(line)) : undefined;
  const registry = createToolRegistry(opts.config, {
    env,
    ...(opts.maxConcurrentPerServer !== undefined
      ? { maxConcurrentPerServer: opts.maxConcurrentPerServer }
      : {}),
    ...(opts.runner ? { runner: opts.runner } : {}),
    ...(log ? { log } : {}),
  });
  const host = opts.host ?? "127.0.0.1";
  // Loaded here, not at import: a process that never starts a bridge does not load node:http/http2.
  const { createAdaptorServer } = await import("@hono/node-server");
  let url = "";
  let boundPort: number | undefined;
  const bindName = bindHostName(host);
  const scopedTokens = new Map<string, readonly string[]>();
  const app = createBridgeApp({
    registry,
    token,
    allowedTools: opts.allowedTools,
    scopedTokens,
    redactor,
    callTimeoutMs: opts.callTimeoutMs,
    log,
    baseUrl: () => url,
    hostPolicy: { allowed: bindName ? [bindName] : [], port: () => boundPort },
  });
  // Global Request/Response are left alone: the bridge shares its process with other code.
  const server = createAdaptorServer({
    fetch: app.fetch,
    hostname: host,
    overrideGlobalObjects: false,
  }) as Server;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await registry.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  boundPort = port;
  url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  log?.(`bridge listening on ${url}`);
  let closing: Promise<void> | undefined;
  return {
    url,
    token,
    port,
    registry,
    scopedToken(allowedTools) {
      const scoped = generateToken();
      redactor.add("MCP_API_TOKEN", scoped);
      scopedTokens.set(tokenKey(scoped), [...allowedTools]);
      return scoped;
    },
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await registry.close();
        log?.("bridge closed");
      })();
      return closing;
    },
  };
}
