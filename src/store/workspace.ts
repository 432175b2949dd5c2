import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ErrorCode, parseJsonStrict, RatchetError } from "../core/index.js";
import { isPostgresUrl } from "./postgres/url.js";

/** The folder name of a workspace. */
export const WORKSPACE_DIR = ".ratchet";
export const DB_FILE = "ratchet.db";

export interface Workspace {
  /** The folder that holds `.ratchet/` (or the db's folder when `--db` points elsewhere). */
  root: string;
  /** The `.ratchet/` folder (or the db's folder). */
  dir: string;
  /** The SQLite file; for a PostgreSQL store, its URL (SQLite-only code refuses it clearly). */
  dbPath: string;
  blobsDir: string;
  /**
   * Set when the store is PostgreSQL (`postgres://…` from `--db`, `RATCHET_DB`, or `store.url` in
   * `.ratchet/config.json`). The workspace folder then holds only blobs and run temp folders.
   */
  storeUrl?: string;
}

function fromDir(dir: string): Workspace {
  const ws: Workspace = { root: dirname(dir), dir, dbPath: join(dir, DB_FILE), blobsDir: join(dir, "blobs") };
  const url = configuredStoreUrl(dir);
  return url ? { ...ws, dbPath: url, storeUrl: url } : ws;
}

/**
 * `store.url` of `<dir>/config.json` (absent file or key: undefined).
 * @throws schema_violation naming `store.url` when it is not a `postgres://` / `postgresql://` URL.
 */
export function configuredStoreUrl(dir: string): string | undefined {
  const path = join(dir, "config.json");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  const json = parseJsonStrict(text, path, { file: path }) as { store?: unknown } | null;
  const store = json && typeof json === "object" ? json.store : undefined;
  if (store === undefined) return undefined;
  const bad = (field: string, message: string): never => {
    throw new RatchetError(ErrorCode.SchemaViolation, `${path}: ${field}: ${message}`, { field, file: path });
  };
  if (store === null || typeof store !== "object" || Array.isArray(store))
    return bad("store", "must be an object");
  for (const k of Object.keys(store)) if (k !== "url") bad(`store.${k}`, "unknown field (allowed: url)");
  const url = (store as { url?: unknown }).url;
  if (url === undefined) return undefined;
  if (typeof url !== "string" || !isPostgresUrl(url))
    bad("store.url", "must be a postgres:// or postgresql:// URL (omit it for the SQLite file)");
  return url as string;
}

/** The database named by the environment: `RATCHET_DB`, else the original's `ORCH_DB`. */
export function envDb(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.RATCHET_DB || env.ORCH_DB || undefined;
}

/**
 * The workspace of a database given by `--db` or `RATCHET_DB`: a SQLite file (its folder holds the
 * blobs), or a PostgreSQL URL (the workspace found walking up from `cwd` holds the blobs, else
 * `<cwd>/.ratchet/`, created on first use).
 */
export function workspaceForDb(dbPath: string, cwd: string = process.cwd()): Workspace {
  if (isPostgresUrl(dbPath)) {
    const local = findWorkspace(cwd);
    const dir = local?.dir ?? join(resolve(cwd), WORKSPACE_DIR);
    return { root: dirname(dir), dir, dbPath, blobsDir: join(dir, "blobs"), storeUrl: dbPath };
  }
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
  const cwd = opts.cwd ?? process.cwd();
  if (db) return workspaceForDb(db, cwd);
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
