/**
 * The prompt hook's store on PostgreSQL: a `PgStore` opened lazily, only when the workspace's store
 * is a `postgres://` URL, so the SQLite hook never loads the `pg` bridge (the hook bundle imports
 * this file with `import()`, which makes it a chunk of its own). The hook's bounds hold: the
 * statement timeout (and the wait for the workspace write lock) is {@link HOOK_PG_STATEMENT_TIMEOUT_MS},
 * connecting {@link HOOK_PG_CONNECT_TIMEOUT_MS}; a failure is a value the hook logs, exit 0.
 */
import { LedgerEvent } from "../../ledger/events.js";
import { PgStore } from "../../store/postgres/pg-store.js";
import type { HookStore } from "./hook.js";
import { SqlWordStore } from "./store.js";

/** The hook's statement timeout on PostgreSQL (spec §3.1's 2 s busy timeout). */
export const HOOK_PG_STATEMENT_TIMEOUT_MS = 2000;
/** How long the hook may take to connect to PostgreSQL. */
export const HOOK_PG_CONNECT_TIMEOUT_MS = 3000;

/** Opens the hook's store on the PostgreSQL database at `url` (migrations applied, as every open does). */
export function pgHookStore(url: string, now?: () => string): HookStore {
  const opened = PgStore.open(url, {
    statementTimeoutMs: HOOK_PG_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: HOOK_PG_CONNECT_TIMEOUT_MS,
    applicationName: "ratchet-hook",
  });
  const store = now ? new PgStore(opened.pg, now) : opened;
  return {
    words: new SqlWordStore(store, now),
    appendEvent: (e) => {
      store.appendEvent({
        entityKind: "utterance",
        entityId: String(e.utteranceId),
        planId: e.planId,
        type: LedgerEvent.UtteranceRecorded,
        payload: e.payload,
      });
    },
    close: () => store.close(),
  };
}
