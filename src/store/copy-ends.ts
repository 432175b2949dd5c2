/**
 * The two ends of `store copy` / `store verify` as the user names them: a `postgres://` URL, a
 * SQLite file, or a workspace folder. Each is opened with its store's own opener, which applies
 * that store's migrations.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { CopyEnd } from "./copy.js";
import { PgStore } from "./postgres/pg-store.js";
import { isPostgresUrl, redactUrl } from "./postgres/url.js";
import { SqliteStore } from "./sqlite/sqlite-store.js";
import { DB_FILE, initWorkspace, WORKSPACE_DIR } from "./workspace.js";

/** Which argument an end is: the source (must exist) or the target (created when missing). */
export type EndRole = "from" | "to";

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

/**
 * The SQLite file an argument names: a file; a folder holding `.ratchet/` (or being one, or holding
 * `ratchet.db`); for the target, a path that does not exist yet is created — a file when it ends in
 * `.db`, else a workspace folder (`<dir>/.ratchet/ratchet.db`).
 * @throws workspace_not_found naming the argument when the source is not there.
 */
export function sqlitePathOf(arg: string, role: EndRole): string {
  const p = resolve(arg);
  if (isDir(p)) {
    if (isDir(join(p, WORKSPACE_DIR))) return join(realpathSync(join(p, WORKSPACE_DIR)), DB_FILE);
    if (existsSync(join(p, DB_FILE))) return join(realpathSync(p), DB_FILE);
    if (role === "to") return initWorkspace(p).workspace.dbPath;
  } else if (existsSync(p)) {
    return realpathSync(p);
  } else if (role === "to") {
    return p.endsWith(".db") ? p : initWorkspace(p).workspace.dbPath;
  }
  throw new RatchetError(
    ErrorCode.WorkspaceNotFound,
    `store ${role}: ${arg} is neither a postgres:// URL, a SQLite file nor a folder holding a Ratchet workspace`,
    { field: role, path: p },
  );
}

/**
 * Opens one end. PostgreSQL keeps its blobs in its `blobs` table; a SQLite file in the `blobs/`
 * folder beside it (the workspace's `.ratchet/blobs/`).
 * @throws workspace_not_found when the server or the file cannot be reached.
 */
export function openCopyEnd(arg: string, role: EndRole): CopyEnd {
  if (isPostgresUrl(arg)) {
    const store = PgStore.open(arg);
    return { label: redactUrl(arg), store, blobs: { kind: "table", sql: store.sql } };
  }
  const path = sqlitePathOf(arg, role);
  const store = SqliteStore.open(path, { create: role === "to" });
  return { label: path, store, blobs: { kind: "folder", dir: join(dirname(path), "blobs") } };
}
