/**
 * The tool bridge of a run: one per run, shared by all its scripts. It is started when the first
 * script of the run is about to run — a run whose steps never reach a script loads neither the
 * bridge module nor hono and opens no socket — from the workspace's `.ratchet/config.json` (a
 * missing file means no tools), on 127.0.0.1, an ephemeral port, with a fresh token, redacting with
 * the run's redactor (which knows the run's `SECRET_*` values). The run closes it when it ends.
 * Scripts get its address and token as `MCP_API_URL` / `MCP_API_TOKEN`; its log lines (already
 * redacted) are handed to the ledger log of the step during which they were written.
 */
import type { Bridge, BridgeConfig, BuiltinToolSpec } from "../bridge/index.js";
import type { Redactor } from "../core/index.js";
import type { BridgeEndpoint } from "./fast-path.js";
import { BRIDGE_LOG_MAX_LINES } from "./run-limits.js";

export interface RunBridgeOptions {
  /** The workspace's `.ratchet` folder: its `config.json` declares the tools. */
  workspaceDir: string;
  /** Tools to serve instead of the workspace's config file. */
  config?: BridgeConfig;
  /** The run's redactor: masks its secrets (and the bridge's token) in log lines and error texts. */
  redactor: Redactor;
  /** Environment for `${NAME}` expansion, MCP servers and command tools (the run's). */
  env: NodeJS.ProcessEnv;
  /** Built-in custom tools the run adds (the orchestrators' `call_sub_agent`). */
  tools?: readonly BuiltinToolSpec[];
}

/** A run's bridge, started on first use. */
export class RunBridge {
  readonly #opts: RunBridgeOptions;
  #starting: Promise<Bridge> | undefined;
  /** One scoped token per allowlist: a step calls endpoint() once per script or tool call. */
  readonly #scoped = new Map<string, string>();
  #lines: string[] = [];
  #dropped = 0;

  constructor(opts: RunBridgeOptions) {
    this.#opts = opts;
  }

  /** Whether the bridge was started (or a start was tried). */
  get started(): boolean {
    return this.#starting !== undefined;
  }

  /**
   * The bridge's URL and a token, starting it on the first call. With `allowedTools` (a step's
   * `allowed_tools`) the token is a fresh one limited to those tools. When it cannot start (a bad config
   * file, no port to listen on) every call rejects with the same error.
   */
  async endpoint(allowedTools?: readonly string[]): Promise<BridgeEndpoint> {
    this.#starting ??= this.#start();
    const bridge = await this.#starting;
    if (!allowedTools) return { url: bridge.url, token: bridge.token };
    const key = JSON.stringify(allowedTools);
    let token = this.#scoped.get(key);
    if (!token) {
      token = bridge.scopedToken(allowedTools);
      this.#scoped.set(key, token);
    }
    return { url: bridge.url, token };
  }

  async #start(): Promise<Bridge> {
    try {
      // One turn of the event loop first: loading the bridge's modules takes ~10 ms of the event
      // loop (more under load), and the run's pre-started interpreter, whose start is usually under
      // way in the same turn (its socket listening, its spawn a tick away), should not wait for it.
      await new Promise((resolve) => setImmediate(resolve));
      // Loaded here: hono and the bridge cost nothing to runs that never start a script.
      const { loadWorkspaceBridgeConfig, registerBuiltinTool, startBridge } = await import(
        "../bridge/index.js"
      );
      const config = this.#opts.config ?? loadWorkspaceBridgeConfig(this.#opts.workspaceDir);
      const bridge = await startBridge({
        config,
        host: "127.0.0.1",
        port: 0,
        redactor: this.#opts.redactor,
        env: this.#opts.env,
        log: (line) => this.#log(line),
      });
      for (const tool of this.#opts.tools ?? []) registerBuiltinTool(bridge.registry, tool);
      return bridge;
    } catch (e) {
      throw new Error(`could not start the tool bridge: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  #log(line: string): void {
    if (this.#lines.length < BRIDGE_LOG_MAX_LINES) this.#lines.push(line);
    else this.#dropped++;
  }

  /** The log lines written since the last call (redacted), then forgets them. */
  takeLog(): string[] {
    const lines = this.#lines;
    if (this.#dropped > 0) lines.push(`… ${this.#dropped} more tool bridge log line(s) not kept`);
    this.#lines = [];
    this.#dropped = 0;
    return lines;
  }

  /** Stops the bridge and its MCP servers (waiting for a start in progress). Never throws. */
  async close(): Promise<void> {
    if (!this.#starting) return;
    try {
      const bridge = await this.#starting;
      await bridge.close();
    } catch {
      // never started, or already gone: nothing to stop
    }
  }
}
