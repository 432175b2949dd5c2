/**
 * `ratchet bridge serve`, `ratchet tools list`, `ratchet tools spec`. Loaded lazily by main.ts: the
 * bridge (hono, the MCP SDK) is not part of the start-up of every other command.
 */
import {
  apiSpec,
  type BridgeConfig,
  BridgeError,
  compileBridgeConfig,
  createToolRegistry,
  errorCodeForKind,
  loadBridgeConfig,
  loadWorkspaceBridgeConfig,
  startBridge,
  type ToolRegistry,
  toolRoute,
} from "../bridge/index.js";
import { ErrorCode, isRatchetError, RatchetError } from "../core/index.js";
import { killAllRunning } from "../exec/index.js";
import { resolveWorkspace } from "../store/index.js";
import { err, out } from "./io.js";

/** Options every bridge/tools command takes. */
export interface ToolsCommandOptions {
  /** The global `--db` (locates the workspace, hence `.ratchet/config.json`). */
  db?: string;
  /** `--config <path>`: a config file instead of the workspace's. */
  config?: string;
}

/** The bridge config of a command: `--config`, else the workspace's `.ratchet/config.json` (may be absent). */
export function commandBridgeConfig(opts: ToolsCommandOptions): { config: BridgeConfig; note?: string } {
  if (opts.config) return { config: loadBridgeConfig(opts.config) };
  try {
    const ws = resolveWorkspace({ ...(opts.db ? { db: opts.db } : {}) });
    const config = loadWorkspaceBridgeConfig(ws.dir);
    return config.mcpServers || config.customTools
      ? { config }
      : { config, note: `no ${config.source}: serving the built-in tools only` };
  } catch (e) {
    if (!isRatchetError(e, ErrorCode.WorkspaceNotFound)) throw e;
    return {
      config: { baseDir: process.cwd(), source: "(none)" },
      note: "no Ratchet workspace here and no --config: serving the built-in tools only",
    };
  }
}

/** Turns a bridge failure into the RatchetError whose exit status fits (not found → 3, …). */
function asRatchetError(e: unknown): unknown {
  if (e instanceof BridgeError)
    return new RatchetError(errorCodeForKind(e.kind), e.message, { kind: e.kind });
  return e;
}

function parsePort(text: string | undefined): number {
  if (text === undefined) return 0;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new RatchetError(
      ErrorCode.Usage,
      `--port must be an integer from 0 to 65535 (got ${JSON.stringify(text)})`,
      {
        field: "port",
      },
    );
  return port;
}

function parseAllow(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * `ratchet bridge serve`: one bridge on 127.0.0.1 until SIGINT/SIGTERM. Prints `{"url","port"}`
 * (with `"token"` under `--print-token`; otherwise the token goes once to stderr).
 */
export async function bridgeServe(
  opts: ToolsCommandOptions & { port?: string; printToken?: boolean; allow?: string; quiet?: boolean },
): Promise<number> {
  const port = parsePort(opts.port);
  const { config, note } = commandBridgeConfig(opts);
  if (note) err(`ratchet bridge: ${note}`);
  const allowedTools = parseAllow(opts.allow);
  const bridge = await startBridge({
    config,
    port,
    ...(allowedTools ? { allowedTools } : {}),
    ...(opts.quiet ? {} : { log: (line: string) => err(line) }),
  }).catch((e: unknown) => {
    const code = (e as { code?: unknown } | null)?.code;
    if (code === "EADDRINUSE" || code === "EACCES")
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `cannot listen on 127.0.0.1:${port}: ${(e as Error).message}`,
        {
          field: "port",
        },
      );
    throw e;
  });
  if (opts.printToken) out(JSON.stringify({ url: bridge.url, port: bridge.port, token: bridge.token }));
  else {
    out(JSON.stringify({ url: bridge.url, port: bridge.port }));
    err(
      `ratchet bridge: token ${bridge.token} (send "Authorization: Bearer <token>"; scripts get it as MCP_API_TOKEN)`,
    );
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await killAllRunning();
  await bridge.close();
  return 0;
}

async function withRegistry<T>(
  opts: ToolsCommandOptions,
  fn: (registry: ToolRegistry) => Promise<T>,
): Promise<T> {
  const { config } = commandBridgeConfig(opts);
  const registry = createToolRegistry(compileBridgeConfig(config));
  try {
    return await fn(registry);
  } catch (e) {
    throw asRatchetError(e);
  } finally {
    await registry.close();
  }
}

/**
 * `ratchet tools list`: every custom tool and every MCP server's tools (servers are started to be
 * listed). Exit 8 when a server could not be listed (the others are still printed).
 */
export async function toolsList(opts: ToolsCommandOptions & { json?: boolean }): Promise<number> {
  return withRegistry(opts, async (registry) => {
    const { tools, errors } = await registry.list();
    if (opts.json) {
      out(
        JSON.stringify({
          tools: tools.map((t) => ({
            name: t.name,
            route: `POST $MCP_API_URL${toolRoute(t.ref)}`,
            description: t.description,
            input_schema: t.inputSchema,
          })),
          errors,
        }),
      );
    } else {
      const width = Math.max(0, ...tools.map((t) => t.name.length));
      for (const t of tools) out(`${t.name.padEnd(width)}  ${t.description.split("\n")[0] ?? ""}`.trimEnd());
      if (tools.length === 0) out("(no tools)");
    }
    for (const e of errors) err(`ratchet tools: MCP server ${e.server}: ${e.error}`);
    return errors.length > 0 ? 8 : 0;
  });
}

/** `ratchet tools spec <name…>`: the same text `get_api_spec` returns, with `$MCP_API_URL` as the base. */
export async function toolsSpec(names: readonly string[], opts: ToolsCommandOptions): Promise<number> {
  return withRegistry(opts, async (registry) => {
    const text = await apiSpec(registry, names, { baseUrl: "$MCP_API_URL" });
    process.stdout.write(text);
    return 0;
  });
}
