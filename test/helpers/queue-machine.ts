/**
 * Folders standing in for machines that share one PostgreSQL database with a queue configured
 * (the queue e2e tests), and small reads of that database.
 */
import { cpSync } from "node:fs";
import { join } from "node:path";
import { PgStore } from "../../src/store/index.js";
import { type CliResult, makeTempDir, ROOT, type RunningCli, ratchet, startRatchet } from "./cli.js";

const FIXTURES = join(ROOT, "test", "fixtures", "workflows");

export interface QueueMachineOptions {
  /** Temp-folder prefix. */
  prefix: string;
  /** Environment every command of these machines gets (beside the store and the queue). */
  env?: Record<string, string | undefined>;
  /** Bound of a command run to its end. */
  runTimeoutMs: number;
  /** Folders made (removed by the caller) and processes started (killed by the caller). */
  dirs: string[];
  running: RunningCli[];
}

/**
 * A machine factory: `machine(url, workflows, extraEnv)` makes a folder with copies of the named
 * fixture workflows (the enqueuer's) or none (a worker's), and commands run in it on `url`.
 */
export function queueMachines(o: QueueMachineOptions) {
  return (url: string, workflows: readonly string[] = [], extraEnv: Record<string, string> = {}) => {
    const dir = makeTempDir(o.prefix);
    o.dirs.push(dir);
    for (const name of workflows)
      cpSync(join(FIXTURES, name), join(dir, "workflows", name), { recursive: true });
    const env = { RATCHET_DB: url, RATCHET_QUEUE: "1", RATCHET_MODEL: undefined, ...o.env, ...extraEnv };
    return {
      dir,
      wf: (name: string) => join(dir, "workflows", name),
      run: (args: readonly string[], more: Record<string, string | undefined> = {}) =>
        ratchet(args, { cwd: dir, env: { ...env, ...more }, timeoutMs: o.runTimeoutMs }),
      start: (args: readonly string[]) => {
        const r = startRatchet(args, { cwd: dir, env, timeoutMs: 280_000 });
        o.running.push(r);
        return r;
      },
    };
  };
}

/** Rows of one query on the database at `url` (a session of its own). */
export function pgRows<R>(url: string, sql: string, params: string[] = []): R[] {
  const s = PgStore.open(url);
  try {
    return s.pg.query<R>(sql, params).rows;
  } finally {
    s.close();
  }
}

/** A command's stdout as JSON, or an error showing what it printed. */
export function cliJson<T>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}
