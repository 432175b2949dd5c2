/**
 * One agent: a fresh conversation through the shared tool loop (`runToolLoop`), with its events
 * kept as a short log for the ledger. A model failure (provider error, retries used up) is not
 * thrown: it is the agent's `error`, and the attempt fails with it.
 */
import {
  isModelError,
  type LoopTool,
  type ModelClient,
  runToolLoop,
  type ToolLoopEvent,
  type ToolLoopLimits,
} from "../model/index.js";

export interface AgentResult {
  stopReason: string;
  stopDetail: string;
  tokens: number;
  rounds: number;
  summary: string | undefined;
  finalText: string;
  /** One line per tool call and the stop, for the attempt's log. */
  log: string[];
  /** Set when a model call failed. */
  error?: string;
}

function short(v: unknown, max = 160): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

export async function runAgent(opts: {
  client: ModelClient;
  system: string;
  message: string;
  tools: readonly LoopTool[];
  limits: ToolLoopLimits;
  signal?: AbortSignal;
  /** Each event of the tool loop, after the agent's own bookkeeping (progress). */
  onEvent?: (e: ToolLoopEvent) => void;
}): Promise<AgentResult> {
  const log: string[] = [];
  // Counted from the replies, so that tokens spent before a failed call are not lost.
  let spent = 0;
  try {
    const r = await runToolLoop({
      client: opts.client,
      system: opts.system,
      messages: [{ role: "user", content: opts.message }],
      tools: opts.tools,
      limits: opts.limits,
      ...(opts.signal ? { signal: opts.signal } : {}),
      onEvent: (e) => {
        if (e.type === "model_reply") {
          spent += e.usage.inputTokens + e.usage.outputTokens;
          for (const c of e.toolCalls) log.push(`round ${e.round}: ${c.name}(${short(c.args)})`);
        } else if (e.type === "tool_result" && e.isError)
          log.push(`  ${e.name} error: ${short(e.content, 400)}`);
        else if (e.type === "stop") log.push(`stop: ${e.stopReason} (${e.detail})`);
        opts.onEvent?.(e);
      },
    });
    return {
      stopReason: r.stopReason,
      stopDetail: r.stopDetail,
      tokens: r.usage.inputTokens + r.usage.outputTokens,
      rounds: r.rounds,
      summary: r.summary,
      finalText: r.finalText,
      log,
    };
  } catch (e) {
    const message = isModelError(e) || e instanceof Error ? e.message : String(e);
    log.push(`model error: ${message}`);
    return {
      stopReason: "model_error",
      stopDetail: message,
      tokens: spent,
      rounds: 0,
      summary: undefined,
      finalText: "",
      log,
      error: message,
    };
  }
}
