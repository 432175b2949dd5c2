/**
 * Entry of the `ratchet` binary. Ledger write flows are what agents call most, one process each, so
 * their exact shape — `[--db <path>] plan|step|metric <verb> <input>` — is dispatched here without
 * building the whole command tree (commander and every command's module stay unloaded). Anything
 * else (help, reads, other flags, other commands) goes to the full CLI in `main.ts`, which accepts
 * the same shape too: both paths call the same `runWriteFlow`.
 */
import type { Op } from "../ledger/index.js";
import { finalStatus, guardStdio } from "./io.js";
import { runWriteFlow } from "./write-flows.js";

/** `<group> <verb>` → marker op of the write flows that take exactly one input argument. */
const WRITE_FLOWS: Readonly<Record<string, Op>> = {
  "plan publish": "publish-plan",
  "plan record-skill": "record-skill",
  "plan raise-budget": "raise-budget",
  "plan abandon": "abandon-plan",
  "plan finish": "finish-plan",
  "plan review-close": "agent-review-close",
  "step start": "start-step",
  "step complete": "complete-step",
  "step fail": "fail-step",
  "step log": "append-log",
  "step run": "run-step",
  "step deviate": "deviate",
  "step heartbeat": "heartbeat",
  "metric record": "record-metric",
};

/** The write flow and options of a plain write-flow command line, or undefined for anything else. */
export function plainWriteFlow(args: readonly string[]): { op: Op; input: string; db?: string } | undefined {
  let rest = args;
  let db: string | undefined;
  if (rest[0] === "--db" && rest.length > 1) {
    db = rest[1];
    rest = rest.slice(2);
  } else if (rest[0]?.startsWith("--db=")) {
    db = rest[0].slice("--db=".length);
    rest = rest.slice(1);
  }
  if (rest.length !== 3 || db === "") return undefined;
  const op = WRITE_FLOWS[`${rest[0]} ${rest[1]}`];
  const input = rest[2] as string;
  if (!op || (input !== "-" && input.startsWith("-"))) return undefined;
  return { op, input, ...(db !== undefined ? { db } : {}) };
}

/** Runs the CLI with `argv` (as `process.argv`) and returns the exit status. */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  guardStdio();
  const flow = plainWriteFlow(argv.slice(2));
  if (flow)
    return finalStatus(await runWriteFlow(flow.op, flow.input, flow.db !== undefined ? { db: flow.db } : {}));
  const full = await import("./main.js");
  return finalStatus(await full.main(argv));
}
