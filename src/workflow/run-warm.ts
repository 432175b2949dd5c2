/**
 * What `ratchet run` can start before its workflow code is even loaded: the Python sandbox probe
 * and the question to the real `python3` for its prefixes (exec/sandbox.ts, exec/interpreters.ts).
 * Both answers are cached per process and PATH, so the run's own set-up (run-setup.ts) awaits the
 * same probes instead of starting them ~100 ms later, after the workflow chunk has loaded and the
 * store is open. The very same probes: nothing about the confinement changes, only when they start.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { detectSandbox, resolvePython } from "../exec/index.js";

/**
 * Starts the probes when the workflow at `arg` (a file, or a folder holding one) has saved scripts
 * beside it (a `learnings/` folder): a workflow without any needs neither. Never throws.
 */
export function warmRunProbes(arg: string, env: NodeJS.ProcessEnv = process.env): void {
  try {
    const home = statSync(arg).isDirectory() ? arg : dirname(arg);
    if (!existsSync(join(home, "learnings"))) return;
  } catch {
    return;
  }
  detectSandbox({ languages: ["python"], env }).catch(() => {});
  resolvePython(env).catch(() => {});
}
