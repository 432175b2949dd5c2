import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";

/** The folder name of a workspace. */
export const WORKSPACE_DIR = ".ratchet";
export const DB_FILE = "ratchet.db";

export interface Workspace {
  /** The folder that holds `.ratchet/` (or the db's folder when `--db` points elsewhere). */
  root: string;
  /** The `.ratchet/` folder (or the db's folder). */
  dir: string;
  dbPath: string;
  blobsDir: string;
}

function fromDir(dir: string): Workspace {
  return { root: dirname(dir), dir, dbPath: join(dir, DB_FILE), blobsDir: join(dir, "blobs") };
}

/** The database named by the environment: `RATCHET_DB`, else the original's `ORCH_DB`. */
export function envDb(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.RATCHET_DB || env.ORCH_DB || undefined;
}

/** The workspace of a database file given by `--db` or `RATCHET_DB`. Its folder holds the blobs. */
export function workspaceForDb(dbPath: string): Workspace {
  const abs = resolve(dbPath);
  const dir = dirname(abs);
  return { root: dirname(dir), dir, dbPath: abs, blobsDir: join(dir, "blobs") };
}

/** Walks up from `start` to the first folder holding `.ratchet/`. */
export function findWorkspace(start: string): Workspace | undefined {
  let cur = resolve(start);
  for (;;) {
    const candidate = join(cur, WORKSPACE_DIR);
    if (existsSync(candidate) && statSync(candidate).isDirectory()) return fromDir(candidate);
    const up = dirname(cur);
    if (up === cur) return undefined;
    cur = up;
  }
}

/**
 * Resolves the workspace for a command: `--db` flag, then `RATCHET_DB`, then a walk up from `cwd`.
 * @throws workspace_not_found when none is found.
 */
export function resolveWorkspace(opts: { db?: string; env?: NodeJS.ProcessEnv; cwd?: string }): Workspace {
  const env = opts.env ?? process.env;
  const db = opts.db ?? envDb(env);
  if (db) return workspaceForDb(db);
  const cwd = opts.cwd ?? process.cwd();
  const ws = findWorkspace(cwd);
  if (!ws) {
    throw new RatchetError(
      ErrorCode.WorkspaceNotFound,
      `no Ratchet workspace in ${cwd} or any parent folder: run \`ratchet init\` first, or pass --db / RATCHET_DB`,
      { cwd },
    );
  }
  return ws;
}

/** Creates `.ratchet/` in `dir` (idempotent) and returns it. */
export function initWorkspace(dir: string): { workspace: Workspace; created: boolean } {
  const wsDir = join(resolve(dir), WORKSPACE_DIR);
  const created = !existsSync(wsDir);
  mkdirSync(join(wsDir, "blobs"), { recursive: true });
  const ignore = join(wsDir, ".gitignore");
  if (!existsSync(ignore)) writeFileSync(ignore, "*\n");
  return { workspace: fromDir(wsDir), created };
}
