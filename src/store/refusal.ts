/**
 * The refusal of a capability that still needs the SQLite store when the workspace's store is
 * PostgreSQL. The CLI notes the command it runs so the message can name it.
 */
import { ErrorCode, RatchetError } from "../core/index.js";

let command: string | undefined;

/** Records the command being run (`run`, `thread start`, …) so a refusal can name it. */
export function noteCommand(name: string | undefined): void {
  command = name;
}

/**
 * The refusal of a capability that still needs the SQLite store, naming the command.
 * `invalid_value` (exit 2) on the field that chose PostgreSQL; nothing was written.
 */
export function sqliteOnly(what?: string): RatchetError {
  const name = what ?? (command ? `ratchet ${command}` : "this command");
  return new RatchetError(
    ErrorCode.InvalidValue,
    `\`${name}\` needs the SQLite store until its tables move behind the store interfaces; the store here is PostgreSQL (RATCHET_DB / --db / store.url). every other command (the ledger, runs and workers, threads, provenance, serve and mcp) runs on PostgreSQL; only the runner (ratchet runner …) and the Builder (ratchet build) do not yet; see docs/scale-out.md`,
    { field: "store", command: name },
  );
}
