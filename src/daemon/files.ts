/**
 * The daemon's files in the workspace folder and the checks both ends make before trusting them:
 * the folder is the caller's own (owned by its uid, writable by nobody else), the socket is a
 * socket owned by the same uid. Node built-ins only (this is part of the client bundle).
 */
import { type Stats, statSync } from "node:fs";

/** The uid of this process (POSIX); undefined where there is none (Windows: no daemon). */
export function myUid(): number | undefined {
  return typeof process.getuid === "function" ? process.getuid() : undefined;
}

/** Whether `st` is owned by `uid` and writable by neither its group nor others. */
export function ownerOnly(st: Stats, uid: number): boolean {
  return st.uid === uid && (st.mode & 0o022) === 0;
}

/** Whether the folder at `dir` may hold this user's daemon socket (see {@link ownerOnly}). */
export function trustedFolder(dir: string, uid: number): boolean {
  try {
    const st = statSync(dir);
    return st.isDirectory() && ownerOnly(st, uid);
  } catch {
    return false;
  }
}

/**
 * The build id of the daemon code at `file` (dist/bundle/daemon.cjs): its inode, size and
 * modification time in ns. A rebuild swaps in a new bundle folder (scripts/bundle.mjs), so every build
 * has a new id; undefined when the file is missing.
 */
export function buildIdOf(file: string): string | undefined {
  try {
    // Whole numbers only (mtime in ns), so native/client.c computes the very same string.
    const st = statSync(file, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return undefined;
  }
}
