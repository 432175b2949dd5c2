/**
 * Custom tools: commands from the config (JSON arguments on stdin, a JSON result on stdout, run
 * through exec's process runner) and built-in functions registered in code.
 */
import {
  buildEnv,
  compileConfinement,
  type Launcher,
  type ProcessRunner,
  realProcessRunner,
  Supervise,
  settleLaunched,
  supervisorLauncher,
} from "../exec/index.js";
import type { CompiledCustomTool } from "./config.js";
import { ANY_ARGUMENTS_SCHEMA } from "./config.js";
import { BridgeError, BridgeErrorKind } from "./errors.js";
import type { JsonSchema } from "./json-schema.js";
import { MAX_CUSTOM_TOOL_OUTPUT_BYTES, STDERR_TAIL_CHARS } from "./limits.js";
import { tailOf } from "./tail.js";
import { type CallContext, type CustomTool, remainingMs } from "./tools.js";

/** Milliseconds between SIGTERM and SIGKILL when a custom tool's time runs out. */
const CUSTOM_TOOL_KILL_GRACE_MS = 1000;

function stderrNote(stderr: string): string {
  const t = tailOf(stderr, STDERR_TAIL_CHARS);
  return t ? `; stderr: ${t}` : "";
}

/** Options of {@link commandTool}. */
export interface CommandToolOptions {
  /** Default `realProcessRunner`. */
  runner?: ProcessRunner;
  /** Where the minimal environment (PATH, HOME, LANG…) comes from. Default `process.env`. */
  baseEnv?: NodeJS.ProcessEnv;
  /**
   * The supervisor of the tool's process (exec's door, `--supervise-only`): the command is the
   * user's own (trusted config) but is started on behalf of untrusted callers, so it is ended at its
   * time limit with everything it started, even if Ratchet dies. Default: the built launcher when
   * its probe passes (none with a custom `runner`).
   */
  launcher?: Launcher;
}

/**
 * A custom tool that runs a command: the arguments go to its stdin as JSON, its stdout is parsed
 * as the JSON result. The environment is minimal plus the tool's own `env`.
 */
export function commandTool(cfg: CompiledCustomTool, opts: CommandToolOptions = {}): CustomTool {
  const runner = opts.runner ?? realProcessRunner;
  const label = `custom tool ${cfg.name}`;
  return {
    name: cfg.name,
    description: cfg.description,
    inputSchema: cfg.inputSchema,
    ...(cfg.timeoutMs !== undefined ? { timeoutMs: cfg.timeoutMs } : {}),
    origin: "command",
    async call(args, ctx) {
      const launcher: Launcher =
        opts.launcher ??
        (opts.runner ? { kind: "none", reason: "custom process runner" } : await supervisorLauncher());
      const door = compileConfinement(
        {
          readRoots: [],
          writeRoots: [],
          writeFiles: [],
          env: buildEnv({
            inherit: "minimal",
            ...(opts.baseEnv ? { base: opts.baseEnv } : {}),
            set: cfg.env,
          }),
          timeoutMs: remainingMs(ctx),
          killGraceMs: CUSTOM_TOOL_KILL_GRACE_MS,
          supervise: Supervise.SuperviseOnly,
          cleanup: [],
        },
        launcher,
      );
      const raw = await runner.run({
        ...door.command(cfg.command, cfg.args),
        cwd: cfg.cwd,
        env: door.env,
        stdin: JSON.stringify(args),
        timeoutMs: door.runnerTimeoutMs,
        signal: ctx.signal,
        maxCaptureBytes: MAX_CUSTOM_TOOL_OUTPUT_BYTES,
        killGraceMs: door.killGraceMs,
      });
      const r = settleLaunched(door, raw);
      if (r.spawnError)
        throw new BridgeError(
          BridgeErrorKind.Unavailable,
          `${label} could not start: ${r.spawnError.message}`,
        );
      if (r.timedOut)
        throw new BridgeError(
          BridgeErrorKind.Timeout,
          `${label} timed out after ${ctx.timeoutMs} ms${stderrNote(r.stderr)}`,
        );
      if (r.cancelled)
        throw ctx.signal.reason ?? new BridgeError(BridgeErrorKind.Cancelled, `${label} was cancelled`);
      if (r.exitCode !== 0) {
        const how =
          r.exitCode === null
            ? `was killed by ${r.signal ?? "a signal"}`
            : `exited with status ${r.exitCode}`;
        throw new BridgeError(BridgeErrorKind.ToolFailed, `${label} ${how}${stderrNote(r.stderr)}`);
      }
      if (r.omittedBytes.stdout > 0)
        throw new BridgeError(
          BridgeErrorKind.ToolFailed,
          `${label} wrote more than ${MAX_CUSTOM_TOOL_OUTPUT_BYTES} bytes to stdout`,
        );
      const text = r.stdout.trim();
      try {
        if (text === "") throw new Error("empty");
        return JSON.parse(text) as unknown;
      } catch {
        const shown =
          text === ""
            ? "nothing"
            : `non-JSON output ${JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text)}`;
        throw new BridgeError(
          BridgeErrorKind.ToolFailed,
          `${label} wrote ${shown} to stdout (expected one JSON value)${stderrNote(r.stderr)}`,
        );
      }
    },
  };
}

/** A built-in tool: a function in the bridge's process. */
export interface BuiltinToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. Default: any object. */
  input_schema?: JsonSchema;
  /** Its own time limit, replacing the bridge's call timeout. */
  timeout_ms?: number;
  /**
   * Returns the result (any JSON value). A thrown `BridgeError` keeps its kind; anything else
   * thrown answers `tool_failed` with its message.
   */
  handler: (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => unknown;
}

/** Anything custom tools can be registered with (the `ToolRegistry`). */
export interface CustomToolSink {
  registerCustom(tool: CustomTool): void;
}

/** Wraps a built-in spec into a {@link CustomTool}. */
export function builtinTool(spec: BuiltinToolSpec): CustomTool {
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: spec.input_schema ?? ANY_ARGUMENTS_SCHEMA,
    ...(spec.timeout_ms !== undefined ? { timeoutMs: spec.timeout_ms } : {}),
    origin: "builtin",
    async call(args: Record<string, unknown>, ctx: CallContext) {
      try {
        return await spec.handler(args, { signal: ctx.signal });
      } catch (err) {
        if (err instanceof BridgeError || ctx.signal.aborted) throw err;
        throw new BridgeError(
          BridgeErrorKind.ToolFailed,
          `built-in tool ${spec.name} failed: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
    },
  };
}

/**
 * Registers a built-in tool (reachable at `POST /tools/custom/{name}`, named `custom:{name}`).
 *
 * @throws RatchetError `invalid_value` when the name is taken or malformed.
 */
export function registerBuiltinTool(registry: CustomToolSink, spec: BuiltinToolSpec): void {
  registry.registerCustom(builtinTool(spec));
}

/** The built-in `echo`: returns its arguments unchanged (for checks and benchmarks). */
export const ECHO_TOOL: BuiltinToolSpec = Object.freeze({
  name: "echo",
  description: "Returns its arguments unchanged.",
  input_schema: { type: "object" },
  handler: (args: Record<string, unknown>) => args,
});

/** The built-in tools every bridge registers. */
export const BUILTIN_TOOLS: readonly BuiltinToolSpec[] = Object.freeze([ECHO_TOOL]);
