/**
 * Orchestrator versions: the built-in v0 and stored documents titled `orchestrator:main` tagged
 * `orchestrator_code`. The highest version that is not disabled wins; a version that fails
 * {@link ORCHESTRATOR_MAX_CONSECUTIVE_FAILURES} times in a row is disabled with the reason, and the
 * next lower one is used (the built-in v0 is never disabled).
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import { DocKind, type DocumentRow, type Documents, parseMeta, parseTags } from "./documents.js";
import { ThreadEvent } from "./events.js";
import { ORCHESTRATOR_MAX_CONSECUTIVE_FAILURES } from "./limits.js";
import { DEFAULT_ORCHESTRATOR, DEFAULT_ORCHESTRATOR_VERSION } from "./orchestrator-default.js";
import type { ThreadStore } from "./thread-store.js";
import type { VmFactory } from "./vm.js";

export const ORCHESTRATOR_TITLE = "orchestrator:main";
export const ORCHESTRATOR_TAG = "orchestrator_code";

export interface OrchestratorVersion {
  version: number;
  code: string;
  /** `builtin` or the document id. */
  source: string;
  consecutive_failures: number;
  total_failures: number;
  disabled_reason: string | null;
  last_error: string | null;
  /** Who wrote it: `builtin`, `person` (`ratchet orchestrator save`), `mission` (an accepted proposal). */
  origin: "builtin" | "person" | "mission";
}

/** The version a thread starts with, and why that one. */
export type ActiveVersion = OrchestratorVersion & { why: string };

interface FailureRow {
  version: number;
  consecutive: number;
  total: number;
  last_error: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
}

export class OrchestratorVersions {
  constructor(
    readonly threads: ThreadStore,
    readonly docs: Documents,
  ) {}

  #failures(version: number): FailureRow | undefined {
    return this.threads.sql("SELECT * FROM orchestrator_failures WHERE version = ?").get(version) as
      | FailureRow
      | undefined;
  }

  #stored(): DocumentRow[] {
    return this.docs
      .list(DocKind.Orchestrator)
      .filter((d) => d.title === ORCHESTRATOR_TITLE && parseTags(d).includes(ORCHESTRATOR_TAG));
  }

  /** Every version, highest first, the built-in last. */
  list(): OrchestratorVersion[] {
    const out: OrchestratorVersion[] = [];
    const seen = new Set<number>();
    for (const d of this.#stored()) {
      if (seen.has(d.version) || d.version <= DEFAULT_ORCHESTRATOR_VERSION) continue;
      seen.add(d.version);
      const meta = parseMeta(d);
      out.push(
        this.#describe(d.version, d.content, d.doc_id, meta.proposal || meta.mission ? "mission" : "person"),
      );
    }
    out.push(this.#describe(DEFAULT_ORCHESTRATOR_VERSION, DEFAULT_ORCHESTRATOR, "builtin", "builtin"));
    return out;
  }

  #describe(
    version: number,
    code: string,
    source: string,
    origin: OrchestratorVersion["origin"],
  ): OrchestratorVersion {
    const f = this.#failures(version);
    return {
      origin,
      version,
      code,
      source,
      consecutive_failures: f?.consecutive ?? 0,
      total_failures: f?.total ?? 0,
      disabled_reason: version === DEFAULT_ORCHESTRATOR_VERSION ? null : (f?.disabled_reason ?? null),
      last_error: f?.last_error ?? null,
    };
  }

  /**
   * The version threads start with now: the highest one not disabled — skipping versions the
   * missions wrote unless `selfModify` (`threads.self_modify`) — with the reason it was chosen.
   */
  active(opts: { selfModify?: boolean } = {}): ActiveVersion {
    const skipped: number[] = [];
    for (const v of this.list()) {
      if (v.disabled_reason !== null) continue;
      if (v.origin === "mission" && !opts.selfModify) {
        skipped.push(v.version);
        continue;
      }
      const base =
        v.origin === "builtin"
          ? "the built-in orchestrator"
          : v.origin === "person"
            ? `the highest version saved (by a person)`
            : "the highest version, written by a learning mission (threads.self_modify is on)";
      const why = skipped.length
        ? `${base}; v${skipped.join(", v")} written by a learning mission skipped: threads.self_modify is off`
        : base;
      return { ...v, why };
    }
    return {
      ...this.#describe(DEFAULT_ORCHESTRATOR_VERSION, DEFAULT_ORCHESTRATOR, "builtin", "builtin"),
      why: "the built-in orchestrator",
    };
  }

  /** @throws RatchetError `not_found`. */
  get(version: number): OrchestratorVersion {
    const v = this.list().find((x) => x.version === version);
    if (!v)
      throw new RatchetError(ErrorCode.NotFound, `orchestrator version ${version} not found`, { version });
    return v;
  }

  /**
   * Stores a new version (the next number) after a syntax check.
   * @throws RatchetError `invalid_value` naming the syntax error.
   */
  save(code: string, vm: VmFactory, meta: Record<string, unknown> = {}): OrchestratorVersion {
    try {
      vm.check(code, "orchestrator.py");
    } catch (e) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `orchestrator code does not parse: ${(e as Error).message}`,
        {
          field: "code",
        },
      );
    }
    // The number, the document and the event in one transaction: two saves cannot take one number.
    const next = this.threads.tx(() => {
      const n = Math.max(DEFAULT_ORCHESTRATOR_VERSION, ...this.list().map((v) => v.version)) + 1;
      const doc = this.docs.insert({
        kind: DocKind.Orchestrator,
        title: ORCHESTRATOR_TITLE,
        tags: [ORCHESTRATOR_TAG],
        version: n,
        content: code,
        meta,
      });
      this.threads.store.appendEvent({
        entityKind: "orchestrator",
        entityId: String(n),
        type: ThreadEvent.OrchestratorSaved,
        payload: { version: n, doc_id: doc.doc_id, ...meta },
      });
      return n;
    });
    return this.get(next);
  }

  /** Records a run that ended without an orchestrator error. */
  recordSuccess(version: number): void {
    this.threads
      .sql(
        "UPDATE orchestrator_failures SET consecutive = 0, updated_at = ? WHERE version = ? AND disabled_at IS NULL",
      )
      .run(this.threads.now(), version);
  }

  /** Records an orchestrator failure; disables the version (with an event) at the limit. */
  recordFailure(version: number, error: string): { disabled: boolean; fallback?: number } {
    return this.threads.tx(() => {
      const now = this.threads.now();
      this.threads
        .sql(
          `INSERT INTO orchestrator_failures (version, consecutive, total, last_error, updated_at) VALUES (?, 1, 1, ?, ?)
           ON CONFLICT(version) DO UPDATE SET consecutive = orchestrator_failures.consecutive + 1, total = orchestrator_failures.total + 1, last_error = excluded.last_error, updated_at = excluded.updated_at`,
        )
        .run(version, error, now);
      const f = this.#failures(version)!;
      if (version === DEFAULT_ORCHESTRATOR_VERSION || f.disabled_at !== null) return { disabled: false };
      if (f.consecutive < ORCHESTRATOR_MAX_CONSECUTIVE_FAILURES) return { disabled: false };
      const reason = `${f.consecutive} consecutive failures; last: ${error}`;
      this.threads
        .sql("UPDATE orchestrator_failures SET disabled_at = ?, disabled_reason = ? WHERE version = ?")
        .run(now, reason, version);
      const fallback = this.active().version;
      this.threads.store.appendEvent({
        entityKind: "orchestrator",
        entityId: String(version),
        type: ThreadEvent.OrchestratorFallback,
        payload: { version, fallback, reason },
      });
      return { disabled: true, fallback };
    });
  }

  /**
   * Disables every version above `to` (reason given), so `to` becomes active.
   * @throws RatchetError `not_found` for an unknown version.
   */
  rollback(to: number, reason: string): OrchestratorVersion {
    this.get(to);
    this.threads.tx(() => {
      const now = this.threads.now();
      for (const v of this.list()) {
        if (v.version <= to || v.disabled_reason !== null) continue;
        this.threads
          .sql(
            `INSERT INTO orchestrator_failures (version, consecutive, total, last_error, disabled_at, disabled_reason, updated_at)
             VALUES (?, 0, 0, NULL, ?, ?, ?)
             ON CONFLICT(version) DO UPDATE SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason, updated_at = excluded.updated_at`,
          )
          .run(v.version, now, `rolled back: ${reason}`, now);
        this.threads.store.appendEvent({
          entityKind: "orchestrator",
          entityId: String(v.version),
          type: ThreadEvent.OrchestratorFallback,
          payload: { version: v.version, fallback: to, reason: `rolled back: ${reason}` },
        });
      }
      const t = this.#failures(to);
      if (t?.disabled_at)
        this.threads
          .sql(
            "UPDATE orchestrator_failures SET disabled_at = NULL, disabled_reason = NULL, consecutive = 0 WHERE version = ?",
          )
          .run(to);
    });
    return this.get(to);
  }
}
