/**
 * `ratchet shims <dir>`: scripts named like the original ledger's (`start-step.sh`,
 * `publish-plan.sh`, `run-step.sh`, …) that hand their input (a file path, or stdin when none is
 * given) to the matching Ratchet command, so an agent's existing instructions work by pointing at
 * that folder. The database comes from `RATCHET_DB`, else `ORCH_DB`, else the workspace found
 * from the current folder.
 */
import { chmodSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Op } from "../ledger/index.js";
import { out } from "./io.js";

/** Script name → the command it runs (`<group> <verb>`) and the op it performs. */
export const SHIMS: readonly { script: string; command: string; op: Op }[] = [
  { script: "publish-plan.sh", command: "plan publish", op: "publish-plan" },
  { script: "start-step.sh", command: "step start", op: "start-step" },
  { script: "complete-step.sh", command: "step complete", op: "complete-step" },
  { script: "fail-step.sh", command: "step fail", op: "fail-step" },
  { script: "append-log.sh", command: "step log", op: "append-log" },
  { script: "run-step.sh", command: "step run", op: "run-step" },
  { script: "deviate.sh", command: "step deviate", op: "deviate" },
  { script: "heartbeat.sh", command: "step heartbeat", op: "heartbeat" },
  { script: "record-skill.sh", command: "plan record-skill", op: "record-skill" },
  { script: "record-metric.sh", command: "metric record", op: "record-metric" },
  { script: "raise-budget.sh", command: "plan raise-budget", op: "raise-budget" },
  { script: "abandon-plan.sh", command: "plan abandon", op: "abandon-plan" },
  { script: "finish-plan.sh", command: "plan finish", op: "finish-plan" },
  { script: "agent-review-close.sh", command: "plan review-close", op: "agent-review-close" },
  { script: "sweep.sh", command: "plan sweep", op: "sweep" },
];

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
