/**
 * The prompt hook (`ratchet hook user-prompt`, spec §3.1): one `UserPromptSubmit` payload → at
 * most one utterance, origin `hook`, attributed to the registered project whose repo holds the
 * payload's `cwd` and to that project's newest IN_PROGRESS plan. It never throws: every outcome
 * is a value the entry turns into silence (or the one source hint) and exit 0. Secrets are
 * masked before storing (the project's "secrets redacted everywhere" rule beats "verbatim").
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Redactor } from "../../core/redact.js";
// Behind the store's door on purpose: the door loads the SQLite store and its migrations, which
// the hook (run on every prompt) does not need.
import { LedgerEvent } from "../../ledger/events.js";
import { isPostgresUrl } from "../../store/postgres/url.js";
import { type SqliteLike, SqliteSqlPort } from "../../store/sql.js";
import { envDb, findWorkspace } from "../../store/workspace.js";
import { skipReason, sourceHint, sourceKind } from "./prompt-rules.js";
import { SqlWordStore } from "./store.js";

/** What the hook did. `hint` is the only text it may print. */
export type HookOutcome =
  | { status: "recorded"; utteranceId: number; project: string | null; planId: string | null; hint?: string }
  | { status: "skipped"; reason: string }
  | { status: "no_workspace" }
  | { status: "error"; message: string };

/** The payload fields the hook reads (Claude Code's; Codex CLI sends the same names). */
export interface PromptPayload {
  session_id?: string;
  transcript_path?: string;
  cwd?: string;
  hook_event_name?: string;
  prompt?: string;
}

/** Parses the hook's stdin. @throws Error naming what is wrong. */
export function parsePayload(text: string): PromptPayload {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`hook input is not JSON (${(e as Error).message})`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v))
    throw new Error("hook input is not a JSON object");
  const o = v as Record<string, unknown>;
  for (const k of ["session_id", "transcript_path", "cwd", "hook_event_name", "prompt"])
    if (o[k] !== undefined && o[k] !== null && typeof o[k] !== "string")
      throw new Error(`hook input field \`${k}\` is not a string`);
  return o as PromptPayload;
}

/**
 * The database the hook writes: `--db`, RATCHET_DB/ORCH_DB, else `.ratchet/` found walking up — a
 * SQLite file that exists, or a PostgreSQL URL (`store.url` of the workspace's config.json).
 */
export function hookDbPath(opts: {
  db?: string;
  env: Record<string, string | undefined>;
  dirs: readonly string[];
}): string | undefined {
  const given = opts.db ?? envDb(opts.env as NodeJS.ProcessEnv);
  if (given) return isPostgresUrl(given) || existsSync(given) ? given : undefined;
  for (const d of opts.dirs) {
    const ws = findWorkspace(d);
    if (ws && (ws.storeUrl !== undefined || existsSync(ws.dbPath))) return ws.dbPath;
  }
  return undefined;
}

/**
 * The error log: RATCHET_HOOK_ERRORS, else PROVLEDGER_HOOK_ERRORS, else `hook-errors.log` beside
 * the database, else `~/.ratchet/hook-errors.log`.
 */
export function hookErrorLog(env: Record<string, string | undefined>, dbPath?: string): string {
  const named = env.RATCHET_HOOK_ERRORS || env.PROVLEDGER_HOOK_ERRORS;
  if (named) return named;
  // A PostgreSQL URL has no folder beside it: the home log.
  if (dbPath && !isPostgresUrl(dbPath)) return join(dbPath, "..", "hook-errors.log");
  return join(homedir(), ".ratchet", "hook-errors.log");
}

/** What the hook writes through: the word store, the one event, and closing the connection. */
export interface HookStore {
  words: SqlWordStore;
  /** Appends the `utterance_recorded` event inside the open write transaction. */
  appendEvent(e: {
    at: string;
    utteranceId: number;
    planId: string | null;
    payload: Record<string, unknown>;
  }): void;
  close(): void;
}

/**
 * The hook's store over its own SQLite connection: no migrations, no ledger, one `BEGIN IMMEDIATE`
 * (the connection's busy timeout bounds the wait for the write lock).
 */
export function sqliteHookStore(
  db: SqliteLike & { close(): unknown; transaction<T>(fn: () => T): { immediate(): T } },
  now?: () => string,
): HookStore {
  const sql = new SqliteSqlPort(db);
  const words = new SqlWordStore(
    { sql, tx: (fn) => (db.inTransaction ? fn() : db.transaction(fn).immediate()) },
    now,
  );
  return {
    words,
    appendEvent: (e) => {
      sql.run(
        "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES (?, 'utterance', ?, ?, ?, ?)",
        [e.at, String(e.utteranceId), e.planId, LedgerEvent.UtteranceRecorded, JSON.stringify(e.payload)],
      );
    },
    close: () => {
      db.close();
    },
  };
}

export interface HookDeps {
  payload: PromptPayload;
  env: Record<string, string | undefined>;
  /** Opens the hook's store on the database (the entry passes a 2 s busy timeout on SQLite). */
  open: () => HookStore;
  now?: () => Date;
}

/** Records the payload's prompt (or says why not). Never throws. */
export function recordPrompt(deps: HookDeps): HookOutcome {
  const prompt = deps.payload.prompt ?? "";
  const skip = skipReason(prompt, deps.env);
  if (skip) return { status: "skipped", reason: skip };
  let hs: HookStore | undefined;
  try {
    hs = deps.open();
    const { words: store } = hs;
    const events = hs;
    const text = new Redactor().addFromEnv(deps.env).redact(prompt);
    const occurredAt = (deps.now ?? (() => new Date()))().toISOString();
    const cwd = deps.payload.cwd;
    const outcome = store.write(() => {
      const project = cwd ? (store.projectForPath(cwd) ?? null) : null;
      const planId = project ? (store.newestOpenPlan(project) ?? null) : null;
      const id = store.recordUtterance({
        session_id: deps.payload.session_id || null,
        project,
        plan_id: planId,
        text,
        occurred_at: occurredAt,
        origin: "hook",
      });
      events.appendEvent({
        at: occurredAt,
        utteranceId: id,
        planId,
        payload: { origin: "hook", project, chars: text.length },
      });
      return { id, project, planId };
    });
    const kind = sourceKind(text);
    return {
      status: "recorded",
      utteranceId: outcome.id,
      project: outcome.project,
      planId: outcome.planId,
      ...(kind ? { hint: sourceHint(kind, outcome.id) } : {}),
    };
  } catch (e) {
    return { status: "error", message: (e as Error).message ?? String(e) };
  } finally {
    try {
      hs?.close();
    } catch {
      // closing a broken handle: nothing more to do
    }
  }
}
