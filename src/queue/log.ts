/** graphile-worker's logger, quiet: warnings and errors only, to stderr, prefixed. */
import type { Logger } from "graphile-worker";

/** Loads graphile-worker (only the queue's commands pay for it). */
export async function quietLogger(
  write: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<Logger> {
  const { Logger } = await import("graphile-worker");
  return new Logger(() => (level, message) => {
    if (level === "error" || level === "warning")
      write(`ratchet worker: graphile-worker ${level}: ${message}`);
  });
}
