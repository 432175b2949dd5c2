/**
 * The shape of one write flow (`flows/<op>.ts`): everything an edge needs to offer it. The CLI
 * command and its `--help`, the flag-style form, the HTTP route and `/openapi.json`, the MCP tool
 * and the op table of docs/cli.md are all derived from `FLOWS` (flows/index.ts).
 */
import type { ErrorCode, Schema } from "../core/index.js";
import type { Op } from "./inputs.js";
import type { Ledger } from "./ledger.js";
import type { RunStepOptions } from "./run-step.js";

/** What a flow gets besides its input. */
export interface OpContext {
  cwd?: string;
  /** The caller is a person at a terminal (the CLI with stdin a TTY); unset everywhere else. */
  interactive?: boolean;
  run?: RunStepOptions;
}

/** A documented refusal: its code, the exit status it maps to, and when it happens. */
export interface Refusal {
  code: ErrorCode;
  exit: number;
  when: string;
}

export interface FlowDef<I = unknown, R extends Record<string, unknown> = Record<string, unknown>> {
  /** The stable marker op name. */
  op: Op;
  /** The CLI command: `ratchet <group> <verb>`. */
  command: readonly [group: string, verb: string];
  /** One line: what the flow does. */
  summary: string;
  /** The strict input schema (every field described). */
  input: Schema<I> & { shape?: Record<string, Schema<unknown>> };
  /** A minimal valid input, shown in `--help` and the docs. */
  example: Record<string, unknown>;
  /** The field a flag-style call takes as its positional argument (`ratchet step start <step_id>`). */
  positional?: string;
  /** The input may be omitted (`{}`). */
  optionalInput?: boolean;
  /** Refusals besides schema errors (2) and unknown ids (3). */
  refusals: readonly Refusal[];
  /** The keys of the result, documented (the marker carries the scalar ones). */
  result: readonly string[];
  /**
   * The CLI command is written by hand in the area's own file (e.g. a text form): the generic
   * command and the fast path of `bin/ratchet.js` leave it alone. Other edges are unchanged.
   */
  ownCommand?: boolean;
  /** Only these result keys go on the marker (default: every scalar one). */
  marker?: readonly string[];
  run(ledger: Ledger, input: I, ctx: OpContext): R | Promise<R>;
}

/** Declares a flow with its input and result types tied to `run`. */
export function defineFlow<I, R extends Record<string, unknown>>(def: FlowDef<I, R>): FlowDef<I, R> {
  return def;
}
