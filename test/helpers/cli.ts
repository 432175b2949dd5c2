/**
 * End-to-end helpers: run the BUILT `ratchet` CLI as a user would (a child process of
 * `node bin/ratchet.js`), create temp workspaces with `ratchet init`, and look at the store
 * afterwards through a read-only SQLite connection.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BIN = join(ROOT, "bin", "ratchet.js");
export const BUILT_MAIN = join(ROOT, "dist", "cli", "main.js");

/** The built module `bin/ratchet.js` loads (e.g. `dist/bundle/ratchet.cjs`). */
function binTarget(): string | undefined {
  const m = /(?:from\s+|require\()["'](\.\.\/dist\/[^"']+)["']/.exec(readFileSync(BIN, "utf8"));
  return m?.[1] ? resolve(dirname(BIN), m[1]) : undefined;
}

/** Fails clearly when the CLI was not built (`npm test` builds first; else run `npm run build`). */
export function assertBuilt(): void {
  for (const file of [BUILT_MAIN, binTarget()]) {
    if (file !== undefined && !existsSync(file)) {
      throw new Error(
        `the e2e tests drive the built CLI, but ${file} does not exist: run \`npm run build\` first (npm test does)`,
      );
    }
  }
}

export type Marker = Record<string, unknown>;

export interface CliResult {
  /** Exit status (null when killed by a signal). */
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Non-empty stdout lines. */
  lines: string[];
  /** The last stdout line parsed as JSON (undefined when it is not JSON). */
  marker: Marker | undefined;
}

export interface RunOptions {
  cwd: string;
  /** Written to the child's stdin, then stdin is closed (default: stdin is closed at once). */
  input?: string;
  /** Extra environment (undefined deletes a variable). */
  env?: Record<string, string | undefined>;
  /** Kill the child after this long (a hang is a failure, not a timing assertion). Default 60 s. */
  timeoutMs?: number;
  /** Keep stdin open until `release()` (startRatchet only): lets several processes start, then go at once. */
  holdStdin?: boolean;
}

/**
 * The child environment: ours, minus anything that would point the CLI at another store. The
 * workspace daemon (docs/daemon.md) is off unless a test turns it on (`DAEMON_ON`), so the many
 * short-lived test workspaces do not each leave a resident process behind; the daemon's own
 * tests and the daemon variants of the concurrency and crash tests run with it on.
 */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, RATCHET_NO_DAEMON: "1" };
  delete env.RATCHET_DB;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** `env` of a command run with the workspace daemon on (a short idle time: tests leave none behind). */
export const DAEMON_ON: Record<string, string | undefined> = {
  RATCHET_NO_DAEMON: undefined,
  RATCHET_DAEMON_IDLE_MS: "60000",
};

export function parseMarker(stdout: string): Marker | undefined {
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  const last = lines[lines.length - 1];
  if (last === undefined) return undefined;
  try {
    const v = JSON.parse(last) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Marker) : undefined;
  } catch {
    return undefined;
  }
}

/** A running CLI process and the promise of its result. */
export interface RunningCli {
  child: ChildProcess;
  done: Promise<CliResult>;
  /** Everything printed to stdout so far. */
  stdoutSoFar(): string;
  /** Everything printed to stderr so far. */
  stderrSoFar(): string;
  /** With `holdStdin`: writes `input` (or the options' input) to stdin and closes it. */
  release(input?: string): void;
}

/** Starts `node bin/ratchet.js …args` without waiting for it. */
export function startRatchet(args: readonly string[], opts: RunOptions): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: childEnv(opts.env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8");
  child.stderr?.setEncoding("utf8");
  child.stdout?.on("data", (c: string) => {
    stdout += c;
  });
  child.stderr?.on("data", (c: string) => {
    stderr += c;
  });
  child.stdin?.on("error", () => {}); // the CLI may exit before reading its stdin
  const release = (input = opts.input) => {
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  };
  if (!opts.holdStdin) release();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const done = new Promise<CliResult>((resolveDone, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`ratchet ${args.join(" ")} did not finish within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolveDone({
        status,
        signal,
        stdout,
        stderr,
        lines: stdout.split("\n").filter((l) => l.trim() !== ""),
        marker: parseMarker(stdout),
      });
    });
  });
  return { child, done, stdoutSoFar: () => stdout, stderrSoFar: () => stderr, release };
}

/** Runs `ratchet …args` to completion. */
export function ratchet(args: readonly string[], opts: RunOptions): Promise<CliResult> {
  return startRatchet(args, opts).done;
}

/** A temp folder holding a workspace made by `ratchet init`. */
export interface TestWorkspace {
  /** The folder holding `.ratchet/` (the cwd for commands). */
  dir: string;
  /** `<dir>/.ratchet` */
  ratchetDir: string;
  dbPath: string;
  blobsDir: string;
  /** Runs `ratchet …args` in the workspace folder. */
  run(args: readonly string[], opts?: Partial<RunOptions>): Promise<CliResult>;
  /** Writes `value` (JSON-encoded unless a string) to `<dir>/inputs/<name>` and returns the path. */
  input(name: string, value: unknown): string;
  remove(): void;
}

/** Makes an empty temp folder (no workspace). */
export function makeTempDir(prefix = "ratchet-e2e-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Creates a temp folder and runs `ratchet init` in it. */
export async function makeWorkspace(prefix = "ratchet-e2e-"): Promise<TestWorkspace> {
  const dir = makeTempDir(prefix);
  const init = await ratchet(["init"], { cwd: dir });
  if (init.status !== 0 || init.marker?.ok !== true) {
    throw new Error(`ratchet init failed in ${dir} (status ${init.status}): ${init.stderr}${init.stdout}`);
  }
  const ratchetDir = join(dir, ".ratchet");
  let n = 0;
  return {
    dir,
    ratchetDir,
    dbPath: join(ratchetDir, "ratchet.db"),
    blobsDir: join(ratchetDir, "blobs"),
    run: (args, opts = {}) => ratchet(args, { cwd: dir, ...opts }),
    input(name, value) {
      const folder = join(dir, "inputs");
      mkdirSync(folder, { recursive: true });
      const path = join(folder, `${n++}-${name}`);
      writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Opens the store read-only, runs `fn`, closes it. */
export function withDb<T>(ws: { dbPath: string }, fn: (db: Database.Database) => T): T {
  const db = new Database(ws.dbPath, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Rows of a query on the store (read-only). */
export function query<T = Record<string, unknown>>(
  ws: { dbPath: string },
  sql: string,
  ...params: unknown[]
): T[] {
  return withDb(ws, (db) => db.prepare(sql).all(...params) as T[]);
}

export const TABLES = ["plans", "steps", "step_logs", "deviations", "skills", "metrics", "events"] as const;

export interface StoreSnapshot {
  counts: Record<(typeof TABLES)[number], number>;
  /** step_id → status, for every step. */
  steps: Record<string, string>;
  /** plan_id → "status revision_count/max_revisions". */
  plans: Record<string, string>;
  projects: number;
  lastEventId: number;
}

/** Row counts, every step's status and every plan's status/budget. */
export function snapshot(ws: { dbPath: string }): StoreSnapshot {
  return withDb(ws, (db) => {
    const counts = {} as StoreSnapshot["counts"];
    for (const t of TABLES)
      counts[t] = (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n;
    const steps: Record<string, string> = {};
    for (const r of db.prepare("SELECT step_id, status FROM steps ORDER BY step_id").all() as {
      step_id: string;
      status: string;
    }[])
      steps[r.step_id] = r.status;
    const plans: Record<string, string> = {};
    for (const r of db
      .prepare("SELECT plan_id, status, revision_count, max_revisions FROM plans ORDER BY plan_id")
      .all() as { plan_id: string; status: string; revision_count: number; max_revisions: number }[])
      plans[r.plan_id] = `${r.status} ${r.revision_count}/${r.max_revisions}`;
    const projects = (db.prepare("SELECT COUNT(*) AS n FROM projects").get() as { n: number }).n;
    const lastEventId = (db.prepare("SELECT COALESCE(MAX(id), 0) AS id FROM events").get() as { id: number })
      .id;
    return { counts, steps, plans, projects, lastEventId };
  });
}

/** Counts of steps by status. */
export function stepsByStatus(ws: { dbPath: string }, planIds?: readonly string[]): Record<string, number> {
  const rows = query<{ status: string; plan_id: string }>(ws, "SELECT status, plan_id FROM steps");
  const out: Record<string, number> = {};
  for (const r of rows) {
    if (planIds && !planIds.includes(r.plan_id)) continue;
    out[r.status] = (out[r.status] ?? 0) + 1;
  }
  return out;
}

/** Counts of events by type. */
export function eventsByType(ws: { dbPath: string }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of query<{ type: string; n: number }>(
    ws,
    "SELECT type, COUNT(*) AS n FROM events GROUP BY type",
  ))
    out[r.type] = r.n;
  return out;
}

/** Publishes a plan from a JSON value; returns the publish marker (throws unless it succeeded). */
export async function publish(
  ws: TestWorkspace,
  plan: unknown,
  opts: Partial<RunOptions> = {},
): Promise<{ plan_id: string; step_ids: string[]; review_step_id: string; marker: Marker }> {
  const r = await ws.run(["plan", "publish", "-"], { input: JSON.stringify(plan), ...opts });
  if (r.status !== 0 || r.marker?.ok !== true)
    throw new Error(`publish failed (status ${r.status}): ${r.stderr}${r.stdout}`);
  const m = r.marker;
  return {
    plan_id: m.plan_id as string,
    step_ids: m.step_ids as string[],
    review_step_id: m.review_step_id as string,
    marker: m,
  };
}

/** Runs a write flow with its JSON input on stdin and expects exit 0 with an `ok:true` marker. */
export async function ok(ws: TestWorkspace, args: readonly string[], input: unknown): Promise<Marker> {
  const r = await ws.run([...args, "-"], { input: JSON.stringify(input) });
  if (r.status !== 0 || r.marker?.ok !== true)
    throw new Error(`ratchet ${args.join(" ")} failed (status ${r.status}): ${r.stderr}${r.stdout}`);
  return r.marker;
}

/** Live (non-zombie) processes whose process group is `pgid` (Linux /proc). */
export function liveGroupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = rest[0];
    const pgrp = Number(rest[2]);
    if (pgrp === pgid && state !== "Z" && state !== "X") out.push(Number(name));
  }
  return out;
}

/** Polls `cond` every `everyMs` until it is true; throws after `timeoutMs` (an upper bound only). */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Every row of every ledger table (and the projects), for "nothing was written" checks on small stores. */
export function dump(ws: { dbPath: string }): Record<string, unknown[]> {
  return withDb(ws, (db) => {
    const out: Record<string, unknown[]> = {};
    for (const t of [...TABLES, "projects"]) out[t] = db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all();
    return out;
  });
}

/** Names under a folder, recursively (relative paths), sorted. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      out.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  if (existsSync(dir)) walk("");
  return out.sort();
}
