/**
 * The real interpreters behind `python3` and `node`. A `python3` on PATH is often a version
 * manager's shim (pyenv: a bash script that runs `pyenv exec`), which needs the whole manager
 * folder and reads the user's home; a confined script runs the real interpreter instead, and its
 * read roots are that interpreter's prefixes.
 */
import { realpathSync } from "node:fs";
import { dirname } from "node:path";
import { buildEnv } from "./env.js";
import { PROBE_TIMEOUT_MS } from "./limits.js";
import { realProcessRunner } from "./process-runner.js";
import { nodePrefix } from "./read-roots.js";
import { findExecutable } from "./sandbox.js";
import type { ProcessRunner } from "./types.js";

/** One interpreter: the file to run and the folders it reads (its prefixes). */
export interface Interpreter {
  executable: string;
  roots: string[];
}

const pythonCache = new Map<string, Promise<Interpreter | undefined>>();

const PYTHON_QUERY =
  "import json,sys;print(json.dumps([sys.executable,sys.prefix,sys.base_prefix,sys.exec_prefix,sys.base_exec_prefix]))";

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * The real `python3` of `env.PATH` (asking it for `sys.executable` and its prefixes; cached per
 * PATH). Undefined when there is no `python3`. When the answer cannot be read, the PATH entry
 * itself with its folder.
 */
export function resolvePython(
  env: NodeJS.ProcessEnv = process.env,
  runner: ProcessRunner = realProcessRunner,
): Promise<Interpreter | undefined> {
  const key = env.PATH ?? "";
  const cached = pythonCache.get(key);
  if (cached) return cached;
  const found = (async (): Promise<Interpreter | undefined> => {
    const onPath = findExecutable("python3", env.PATH);
    if (!onPath) return undefined;
    const r = await runner.run({
      command: onPath,
      args: ["-c", PYTHON_QUERY],
      env: buildEnv({ inherit: "minimal", base: env }),
      timeoutMs: PROBE_TIMEOUT_MS,
      maxCaptureBytes: 64 * 1024,
    });
    try {
      const [exe, ...prefixes] = JSON.parse(r.stdout.trim()) as string[];
      if (r.exitCode === 0 && typeof exe === "string" && exe.startsWith("/")) {
        // As Python reports it (`…/bin/python3`, not its `python3.11` target); the roots are real paths.
        return { executable: exe, roots: [...new Set([dirname(real(exe)), ...prefixes.map(real)])] };
      }
    } catch {
      // not the answer we asked for: fall back to the PATH entry
    }
    return { executable: onPath, roots: [dirname(real(onPath))] };
  })();
  pythonCache.set(key, found);
  return found;
}

/** This Node: its executable and its prefix. */
export function resolveNode(): Interpreter {
  return { executable: process.execPath, roots: [nodePrefix(process.execPath)] };
}
