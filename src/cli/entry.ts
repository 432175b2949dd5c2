/**
 * Entry of the `ratchet` binary. Ledger write flows are what agents call most, one process each, so
 * their exact shape — `[--db <path>] plan|step|metric <verb> <input>` — is dispatched here without
 * building the whole command tree (commander and every command's module stay unloaded). Anything
 * else (help, reads, other flags, other commands) goes to the full CLI in `main.ts`, which accepts
 * the same shape too: both paths call the same `runWriteFlow`.
 */
import { FLOWS, type Op } from "../ledger/index.js";
import { finalStatus, guardStdio, useStdinBytes } from "./io.js";
import { runFlowCommand } from "./write-flows.js";

/** `<group> <verb>` → marker op of every write flow (from FLOWS). */
const WRITE_FLOWS: ReadonlyMap<string, Op> = new Map(
  FLOWS.filter((f) => !f.ownCommand).map((f) => [f.command.join(" "), f.op]),
);

/**
 * The write flow, its arguments and options of a write-flow command line (an input file, `-`, or
 * flags), or undefined for anything else (help goes to the full CLI).
 */
export function plainWriteFlow(
  args: readonly string[],
): { op: Op; args: readonly string[]; input?: string; db?: string } | undefined {
  let rest = args;
  let db: string | undefined;
  if (rest[0] === "--db" && rest.length > 1) {
    db = rest[1];
    rest = rest.slice(2);
  } else if (rest[0]?.startsWith("--db=")) {
    db = rest[0].slice("--db=".length);
    rest = rest.slice(1);
  }
  if (rest.length < 2 || db === "") return undefined;
  const op = WRITE_FLOWS.get(`${rest[0]} ${rest[1]}`);
  const flowArgs = rest.slice(2);
  if (!op || flowArgs.some((a) => a === "-h" || a === "--help")) return undefined;
  // `headline respond <plan> <finding> --action …` is hand-written (why-commands.ts): only its
  // input-file form (`-`, a .json/.yaml path) takes the fast path.
  if (op === "headline-respond" && flowArgs.length !== 1) return undefined;
  return {
    op,
    args: flowArgs,
    ...(flowArgs.length === 1 ? { input: flowArgs[0] as string } : {}),
    ...(db !== undefined ? { db } : {}),
  };
}

/**
 * Runs the CLI with `argv` (as `process.argv`) and returns the exit status. `opts.stdin`: the bytes
 * of standard input when the daemon client (src/daemon/client.ts) already read them.
 */
export async function main(
  argv: readonly string[] = process.argv,
  opts: { stdin?: Buffer } = {},
): Promise<number> {
  guardStdio();
  if (opts.stdin) useStdinBytes(opts.stdin);
  const flow = plainWriteFlow(argv.slice(2));
  if (flow)
    return finalStatus(
      await runFlowCommand(flow.op, flow.args, flow.db !== undefined ? { db: flow.db } : {}),
    );
  const full = await import("./main.js");
  return finalStatus(await full.main(argv));
}
