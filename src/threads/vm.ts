/**
 * The sandboxed Python interpreter behind a small interface: start a script, see the host call it
 * paused at, resume it with a value or an error, save the paused VM to bytes and restore it.
 * The real adapter is Monty (`@pydantic/monty`); nothing else in Ratchet imports it.
 *
 * Limits (time, memory, allocations, call depth) are given at start and travel with a saved VM.
 * Monty counts interpreter time only (not the time the host spends on a call), from the start or
 * from the last restore.
 */
import {
  Monty,
  MontyComplete,
  MontyError,
  MontyNameLookup,
  MontyRuntimeError,
  MontySnapshot,
  MontySyntaxError,
} from "@pydantic/monty";
import { withForwardNames } from "./script-names.js";

export interface VmLimits {
  maxDurationSecs: number;
  maxMemory: number;
  maxAllocations: number;
  maxRecursionDepth: number;
}

/** Where a VM stands: paused at a host call, or finished with the script's value. */
export type VmProgress =
  | { kind: "call"; name: string; args: unknown[]; kwargs: Record<string, unknown> }
  | { kind: "done"; output: unknown };

/** An error the script raised and did not catch, a limit, or bad code. */
export class VmError extends Error {
  override readonly name = "VmError";
  constructor(
    /** Python exception type (`SyntaxError`, `TimeoutError`, `MemoryError`, `ValueError`, …). */
    readonly type: string,
    message: string,
    /** The traceback text when there is one. */
    readonly traceback: string,
  ) {
    super(`${type}: ${message}`);
  }

  /** A resource limit (time, memory, allocations, recursion) ended the script. */
  get isLimit(): boolean {
    return (
      this.type === "TimeoutError" ||
      this.type === "MemoryError" ||
      this.type === "RecursionError" ||
      /limit exceeded/.test(this.message)
    );
  }
}

/** A VM paused at a host call (or finished). */
export interface PausedVm {
  readonly progress: VmProgress;
  /** Returns `value` from the pending host call and runs to the next pause. @throws VmError */
  resume(value: unknown): PausedVm;
  /** Raises `type(message)` at the pending host call and runs on. @throws VmError */
  raise(type: string, message: string): PausedVm;
  /** The paused VM as bytes (heap, frames, limits). */
  dump(): Buffer;
}

export interface VmFactory {
  /** Parses a script. @throws VmError `SyntaxError` (nothing runs). */
  check(code: string, scriptName: string): void;
  /** Starts a script with inputs; runs to the first pause. @throws VmError */
  start(
    code: string,
    opts: {
      scriptName: string;
      inputs: Record<string, unknown>;
      limits: VmLimits;
      /** Text the script prints. */
      onPrint?: (text: string) => void;
    },
  ): PausedVm;
  /** Restores a paused VM saved by {@link PausedVm.dump}. */
  restore(bytes: Buffer): PausedVm;
}

type Step = MontySnapshot | MontyNameLookup | MontyComplete;

function toVmError(e: unknown): VmError {
  if (e instanceof MontySyntaxError) return new VmError("SyntaxError", e.display("msg"), "");
  if (e instanceof MontyRuntimeError) {
    const info = e.exception;
    return new VmError(info.typeName, info.message, e.display("traceback"));
  }
  if (e instanceof MontyError) {
    const info = e.exception;
    return new VmError(info.typeName, info.message, "");
  }
  if (e instanceof VmError) return e;
  return new VmError("RuntimeError", e instanceof Error ? e.message : String(e), "");
}

/** Monty's values → plain JSON values (dicts are Maps, tuples arrays, big ints BigInts). */
export function toPlain(v: unknown): unknown {
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, val] of v) o[String(k)] = toPlain(val);
    return o;
  }
  if (v instanceof Set) return [...v].map(toPlain);
  if (Array.isArray(v)) return v.map(toPlain);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v === undefined) return null;
  if (typeof v === "function") return `<function ${v.name}>`;
  if (v && typeof v === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(v)) o[k] = toPlain(val);
    return o;
  }
  return v;
}

class MontyPaused implements PausedVm {
  readonly progress: VmProgress;
  readonly #step: Step;

  constructor(step: Step) {
    this.#step = step;
    this.progress =
      step instanceof MontyComplete
        ? { kind: "done", output: toPlain(step.output) }
        : step instanceof MontySnapshot
          ? {
              kind: "call",
              name: step.functionName,
              args: step.args.map(toPlain),
              kwargs: toPlain(step.kwargs) as Record<string, unknown>,
            }
          : { kind: "call", name: "", args: [], kwargs: {} };
  }

  resume(value: unknown): PausedVm {
    if (!(this.#step instanceof MontySnapshot))
      throw new VmError("RuntimeError", "the script has finished", "");
    return advance(() => (this.#step as MontySnapshot).resume({ returnValue: value }));
  }

  raise(type: string, message: string): PausedVm {
    if (!(this.#step instanceof MontySnapshot))
      throw new VmError("RuntimeError", "the script has finished", "");
    return advance(() => (this.#step as MontySnapshot).resume({ exception: { type, message } }));
  }

  dump(): Buffer {
    if (!(this.#step instanceof MontySnapshot))
      throw new VmError("RuntimeError", "a finished VM has no state", "");
    return this.#step.dump();
  }
}

/**
 * Runs to the next host call or the end. A bare name the script never defined (a name lookup)
 * resolves to nothing: Python's NameError. Calls of undefined names come out as host calls, so
 * the host decides (and raises NameError for names it does not serve).
 */
function advance(fn: () => Step): PausedVm {
  let step: Step;
  try {
    step = fn();
    while (step instanceof MontyNameLookup) step = step.resume();
  } catch (e) {
    throw toVmError(e);
  }
  return new MontyPaused(step);
}

/** The Monty adapter. */
export const montyVm: VmFactory = {
  check(code, scriptName) {
    try {
      new Monty(code, { scriptName });
    } catch (e) {
      throw toVmError(e);
    }
  },
  start(code, opts) {
    let m: Monty;
    try {
      // Helpers defined below their callers resolve to the script's own functions (script-names.ts).
      m = new Monty(withForwardNames(code), {
        scriptName: opts.scriptName,
        inputs: Object.keys(opts.inputs),
      });
    } catch (e) {
      throw toVmError(e);
    }
    const printCallback = opts.onPrint ? (_stream: string, text: string) => opts.onPrint?.(text) : undefined;
    const hasInputs = Object.keys(opts.inputs).length > 0;
    return advance(() =>
      m.start({
        ...(hasInputs ? { inputs: opts.inputs } : {}),
        limits: opts.limits,
        ...(printCallback ? { printCallback } : {}),
      }),
    );
  },
  restore(bytes) {
    return advance(() => MontySnapshot.load(bytes));
  },
};
