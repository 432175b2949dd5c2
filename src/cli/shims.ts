/**
 * `ratchet shims <dir>`: scripts named like the original ledger's (`start-step.sh`,
 * `publish-plan.sh`, `run-step.sh`, …) that hand their input (a file path, or stdin when none is
 * given) to the matching Ratchet command, so an agent's existing instructions work by pointing at
 * that folder. The database comes from `RATCHET_DB`, else `ORCH_DB`, else the workspace found
 * from the current folder.
 */
import { chmodSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { FLOWS, type Op } from "../ledger/index.js";
import { out } from "./io.js";

/** Script name (`<op>.sh`, as the original named them) → the command it runs and its op; from FLOWS. */
export const SHIMS: readonly { script: string; command: string; op: Op }[] = FLOWS.map((f) => ({
  script: `${f.op}.sh`,
  command: f.command.join(" "),
  op: f.op,
}));

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The text of one shim. */
export function shimScript(command: string, node: string, bin: string): string {
  return [
    "#!/usr/bin/env bash",
    `# Written by \`ratchet shims\`: the original ledger's script, served by \`ratchet ${command}\`.`,
    "# Input: a .json/.yaml/.yml file path, or - / nothing for stdin. DB: RATCHET_DB, else ORCH_DB.",
    `exec ${quote(node)} ${quote(bin)} ${command} "\${1:--}"`,
    "",
  ].join("\n");
}

/** Writes every shim into `dir` (created when missing); returns the written paths. */
export function writeShims(dir: string, bin = process.argv[1] ?? "ratchet"): string[] {
  const folder = resolve(dir);
  mkdirSync(folder, { recursive: true });
  const binPath = realpathSync(bin);
  return SHIMS.map(({ script, command }) => {
    const path = join(folder, script);
    writeFileSync(path, shimScript(command, process.execPath, binPath));
    chmodSync(path, 0o755);
    return path;
  });
}

/** `ratchet shims <dir>`. */
export function shimsCommand(dir: string): number {
  const written = writeShims(dir);
  out(JSON.stringify({ ok: true, op: "shims", dir: resolve(dir), scripts: written.length, written }));
  return 0;
}
