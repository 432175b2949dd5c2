/**
 * `plans.session_id` at publish: the session the plan was published from — the session of the
 * newest prompt the hook recorded for the plan's project within {@link SESSION_WINDOW_MS}, else a
 * session id the host put in the environment ({@link SESSION_ENV}, first set wins), else null.
 */
import { iso } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import { SqlWordStore } from "./store.js";

/** How recent the hook's prompt must be to name the publishing session. */
export const SESSION_WINDOW_MS = 30 * 60 * 1000;

/** Environment variables read, in order, when no recent hook prompt names the session. */
export const SESSION_ENV = [
  "RATCHET_SESSION_ID",
  "PROVLEDGER_SESSION_ID",
  "CLAUDE_SESSION_ID",
  "CLAUDE_CODE_SESSION_ID",
  "CODEX_SESSION_ID",
  "CODEX_THREAD_ID",
] as const;

/** The publishing session (see the file's note), or null. */
export function publishSession(
  words: SqlWordStore,
  project: string | null,
  nowMs: number,
  env: Record<string, string | undefined> = process.env,
): string | null {
  if (project) {
    const s = words.recentHookSession(project, iso(nowMs - SESSION_WINDOW_MS));
    if (s) return s;
  }
  for (const k of SESSION_ENV) {
    const v = env[k]?.trim();
    if (v) return v.slice(0, 200);
  }
  return null;
}

/** Sets the new plan's `session_id` inside publish's transaction; returns it (null: none known). */
export function recordPlanSession(l: LedgerCore, planId: string, project: string | null): string | null {
  const words = new SqlWordStore(l.store);
  const session = publishSession(words, project && project !== "none" ? project : null, l.clock.now());
  if (session !== null)
    l.store.sql.run("UPDATE plans SET session_id = ? WHERE plan_id = ?", [session, planId]);
  return session;
}
