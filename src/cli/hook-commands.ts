/**
 * `ratchet hook user-prompt`: the prompt hook's entry. It runs on every prompt a user types, so
 * it is bundled on its own (dist/bundle/hook.cjs, loaded by bin/ratchet.js before anything else)
 * and imports only better-sqlite3, the word store and the redactor — no commander, no ledger. On
 * PostgreSQL (a `postgres://` URL) it loads the `pg` store lazily (`words/hook-pg.ts`, a chunk of
 * its own), so the SQLite hook never does.
 * Always exit 0; stdout stays empty except the one source hint; failures go to the error log.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import {
  type HookStore,
  hookDbPath,
  hookErrorLog,
  parsePayload,
  recordPrompt,
  sqliteHookStore,
} from "../provenance/words/hook.js";
import { skipReason } from "../provenance/words/prompt-rules.js";
import { isPostgresUrl, redactUrl } from "../store/postgres/url.js";

/** The database's busy timeout in the hook (spec §3.1: 2 s). */
export const HOOK_BUSY_TIMEOUT_MS = 2000;
/** How long the hook waits for its JSON on stdin before giving up (silently, logged). */
export const HOOK_STDIN_TIMEOUT_MS = 2000;
/** The most hook input read (a prompt larger than this is not the user's typing). */
export const HOOK_MAX_INPUT_BYTES = 4 * 1024 * 1024;

export interface HookIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: (line: string) => void;
  env: Record<string, string | undefined>;
  cwd: string;
}

function readStdin(stdin: HookIo["stdin"]): Promise<string> {
  return new Promise((resolve, reject) => {
    if (stdin.isTTY) {
      reject(new Error("no hook JSON on stdin (stdin is a terminal)"));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no complete hook JSON on stdin within ${HOOK_STDIN_TIMEOUT_MS} ms`));
    }, HOOK_STDIN_TIMEOUT_MS);
    const onData = (c: Buffer | string) => {
      const b = typeof c === "string" ? Buffer.from(c) : c;
      size += b.length;
      if (size > HOOK_MAX_INPUT_BYTES) {
        cleanup();
        reject(new Error(`hook input larger than ${HOOK_MAX_INPUT_BYTES} bytes`));
        return;
      }
      chunks.push(b);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const onError = (e: Error) => {
      cleanup();
      reject(e);
    };
    function cleanup() {
      clearTimeout(timer);
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onError);
      (stdin as NodeJS.ReadableStream & { pause?: () => void }).pause?.();
    }
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.on("error", onError);
  });
}

function logLine(path: string, message: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, `${new Date().toISOString()} hook user-prompt: ${message.replace(/\s+/g, " ")}\n`);
  } catch {
    // The log itself failed: the hook still must not fail or print.
  }
}

/** A message without the database URL's password. */
function redactMessage(message: string, dbPath: string | undefined): string {
  return dbPath && isPostgresUrl(dbPath) ? message.split(dbPath).join(redactUrl(dbPath)) : message;
}

/** `hook user-prompt [--db PATH]`: always resolves 0. */
export async function hookUserPrompt(args: readonly string[], io: HookIo): Promise<number> {
  let dbPath: string | undefined;
  try {
    const i = args.indexOf("--db");
    const db = i >= 0 ? args[i + 1] : args.find((a) => a.startsWith("--db="))?.slice("--db=".length);
    // Known before the payload is read, so an unreadable payload is logged beside the database.
    dbPath = hookDbPath({ ...(db ? { db } : {}), env: io.env, dirs: [io.cwd] });
    const payload = parsePayload(await readStdin(io.stdin));
    if (payload.cwd) dbPath = hookDbPath({ ...(db ? { db } : {}), env: io.env, dirs: [payload.cwd, io.cwd] });
    if (!dbPath) {
      logLine(hookErrorLog(io.env), `no Ratchet workspace for ${payload.cwd ?? io.cwd}: prompt not recorded`);
      return 0;
    }
    // A prompt that is skipped never loads the SQLite driver.
    if (skipReason(payload.prompt ?? "", io.env)) return 0;
    const path = dbPath;
    let open: () => HookStore;
    if (isPostgresUrl(path)) {
      const { pgHookStore } = await import("../provenance/words/hook-pg.js");
      open = () => pgHookStore(path);
    } else {
      // require, not import(): the bundle is CommonJS and import() would start Node's ESM loader.
      const Database = createRequire(import.meta.url)("better-sqlite3") as typeof import("better-sqlite3");
      open = () => {
        const db = new Database(path, { fileMustExist: true, timeout: HOOK_BUSY_TIMEOUT_MS });
        // As the store's own connections: WAL commits without an fsync each (durable at checkpoint).
        db.pragma("synchronous = NORMAL");
        return sqliteHookStore(db);
      };
    }
    const outcome = recordPrompt({ payload, env: io.env, open });
    const where = isPostgresUrl(path) ? redactUrl(path) : path;
    if (outcome.status === "error") logLine(hookErrorLog(io.env, dbPath), `${where}: ${outcome.message}`);
    else if (outcome.status === "recorded" && outcome.hint) io.stdout(`${outcome.hint}\n`);
  } catch (e) {
    logLine(hookErrorLog(io.env, dbPath), redactMessage((e as Error)?.message ?? String(e), dbPath));
  }
  return 0;
}

/** The bundle's entry (bin/ratchet.js calls it for `ratchet hook user-prompt …`). */
export function hookMain(argv: readonly string[] = process.argv): Promise<number> {
  return hookMainArgs(argv.slice(4));
}

/** `hook user-prompt <args>` on this process's stdin, stdout and environment. */
export function hookMainArgs(args: readonly string[]): Promise<number> {
  return hookUserPrompt(args, {
    stdin: process.stdin,
    stdout: (s) => {
      try {
        process.stdout.write(s);
      } catch {
        // a closed stdout: nothing to report, nothing to fail
      }
    },
    env: process.env,
    cwd: process.cwd(),
  });
}
