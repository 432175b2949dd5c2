/**
 * Actions a thread may call, and the tool bridge behind them. The model sees provider-safe names:
 * `<server>__<tool>` for an MCP server's tool, the tool's own name for a custom tool.
 */
import type { ToolRegistry } from "../bridge/index.js";
import { ACTION_TIMEOUT_MS } from "./limits.js";
import { EffectType, globMatch } from "./policy.js";

export interface ActionDef {
  /** The name the model and the policy use. */
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  effect: EffectType;
}

/** Where a thread's actions come from (the real one is {@link bridgeActions}). */
export interface ActionProvider {
  list(signal?: AbortSignal): Promise<ActionDef[]>;
  /** Runs an action. Resolves to its result; rejects with the tool's error. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

export function effectFor(name: string, effects: Record<string, EffectType>): EffectType {
  if (effects[name]) return effects[name];
  for (const [pattern, e] of Object.entries(effects)) if (globMatch(pattern, name)) return e;
  return EffectType.Unknown;
}

/** Actions served by a bridge {@link ToolRegistry} (MCP servers from the config and custom tools). */
export function bridgeActions(registry: ToolRegistry, effects: Record<string, EffectType>): ActionProvider {
  let cache: Map<string, { def: ActionDef; ref: Parameters<ToolRegistry["call"]>[0] }> | undefined;
  const load = async (signal?: AbortSignal) => {
    if (cache) return cache;
    const { tools } = await registry.list(signal);
    const m = new Map<string, { def: ActionDef; ref: Parameters<ToolRegistry["call"]>[0] }>();
    for (const t of tools) {
      const name = t.ref.kind === "mcp" ? `${t.ref.server}__${t.ref.tool}` : t.ref.tool;
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) continue;
      m.set(name, {
        def: {
          name,
          description: t.description,
          parameters: t.inputSchema,
          effect: effectFor(name, effects),
        },
        ref: t.ref,
      });
    }
    cache = m;
    return m;
  };
  return {
    async list(signal) {
      return [...(await load(signal)).values()].map((e) => e.def);
    },
    async call(name, args, signal) {
      const entry = (await load(signal)).get(name);
      if (!entry) throw new Error(`unknown action ${JSON.stringify(name)}`);
      const { invokeTool } = await import("../bridge/index.js");
      return invokeTool(registry, entry.ref, args, {
        timeoutMs: ACTION_TIMEOUT_MS,
        ...(signal ? { signal } : {}),
      });
    },
    close: () => registry.close(),
  };
}
