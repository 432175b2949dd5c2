/**
 * `ratchet doctor`: the tools runs need and the write protection this machine gives scripts.
 * Required: python3 (learned scripts) and git (the runner). Optional: ratchet-confine (built by
 * `npm run build`; Landlock write scope for Python) and bwrap (bubblewrap, the fallback).
 */
import {
  buildEnv,
  CONFINE_FILE,
  confineLauncher,
  detectSandbox,
  findConfine,
  findExecutable,
  type GuaranteeReport,
  guaranteeReport,
  PROBE_TIMEOUT_MS,
  type ProcessRunner,
  realProcessRunner,
  type SandboxInfo,
} from "../exec/index.js";

export interface ToolReport {
  name: string;
  required: boolean;
  found: boolean;
  path: string | null;
  version: string | null;
  /** What it is for, or what is missing. */
  note: string;
}

export interface DoctorReport {
  ok: boolean;
  tools: ToolReport[];
  write_protection: SandboxInfo;
  /** Per guarantee (writes, reads, metadata, signals, proc, supervision): enforced here or not. */
  guarantees: GuaranteeReport[];
}

async function tool(
  name: string,
  path: string | undefined,
  versionArgs: string[],
  required: boolean,
  note: string,
  env: NodeJS.ProcessEnv,
  runner: ProcessRunner,
): Promise<ToolReport> {
  if (!path) return { name, required, found: false, path: null, version: null, note: `not found: ${note}` };
  const r = await runner.run({
    command: path,
    args: versionArgs,
    env: buildEnv({ inherit: "minimal", base: env }),
    timeoutMs: PROBE_TIMEOUT_MS,
    maxCaptureBytes: 64 * 1024,
  });
  const version = (r.stdout.trim() || r.stderr.trim()).split("\n")[0] ?? null;
  return { name, required, found: r.exitCode === 0, path, version: version || null, note };
}

/** Checks the tools and probes the sandboxes. */
export async function doctor(
  opts: { env?: NodeJS.ProcessEnv; runner?: ProcessRunner } = {},
): Promise<DoctorReport> {
  const env = opts.env ?? process.env;
  const runner = opts.runner ?? realProcessRunner;
  const onPath = (name: string): string | undefined => findExecutable(name, env.PATH);
  const node: ToolReport = {
    name: "node",
    required: true,
    found: true,
    path: process.execPath,
    version: process.version,
    note: "runs Ratchet and learned main.mjs scripts",
  };
  const tools = [
    node,
    await tool(
      "python3",
      onPath("python3"),
      ["--version"],
      true,
      "runs learned main.py scripts",
      env,
      runner,
    ),
    await tool("git", onPath("git"), ["--version"], true, "the runner's worktrees", env, runner),
    await tool(
      CONFINE_FILE,
      findConfine(),
      ["--probe"],
      false,
      "Landlock confinement of Python and JS scripts and runner commands (built by `npm run build` with a C compiler)",
      env,
      runner,
    ),
    await tool(
      "bwrap",
      onPath("bwrap"),
      ["--version"],
      false,
      "bubblewrap: write scope for Python scripts",
      env,
      runner,
    ),
  ];
  const write_protection = await detectSandbox({ env, runner, refresh: true });
  const guarantees = guaranteeReport(confineLauncher(write_protection));
  return { ok: tools.every((t) => !t.required || t.found), tools, write_protection, guarantees };
}
